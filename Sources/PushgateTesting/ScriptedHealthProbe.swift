import Synchronization

/// A database's health probe for a ``Pushgate/HealthMonitor`` under test: answers as scripted
/// (nil: the database answers) and counts its calls; held, each probe waits until released.
///
/// ```swift
/// let probe = ScriptedHealthProbe()
/// let health = HealthMonitor(clock: clock, probe: probe.probe)
/// probe.answer("connection refused")
/// ```
public final class ScriptedHealthProbe: Sendable {
    private struct State {
        var answers: [String?]
        var calls = 0
        var held: Bool
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    public init(_ answers: [String?] = [], held: Bool = false) { state = Mutex(State(answers: answers, held: held)) }

    /// Probes made (counted as each one answers).
    public var calls: Int { state.withLock { $0.calls } }

    /// The answers of the next probes, in order; the last one repeats.
    public func answer(_ answers: String?...) { state.withLock { $0.answers = answers } }

    /// Lets every held probe, and every later one, answer.
    public func release() {
        let waiting = state.withLock { state in
            state.held = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    public func probe() async -> String? {
        await withCheckedContinuation { continuation in
            let held = state.withLock { state in
                if state.held { state.waiting.append(continuation) }
                return state.held
            }
            if !held { continuation.resume() }
        }
        return state.withLock { state in
            state.calls += 1
            return state.answers.count > 1 ? state.answers.removeFirst() : state.answers.first ?? nil
        }
    }
}
