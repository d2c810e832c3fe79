import Synchronization

/// A database store's health, as `/healthz` and the store's own calls read it: the database is
/// probed (one query) at most once per ``Configuration/interval`` however often it is asked, and
/// at once after a store call failed for want of it; every caller in between gets the last finding.
///
/// It has no task of its own: a probe runs when a caller finds the last finding stale, one at a
/// time, shared by every caller that comes while it runs. So there is nothing to start or stop
/// with the service group, a store nobody asks costs the database nothing, and time is the
/// injected clock's (a test moves a ``ManualClock`` to make a finding stale).
///
/// ```swift
/// let health = HealthMonitor(clock: SystemClock()) { await database.ping() }
/// if let reason = await health.status() { print("down: \(reason)") }
/// health.reportFailure()  // a query failed: the next status waits for a new probe
/// ```
public final class HealthMonitor: Sendable {
    /// How long a finding is reused.
    public struct Configuration: Sendable, Hashable {
        /// A healthy finding: 5 s by default (a load balancer's usual check interval).
        public var interval: Duration
        /// A failed finding, while the store refuses its calls at once: 1 s by default.
        public var retryInterval: Duration

        public init(interval: Duration = .seconds(5), retryInterval: Duration = .seconds(1)) {
            self.interval = interval
            self.retryInterval = retryInterval
        }
    }

    private struct State {
        var machine: StateMachine
        /// The probe running now, for the callers that wait for it.
        var running: Task<Finding, Never>?
    }

    private let clock: any PushgateClock
    private let probe: @Sendable () async -> String?
    private let state: Mutex<State>

    /// `probe` asks the database once: nil when it answers, otherwise why it does not. It must
    /// end on its own (a deadline of its own when the database may hang).
    public init(
        clock: any PushgateClock, configuration: Configuration = Configuration(), probe: @escaping @Sendable () async -> String?
    ) {
        self.clock = clock
        self.probe = probe
        state = Mutex(State(machine: StateMachine(configuration: configuration)))
    }

    /// nil while the database answers; otherwise why it does not. From the last finding while
    /// it is fresh, else from a new probe (or the one running).
    public func status() async -> String? {
        let now = clock.now
        return await settle { $0.status(now: now) }.reason
    }

    /// For a store's calls: nil unless the last probe found the database down (without waiting
    /// for a probe while it was found answering); then why, probing again once that finding is
    /// `retryInterval` old.
    public func unavailability() async -> String? {
        let now = clock.now
        return await settle { $0.unavailability(now: now) }.reason
    }

    /// A store call failed for want of the database: probes at once (the next ``status()`` waits
    /// for that probe rather than answer the finding from before the failure).
    public func reportFailure() {
        state.withLock { state in
            if state.machine.failureReported() { start(&state) }
        }
    }

    private enum Next {
        case answered(Finding)
        case waiting(Task<Finding, Never>)
    }

    private func settle(_ decide: (inout StateMachine) -> StateMachine.Action) async -> Finding {
        let next = state.withLock { state -> Next in
            switch decide(&state.machine) {
            case .answer(let finding): .answered(finding)
            case .probe: .waiting(start(&state))
            case .join: state.running.map(Next.waiting) ?? .answered(state.machine.last?.finding ?? .healthy)
            }
        }
        switch next {
        case .answered(let finding): return finding
        case .waiting(let probe): return await probe.value
        }
    }

    /// Starts a probe (the machine has recorded it as running); called with the state locked.
    @discardableResult
    private func start(_ state: inout State) -> Task<Finding, Never> {
        // Shared by every caller waiting for this probe, so no one caller's child. It ends when the
        // probe returns, which must end on its own (``init(clock:configuration:probe:)``).
        let task = Task {
            let finding = await self.probe().map(Finding.unavailable) ?? .healthy
            self.finished(finding)
            return finding
        }
        state.running = task
        return task
    }

    private func finished(_ finding: Finding) {
        let now = clock.now
        state.withLock { state in
            state.running = nil
            if state.machine.probeFinished(finding, now: now) { start(&state) }
        }
    }
}
