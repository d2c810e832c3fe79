import Foundation
import Pushgate
import Synchronization

/// The outbox's settings and this instance's part in it: the owner name its leases carry, whether
/// it is draining (shutting down: no new page is claimed), and the signal that wakes the delivery
/// service when a notification is enqueued.
public final class OutboxControl: Sendable {
    public let configuration: OutboxConfiguration
    /// This process's name on leases: unique per start, so that a restarted instance takes over
    /// its own former work only once those leases expire or were released.
    public let owner: String
    public let signal = WakeSignal()

    public init(configuration: OutboxConfiguration) {
        self.configuration = configuration
        owner = "pushgate-" + UUID().uuidString.lowercased()
    }

    /// Whether sends go through the outbox (`outbox.enabled`): asked here, and only here.
    public var isEnabled: Bool { configuration.enabled }

    /// When draining began; nil while the gateway runs.
    private let drainingSince = Mutex<ContinuousClock.Instant?>(nil)

    public var isDraining: Bool { drainingSince.withLock { $0 != nil } }

    /// Stops claiming pages, here and in every send in flight.
    public func beginDraining() {
        drainingSince.withLock { $0 = $0 ?? .now }
        signal.signal()
    }

    /// What is left of a shutdown `deadline` counted from when draining began: the listener and
    /// the delivery service share one deadline, whichever stops first.
    public func remaining(of deadline: Duration) -> Duration {
        guard let since = drainingSince.withLock({ $0 }) else { return deadline }
        return max(.zero, deadline - (ContinuousClock.now - since))
    }

    /// Tells the delivery service that work may be due.
    public func wake() { signal.signal() }

    public func lease(from now: Timestamp) -> OutboxLease {
        OutboxLease(owner: owner, until: now.adding(seconds: Double(configuration.leaseSeconds)))
    }
}

/// The notifications this process is driving, so that a cancel can stop the pages already on
/// the wire (not only the pages not yet claimed).
public final class ActiveDrives: Sendable {
    public init() {}

    public final class Drive: Sendable {
        private let cancelled = Atomic<Bool>(false)
        private let round = Mutex<(@Sendable () -> Void)?>(nil)

        /// Whether a user cancelled it: targets abandoned by the cancellation count `Cancelled`.
        public var cancelledByUser: Bool { cancelled.load(ordering: .acquiring) }

        /// The round running now, by how to cancel it. A later round (after a cancel) is not
        /// cancelled: the pages it claims come marked cancelled by the store and are counted
        /// without being sent.
        public func running(cancel: @escaping @Sendable () -> Void) { round.withLock { $0 = cancel } }

        public func cancel() {
            cancelled.store(true, ordering: .releasing)
            round.withLock { $0 }?()
        }
    }

    private let drives = Mutex<[String: Drive]>([:])

    public func start(_ id: String) -> Drive {
        let drive = Drive()
        drives.withLock { $0[id] = drive }
        return drive
    }

    /// Forgets `drive` (not a later drive of the same notification).
    public func end(_ id: String, _ drive: Drive) {
        drives.withLock { drives in if drives[id] === drive { drives[id] = nil } }
    }

    /// Whether `id` is driven (or helped) here now.
    public func isActive(_ id: String) -> Bool { drives.withLock { $0[id] != nil } }

    /// Stops the pages of `id` in flight here, if it is driven here.
    public func cancel(_ id: String) { drives.withLock { $0[id] }?.cancel() }
}

/// Wakes one waiter (the delivery service's loop), or the next wait when nobody waits.
public final class WakeSignal: Sendable {
    public init() {}

    private struct State: Sendable {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns when signalled, or after `timeout`. One waiter at a time.
    public func wait(timeout: Duration) async {
        if state.withLock({ state in
            defer { state.pending = false }
            return state.pending
        }) {
            return
        }
        // Ends by itself after `timeout`, or is cancelled by this wait (below) when a signal came first.
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.signal()
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }
}
