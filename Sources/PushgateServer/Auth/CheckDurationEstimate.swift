/// How long a password check takes on this machine, per PBKDF2 iteration: a moving average of the
/// checks measured on the ``PasswordCheckPool``'s threads, as a value.
///
/// The ``Authenticator`` makes an unknown user name wait as long as a check at the largest
/// configured iteration count would take, instead of spending one: ``seconds(iterations:)``.
struct CheckDurationEstimate: Sendable, Equatable {
    /// The weight of each new measurement in the average.
    static let weight = 0.2
    /// A check measured longer than this (a suspended machine, a clock stepped forward) is not taken.
    static let longestSample = 10.0

    /// Seconds per iteration; nil before the first measurement.
    private(set) var secondsPerIteration: Double?

    /// Takes a check of `iterations` that took `seconds` to run.
    mutating func record(seconds: Double, iterations: Int) {
        guard iterations > 0, seconds.isFinite, seconds >= 0, seconds <= Self.longestSample else { return }
        let sample = seconds / Double(iterations)
        secondsPerIteration = secondsPerIteration.map { $0 + Self.weight * (sample - $0) } ?? sample
    }

    /// How long a check of `iterations` takes, as measured so far; nil before any measurement.
    func seconds(iterations: Int) -> Double? { secondsPerIteration.map { $0 * Double(iterations) } }
}
