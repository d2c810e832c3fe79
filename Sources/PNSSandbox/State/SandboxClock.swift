import Foundation
import Synchronization

/// Where the sandbox reads the time: token ages, expiries and the 410 `timestamp`. Injected so
/// tests can move time forward.
public protocol SandboxClock: Sendable {
    /// Seconds since the Unix epoch.
    func now() -> Double
}

/// The system clock.
public struct SystemSandboxClock: SandboxClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
}

/// A clock that only moves when told to (tests).
public final class ManualSandboxClock: SandboxClock {
    private let current: Mutex<Double>

    public init(now: Double = 1_800_000_000) { current = Mutex(now) }

    public func now() -> Double { current.withLock { $0 } }

    public func advance(seconds: Double) { current.withLock { $0 += seconds } }
}
