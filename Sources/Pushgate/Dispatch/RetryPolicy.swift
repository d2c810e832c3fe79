import Synchronization

/// How deliveries are retried: bounded attempts, exponential backoff with jitter, `Retry-After`
/// honoured (capped), and a per-message deadline after which nothing is retried.
///
/// Only what the service says is transient is retried (``RetryAdvice``); permanent rejections
/// never are. Credential refreshes are retried once, immediately.
public struct RetryPolicy: Sendable, Hashable {
    /// Most attempts per device, the first included. Default 4.
    public var maximumAttempts: Int
    /// Delay before the first retry, in seconds. Default 0.2.
    public var initialBackoffSeconds: Double
    /// Longest delay between attempts, in seconds. Default 10.
    public var maximumBackoffSeconds: Double
    /// Growth of the delay per attempt. Default 2.
    public var multiplier: Double
    /// Random spread of each delay, as a fraction (0.2 = ±20%). Default 0.2.
    public var jitter: Double
    /// Longest `Retry-After` honoured; a longer one is not waited for (the device gets the
    /// service's answer). Default 30 s.
    public var maximumRetryAfterSeconds: Double
    /// Time allowed for all attempts of one message, in seconds. Default 60.
    public var deadlineSeconds: Double

    public init(
        maximumAttempts: Int = 4, initialBackoffSeconds: Double = 0.2, maximumBackoffSeconds: Double = 10, multiplier: Double = 2,
        jitter: Double = 0.2, maximumRetryAfterSeconds: Double = 30, deadlineSeconds: Double = 60
    ) {
        self.maximumAttempts = maximumAttempts
        self.initialBackoffSeconds = initialBackoffSeconds
        self.maximumBackoffSeconds = maximumBackoffSeconds
        self.multiplier = multiplier
        self.jitter = jitter
        self.maximumRetryAfterSeconds = maximumRetryAfterSeconds
        self.deadlineSeconds = deadlineSeconds
    }

    /// No retries at all.
    public static let none = RetryPolicy(maximumAttempts: 1)
}

/// The retry decisions for one delivery, as a plain value: feed it each verdict with the current
/// time; it answers what to do. No I/O, no clock of its own.
///
/// ```swift
/// var seeds = JitterSeeds()
/// var retries = RetryStateMachine(policy: .init(), startedAt: clock.now, seed: seeds.next())
/// switch retries.record(verdict, now: clock.now) {
/// case .retry(let delay): try await Task.sleep(for: .seconds(delay)); // send again
/// case .refreshCredentialsAndRetry: // refresh, send again
/// case .finish: // report verdict
/// }
/// ```
public struct RetryStateMachine: Sendable {
    public enum Action: Sendable, Hashable {
        /// Send again after this many seconds.
        case retry(afterSeconds: Double)
        /// Refresh the access token, then send again at once.
        case refreshCredentialsAndRetry
        /// Send again at once on a new connection.
        case retryOnNewConnection
        /// Stop; the verdict is final.
        case finish
    }

    public let policy: RetryPolicy
    public let deadline: Double
    /// Attempts made so far.
    public private(set) var attempts = 0
    private var refreshedCredentials = false
    private var triedNewConnection = false
    private var random: SplitMix64

    /// - Parameters:
    ///   - startedAt: when the first attempt starts (seconds, any epoch; the same clock as `now`).
    ///   - seed: seeds the jitter (tests pass a fixed seed; the default is random).
    public init(policy: RetryPolicy, startedAt: Double, seed: UInt64) {
        self.policy = policy
        self.deadline = startedAt + policy.deadlineSeconds
        self.random = SplitMix64(seed: seed)
    }

    /// Records the outcome of an attempt and decides what comes next.
    public mutating func record(_ verdict: DeliveryVerdict, now: Double) -> Action {
        attempts += 1
        switch verdict.retry {
        case .never:
            return .finish
        case .refreshCredentials:
            // One refresh per delivery: a second refusal is final (the credentials are wrong).
            guard !refreshedCredentials, attempts < policy.maximumAttempts, now < deadline else { return .finish }
            refreshedCredentials = true
            return .refreshCredentialsAndRetry
        case .newConnection:
            guard !triedNewConnection, attempts < policy.maximumAttempts, now < deadline else { return .finish }
            triedNewConnection = true
            return .retryOnNewConnection
        case .afterBackoff(let retryAfter):
            guard attempts < policy.maximumAttempts else { return .finish }
            if let retryAfter, retryAfter > policy.maximumRetryAfterSeconds { return .finish }
            // multiplier^(attempts - 1), by repeated multiplication (no Foundation in the domain).
            let growth = (1..<max(1, attempts)).reduce(1.0) { product, _ in product * policy.multiplier }
            var delay = min(policy.maximumBackoffSeconds, policy.initialBackoffSeconds * growth)
            let spread = (random.nextUnitInterval() * 2 - 1) * policy.jitter
            delay *= 1 + spread
            if let retryAfter { delay = max(delay, retryAfter) }
            guard now + delay < deadline else { return .finish }
            return .retry(afterSeconds: delay)
        }
    }
}

/// Seeds for the retry jitter of one delivery's targets: one system-random base per delivery (a
/// page, not a target: drawing each seed from the system generator cost a `getrandom` syscall per
/// target), then SplitMix64. A value the delivery owns, no state shared by the process.
public struct JitterSeeds: Sendable {
    private var mixer: SplitMix64

    public init() {
        var system = SystemRandomNumberGenerator()
        mixer = SplitMix64(seed: system.next())
    }

    public mutating func next() -> UInt64 { mixer.next() }
}

/// A small, fast, seedable random generator (for jitter).
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in [0, 1).
    mutating func nextUnitInterval() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// Parses a `Retry-After` value: delta-seconds, or an HTTP-date (IMF-fixdate) relative to `now`
/// (seconds since the Unix epoch). Nil when malformed.
public func parseRetryAfter(_ value: String?, now: Double) -> Double? {
    guard let value = value?.trimmed() else { return nil }
    if let seconds = Double(value) { return seconds.isFinite && seconds >= 0 ? seconds : nil }
    // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    let parts = value.split(separator: " ")
    guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]) else { return nil }
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    guard let monthIndex = months.firstIndex(of: String(parts[2])) else { return nil }
    let time = parts[4].split(separator: ":").compactMap { Int($0) }
    guard time.count == 3 else { return nil }
    let epoch = Double(daysFromCivil(year: year, month: monthIndex + 1, day: day)) * 86400 + Double(time[0] * 3600 + time[1] * 60 + time[2])
    return max(0, epoch - now)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146097 + dayOfEra - 719468
}
