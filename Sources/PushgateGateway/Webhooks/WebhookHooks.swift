import Logging
import Pushgate
import PushgateDispatch
import PushgateOutbox

/// What outcome webhooks add to the outbox's loop: a page's failed deliveries become
/// `delivery.failed` events written with the page's record (in its transaction), its handle
/// changes `registration.pruned` and `handle.updated` events written with the changes, and a
/// notification's end a `notification.completed` event. Only what the app's receivers asked for.
package struct WebhookHooks: OutboxHooks {
    /// The app's receivers as configured now (a reload changes them).
    let subscriptions: @Sendable () -> WebhookSubscriptions
    let rowLog: any OutboxRowLog
    let clock: any PushgateClock
    let logger: Logger

    package init(
        subscriptions: @escaping @Sendable () -> WebhookSubscriptions, rowLog: any OutboxRowLog, clock: any PushgateClock, logger: Logger
    ) {
        self.subscriptions = subscriptions
        self.rowLog = rowLog
        self.clock = clock
        self.logger = logger
    }

    /// Outcomes that are no delivery failure: the message went, or was not meant to go.
    static let notFailures: Set<Outcome> = [.success, .cancelled, .superseded]

    package func concerns(_ notification: OutboxNotification) -> Bool {
        let current = subscriptions()
        return current.wants(.deliveryFailed) || current.wants(.notificationCompleted)
    }

    package func rows(for outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) -> [OutboxRecordRow] {
        let current = subscriptions()
        guard current.wants(.deliveryFailed) else { return [] }
        let now = clock.now
        return outcomes.filter { !Self.notFailures.contains($0.verdict.outcome) }.flatMap { report in
            current.rows(
                for: .deliveryFailed(
                    target: report.target, verdict: report.verdict, attempts: report.attempts, notificationID: notification.id, now: now),
                sampleKey: notification.id + "/" + report.target.registrationID.rawValue)
        }
    }

    package func handleChangeEvents(of notification: OutboxNotification) -> HandleChangeEvents {
        HandleChangeEvents(subscriptions: subscriptions(), notificationID: notification.id)
    }

    /// Written in a transaction of its own right after the finish: a crash between the two loses
    /// this one event (the notification's record still has its state and counts).
    package func finished(_ record: NotificationRecord, of notification: OutboxNotification) async {
        let current = subscriptions()
        guard current.wants(.notificationCompleted) else { return }
        let rows = current.rows(for: .notificationCompleted(record, now: clock.now))
        do {
            try await rowLog.appendRows(rows, notificationID: notification.id, page: 0, app: notification.app)
        } catch {
            logger.error(
                "webhooks: could not store a notification.completed event",
                metadata: ["notification": "\(notification.id)", "error": "\(error)"])
        }
    }
}
