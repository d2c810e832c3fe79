import Pushgate
import Synchronization

/// A clock whose sleeps wait until the test steps it (``step()``): a timer's ticks happen exactly
/// when the test says, and ``sleepers`` tells whether the timer is running (asleep on it) or has
/// stopped. No real time passes.
public final class SteppedClock: PushgateClock {
    private struct State {
        var now: Timestamp
        var sleepers: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(now: Timestamp = Timestamp(secondsSinceEpoch: 1_800_000_000)) { state = Mutex(State(now: now)) }

    public var now: Timestamp { state.withLock { $0.now } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Sleeps until the next ``step()`` whatever the deadline (a step is one tick of any timer).
    public func sleep(until deadline: Timestamp, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        await withCheckedContinuation { continuation in state.withLock { $0.sleepers.append(continuation) } }
    }

    /// How many sleeps are waiting for a step.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Wakes every sleep waiting now.
    public func step() {
        let woken = state.withLock { state in
            defer { state.sleepers = [] }
            return state.sleepers
        }
        for sleeper in woken { sleeper.resume() }
    }
}
