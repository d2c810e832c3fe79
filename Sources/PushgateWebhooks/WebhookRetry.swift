import Pushgate

/// When a failed POST's events are tried again, or that they are parked: a value that takes time
/// as input (no clock inside).
public struct WebhookRetry: Sendable, Hashable {
    /// How long events are retried after their first failure.
    public var retryForSeconds: Double
    /// The first backoff; each failure doubles it, up to ``maximumBackoffSeconds``.
    public var initialBackoffSeconds: Double
    public var maximumBackoffSeconds: Double

    public init(retryForSeconds: Double, initialBackoffSeconds: Double = 1, maximumBackoffSeconds: Double = 3600) {
        self.retryForSeconds = retryForSeconds
        self.initialBackoffSeconds = initialBackoffSeconds
        self.maximumBackoffSeconds = maximumBackoffSeconds
    }

    /// After a failed POST of events that had failed `attempts` times before (the first failure
    /// at `firstFailedAt`, nil when this is it): when to try again, or nil to park them.
    /// `retryAfter` (the receiver's `Retry-After`, in seconds) is honoured when it is later than
    /// the backoff, unless it is past the retry time.
    public func next(attempts: Int, firstFailedAt: Timestamp?, now: Timestamp, retryAfter: Double?) -> Timestamp? {
        let first = firstFailedAt ?? now
        let deadline = first.adding(seconds: retryForSeconds)
        guard now < deadline else { return nil }
        let backoff = min(maximumBackoffSeconds, initialBackoffSeconds * Double(1 << min(attempts, 30)))
        let delay = max(backoff, retryAfter ?? 0)
        let due = now.adding(seconds: delay)
        if due <= deadline { return due }
        // One last try at the deadline, unless the receiver asked to wait past it.
        if let retryAfter, now.adding(seconds: retryAfter) > deadline { return nil }
        return deadline
    }
}
