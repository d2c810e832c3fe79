import Pushgate
import PushgateDispatch

/// What a feature adds to the outbox's loop without the driver naming it: whether a claimed
/// target's message is already superseded (not sent), rows written with a page's record, and
/// actions a recorded page's outcomes call for. The driver calls every hook the same way for
/// every platform; the defaults do nothing.
///
/// Retries inside a provider do not pass ``superseded(_:of:)`` again: a message superseded while
/// it is retried is still sent, which is accepted (a device keeps the newest by its own stamp).
public protocol OutboxHooks: Sendable {
    /// Whether the hooks have anything to do with `notification`: when not, its drive calls none
    /// of them and makes no report for them (every ordinary send's case).
    func concerns(_ notification: OutboxNotification) -> Bool
    /// When a page is claimed: the targets of `targets` whose message is superseded (a newer one
    /// was delivered already), with the verdict each is reported with. They are not sent.
    func superseded(_ targets: [DispatchTarget], of notification: OutboxNotification) async -> [RegistrationID: DeliveryVerdict]
    /// The rows to write with a page's record, in its transaction: they commit or fail with it.
    /// `outcomes`: each target's final report (retried targets are not among them).
    func rows(for outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) -> [OutboxRecordRow]
    /// After a page's record committed: what its outcomes call for. A failure here fails no
    /// delivery (the hook logs and counts its own).
    func recorded(_ outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) async
    /// The events the handle changes of `notification`'s answers become, written by the store in
    /// the changes' own transaction (``RegistrationStore/apply(_:app:now:events:)``). Asked of
    /// every notification, whatever ``concerns(_:)`` says.
    func handleChangeEvents(of notification: OutboxNotification) -> HandleChangeEvents
    /// The events `notification`'s end becomes, written by the store in the transaction that
    /// ends it (``OutboxQueue/finish(notificationID:app:owner:now:completion:)``). Asked of every
    /// notification, whatever ``concerns(_:)`` says.
    func completionEvents(of notification: OutboxNotification) -> CompletionEvents
}

extension OutboxHooks {
    public func concerns(_ notification: OutboxNotification) -> Bool { true }
    public func superseded(_ targets: [DispatchTarget], of notification: OutboxNotification) async -> [RegistrationID: DeliveryVerdict] {
        [:]
    }

    public func rows(for outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) -> [OutboxRecordRow] { [] }

    public func recorded(_ outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) async {}

    public func handleChangeEvents(of notification: OutboxNotification) -> HandleChangeEvents { .none }

    public func completionEvents(of notification: OutboxNotification) -> CompletionEvents { .none }
}

/// No hooks: the loop as it is.
public struct NoOutboxHooks: OutboxHooks {
    public init() {}
}

/// Several features' hooks, in order: a target any of them calls superseded is not sent (the
/// first verdict counts), every one's rows are written, each is told of every record.
public struct OutboxHookChain: OutboxHooks {
    public let hooks: [any OutboxHooks]

    public init(_ hooks: [any OutboxHooks]) { self.hooks = hooks }
    public func concerns(_ notification: OutboxNotification) -> Bool { hooks.contains { $0.concerns(notification) } }

    public func superseded(_ targets: [DispatchTarget], of notification: OutboxNotification) async -> [RegistrationID: DeliveryVerdict] {
        var verdicts: [RegistrationID: DeliveryVerdict] = [:]
        for hook in hooks {
            let remaining = targets.filter { verdicts[$0.registrationID] == nil }
            guard !remaining.isEmpty else { break }
            verdicts.merge(await hook.superseded(remaining, of: notification)) { first, _ in first }
        }
        return verdicts
    }

    public func rows(for outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) -> [OutboxRecordRow] {
        hooks.flatMap { $0.rows(for: outcomes, page: page, of: notification) }
    }

    public func recorded(_ outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) async {
        for hook in hooks { await hook.recorded(outcomes, page: page, of: notification) }
    }

    /// The first hook's that has any (one feature writes events).
    public func handleChangeEvents(of notification: OutboxNotification) -> HandleChangeEvents {
        hooks.lazy.map { $0.handleChangeEvents(of: notification) }.first { !$0.subscriptions.subscribers.isEmpty } ?? .none
    }

    /// The first hook's that has any (one feature writes events).
    public func completionEvents(of notification: OutboxNotification) -> CompletionEvents {
        hooks.lazy.map { $0.completionEvents(of: notification) }.first { !$0.subscriptions.subscribers.isEmpty } ?? .none
    }
}
