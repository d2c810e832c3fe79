/// How often each key may act, as a value: a token bucket per key that refills at `ratePerSecond`
/// up to `burst` tokens, each action taking one.
///
/// - A key that has not acted starts with a full bucket: a burst of `burst` actions, then the steady rate.
/// - The table holds at most `capacity` keys: when full, buckets that have refilled (they hold
///   nothing a fresh one would not) are dropped, and then the least recently used half, so that
///   keys a caller makes up keep memory flat.
public struct TokenBuckets: Sendable {
    /// What to do with an action.
    public enum Decision: Equatable, Sendable {
        case proceed
        /// Refused: a token is back after this many seconds (at least 1).
        case wait(seconds: Int)
    }

    struct Bucket: Sendable {
        var tokens: Double
        var updated: Double
    }

    public let ratePerSecond: Double
    public let burst: Double
    public let capacity: Int
    private(set) var buckets: [String: Bucket] = [:]

    public init(ratePerSecond: Double, burst: Double, capacity: Int = 10_000) {
        precondition(ratePerSecond > 0 && burst >= 1, "a bucket refills and holds at least one token")
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.capacity = max(2, capacity)
    }

    /// The keys remembered now.
    public var count: Int { buckets.count }

    /// Takes a token of `key` at `now` (seconds on any monotonic scale), or says how long to wait.
    public mutating func take(_ key: String, now: Double) -> Decision {
        var bucket = buckets[key].map { refilled($0, now: now) } ?? Bucket(tokens: burst, updated: now)
        guard bucket.tokens >= 1 else {
            buckets[key] = bucket
            return .wait(seconds: max(1, Int(((1 - bucket.tokens) / ratePerSecond).rounded(.up))))
        }
        bucket.tokens -= 1
        if buckets[key] == nil, buckets.count >= capacity { evict(now: now) }
        buckets[key] = bucket
        return .proceed
    }

    private func refilled(_ bucket: Bucket, now: Double) -> Bucket {
        let elapsed = max(0, now - bucket.updated)
        return Bucket(tokens: min(burst, bucket.tokens + elapsed * ratePerSecond), updated: max(now, bucket.updated))
    }

    private mutating func evict(now: Double) {
        buckets = buckets.filter { refilled($0.value, now: now).tokens < burst }
        guard buckets.count >= capacity else { return }
        let newest = buckets.sorted { $0.value.updated > $1.value.updated }.prefix(capacity / 2)
        buckets = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }
}
