import Pushgate
import PushgateDispatch
import PushgateOutbox

/// What outcome webhooks add to the outbox's loop: a page's failed deliveries become
/// `delivery.failed` events written with the page's record (in its transaction), its handle
/// changes `registration.pruned` and `handle.updated` events written with the changes, and a
/// notification's end a `notification.completed` event written with the end. Only what the app's
/// receivers asked for.
package struct WebhookHooks: OutboxHooks {
    /// The app's receivers as configured now (a reload changes them).
    let subscriptions: @Sendable () -> WebhookSubscriptions
    let clock: any PushgateClock

    package init(subscriptions: @escaping @Sendable () -> WebhookSubscriptions, clock: any PushgateClock) {
        self.subscriptions = subscriptions
        self.clock = clock
    }

    /// Outcomes that are no delivery failure: the message went, or was not meant to go.
    static let notFailures: Set<Outcome> = [.success, .cancelled, .superseded]

    /// Only when failed deliveries are wanted: the other events come through the store's writes.
    package func concerns(_ notification: OutboxNotification) -> Bool { subscriptions().wants(.deliveryFailed) }

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

    package func completionEvents(of notification: OutboxNotification) -> CompletionEvents {
        CompletionEvents(subscriptions: subscriptions())
    }
}
