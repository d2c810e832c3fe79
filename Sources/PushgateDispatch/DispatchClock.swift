import Foundation
import Synchronization

/// Where dispatch reads the time and waits: token ages, backoff. Injected so tests control time.
public protocol DispatchClock: Sendable {
    /// Seconds since the Unix epoch.
    func now() -> Double
    /// Waits `seconds` (cancellable).
    func sleep(seconds: Double) async throws
}

/// The real clock.
public struct SystemDispatchClock: DispatchClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
    public func sleep(seconds: Double) async throws { try await Task.sleep(for: .milliseconds(Int64(seconds * 1000))) }
}

/// A clock that moves only when told to; `sleep` advances it instantly (tests).
public final class ManualDispatchClock: DispatchClock {
    private let current: Mutex<Double>
    private let sleeps = Mutex<[Double]>([])

    public init(now: Double = Date().timeIntervalSince1970) { current = Mutex(now) }

    public func now() -> Double { current.withLock { $0 } }

    public func advance(seconds: Double) { current.withLock { $0 += seconds } }

    public func sleep(seconds: Double) async throws {
        sleeps.withLock { $0.append(seconds) }
        advance(seconds: seconds)
    }

    /// Every wait requested so far, in order.
    public var requestedSleeps: [Double] { sleeps.withLock { $0 } }
}
