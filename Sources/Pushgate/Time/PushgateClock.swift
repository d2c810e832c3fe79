import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The one clock of Pushgate: Swift's `Clock` whose instants are wall-clock ``Timestamp``s (token
/// ages and expiries are compared with times other machines wrote). Everything that expires,
/// backs off or refreshes takes one — the dispatch providers and token managers, the sandbox, the
/// gateway and its authenticator — so tests can move time with ``ManualClock``.
///
/// ```swift
/// let clock: any PushgateClock = SystemClock()
/// let expires = clock.now.advanced(by: .seconds(3600))
/// try await clock.sleep(for: .milliseconds(200))
/// ```
public protocol PushgateClock: Clock where Instant == Timestamp, Duration == Swift.Duration {}

/// The system's real-time clock (`CLOCK_REALTIME`).
public struct SystemClock: PushgateClock {
    public init() {}

    public var now: Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(secondsSinceEpoch: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Timestamp, tolerance: Duration? = nil) async throws {
        let remaining = now.duration(to: deadline)
        if remaining > .zero { try await Task.sleep(for: remaining, tolerance: tolerance, clock: .continuous) }
    }
}

/// A clock that moves only when told to: ``advance(by:)``, or a `sleep`, which returns at once
/// (unless the task is cancelled) having moved the clock to its deadline. For tests.
public final class ManualClock: PushgateClock {
    private let current: Mutex<Timestamp>
    private let sleeps = Mutex<[Double]>([])

    public init(now: Timestamp = SystemClock().now) { current = Mutex(now) }

    public convenience init(secondsSinceEpoch: Double) { self.init(now: Timestamp(secondsSinceEpoch: secondsSinceEpoch)) }

    public var now: Timestamp { current.withLock { $0 } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public func advance(by duration: Duration) { current.withLock { $0 = $0.advanced(by: duration) } }

    public func advance(seconds: Double) { advance(by: .seconds(seconds)) }

    public func sleep(until deadline: Timestamp, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let waited = current.withLock { time -> Double in
            let seconds = max(0, deadline.secondsSinceEpoch - time.secondsSinceEpoch)
            if deadline > time { time = deadline }
            return seconds
        }
        sleeps.withLock { $0.append(waited) }
    }

    /// Every wait requested so far, in seconds, in order.
    public var requestedSleeps: [Double] { sleeps.withLock { $0 } }
}

extension Timestamp: InstantProtocol {
    public func advanced(by duration: Duration) -> Timestamp { adding(seconds: duration.seconds) }

    public func duration(to other: Timestamp) -> Duration { .seconds(other.secondsSinceEpoch - secondsSinceEpoch) }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
