extension HealthMonitor {
    /// What the last probe found, and whether the database is answering.
    public enum Finding: Sendable, Hashable {
        case healthy
        /// Why the database does not answer.
        case unavailable(String)

        /// nil while healthy; otherwise why not.
        public var reason: String? {
            switch self {
            case .healthy: nil
            case .unavailable(let reason): reason
            }
        }
    }

    /// The monitor's decisions as a value: each call takes the time and returns what to do;
    /// ``HealthMonitor`` runs the probes it asks for. At most one probe runs at a time, and a
    /// finding is reused until it is older than its interval (``HealthMonitor/Configuration``).
    package struct StateMachine: Sendable {
        package enum Action: Sendable, Hashable {
            /// The last finding stands.
            case answer(Finding)
            /// Start a probe and wait for it.
            case probe
            /// A probe is running: wait for it.
            case join
        }

        package let configuration: Configuration
        package private(set) var last: (finding: Finding, at: Timestamp)?
        package private(set) var probing = false
        /// A store call failed while a probe ran: if that probe finds the database answering,
        /// another one follows at once (it may have started before the failure).
        private var failedDuringProbe = false

        package init(configuration: Configuration) { self.configuration = configuration }

        /// For `/healthz`: the last finding while it is fresh, else a probe (one for all callers).
        package mutating func status(now: Timestamp) -> Action {
            if probing { return .join }
            if let last, now < last.at.advanced(by: freshness(of: last.finding)) { return .answer(last.finding) }
            probing = true
            return .probe
        }

        /// For a store call, which must not wait on a probe while the database answers: healthy
        /// (even stale, or never probed) answers at once; found down, the reason at once while a
        /// probe runs or the finding is fresh, and a probe once it is due (so that a call after
        /// the database came back is not refused for want of a probe).
        package mutating func unavailability(now: Timestamp) -> Action {
            guard let last, case .unavailable = last.finding else { return .answer(.healthy) }
            if probing || now < last.at.advanced(by: configuration.retryInterval) { return .answer(last.finding) }
            probing = true
            return .probe
        }

        /// A store call failed for want of the database: true when a probe must start now (none
        /// is running; a running one is followed by another if it finds the database answering).
        package mutating func failureReported() -> Bool {
            if probing {
                failedDuringProbe = true
                return false
            }
            probing = true
            return true
        }

        /// Records a probe's finding; true when another probe must start at once.
        package mutating func probeFinished(_ finding: Finding, now: Timestamp) -> Bool {
            last = (finding, now)
            let again = failedDuringProbe && finding == .healthy
            failedDuringProbe = false
            probing = again
            return again
        }

        /// How long a finding stands: a healthy one `interval`, a failed one `retryInterval`.
        package func freshness(of finding: Finding) -> Duration {
            finding == .healthy ? configuration.interval : configuration.retryInterval
        }
    }
}
