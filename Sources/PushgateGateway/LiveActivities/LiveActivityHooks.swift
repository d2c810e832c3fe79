import Logging
import Pushgate
import PushgateDispatch
import PushgateOutbox

/// What Live Activities add to the outbox's loop, through its two hooks (the driver names no
/// activity): an `update` or `end` whose page is claimed after a newer stamp of its activity is
/// superseded (not sent: the device keeps the newest anyway), and an `end`, once a page of it is
/// recorded, retires the update tokens that page reached (they die with the activity; tokens on
/// pages still to come are retired with theirs).
package struct LiveActivityHooks: OutboxHooks {
    let store: any LiveActivityStore
    let logger: Logger

    package init(store: any LiveActivityStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Only an activity's `update` and `end` (its update tokens): no ordinary send is touched.
    package func concerns(_ notification: OutboxNotification) -> Bool {
        guard case .tokens(let selector) = notification.audience, case .liveActivity? = selector.kind else { return false }
        return true
    }

    /// The activity and stamp of a stored send, when it is a Live Activity's `update` or `end`.
    static func activity(of notification: OutboxNotification) -> (key: LiveActivityKey, stamp: Int64, event: LiveActivityEvent)? {
        guard case .tokens(let selector) = notification.audience, case .liveActivity(let name)? = selector.kind,
            let owner = selector.owner, let payload = notification.payloads[.apns],
            let (stamp, event) = LiveActivityMessage.stamp(of: payload.body)
        else { return nil }
        return (LiveActivityKey(app: notification.app, owner: owner, name: name), stamp, event)
    }

    package func superseded(_ targets: [DispatchTarget], of notification: OutboxNotification) async -> [RegistrationID: DeliveryVerdict] {
        guard let (key, stamp, _) = Self.activity(of: notification) else { return [:] }
        let newest: Int64
        do {
            guard let record = try await store.activity(key) else { return [:] }
            newest = record.stamp
        } catch {
            // Unknown: sent (the device keeps the newest by its own stamp).
            logger.warning("live activity: cannot read \(key)'s newest stamp; sending", metadata: ["error": "\(error)"])
            return [:]
        }
        guard newest > stamp else { return [:] }
        let verdict = DeliveryVerdict(
            outcome: .superseded, reason: "activity \(key.name) was stamped \(newest) after this \(notification.id)'s \(stamp)")
        return Dictionary(uniqueKeysWithValues: targets.map { ($0.registrationID, verdict) })
    }

    package func recorded(_ outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) async {
        guard let (key, stamp, event) = Self.activity(of: notification), event == .end else { return }
        do {
            // Not when the name was started again since (a newer stamp): its tokens are the new activity's.
            if let record = try await store.activity(key), record.stamp > stamp { return }
            let retired = try await store.retireTokens(of: key, ids: outcomes.map(\.target.registrationID))
            logger.debug("live activity ended: update tokens retired", metadata: ["activity": "\(key)", "tokens": "\(retired)"])
        } catch {
            // They expire with the activity's lifetime (8 h + 4 h) anyway.
            logger.warning("live activity: cannot retire \(key)'s update tokens", metadata: ["error": "\(error)"])
        }
    }
}
