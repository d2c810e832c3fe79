/// What an app's receivers asked for, as the writers of events see it (no URL, no secret): which
/// rows an event becomes, one per receiver that wants its kind, stored under the receiver's
/// ``rowKind(receiver:)``.
public struct WebhookSubscriptions: Sendable, Hashable {
    public struct Subscriber: Sendable, Hashable {
        public var name: String
        public var events: Set<WebhookEventType>
        public var fullHandles: Bool
        public var deliveryFailedSampleRate: Double

        public init(name: String, events: Set<WebhookEventType>, fullHandles: Bool = false, deliveryFailedSampleRate: Double = 1) {
            self.name = name
            self.events = events
            self.fullHandles = fullHandles
            self.deliveryFailedSampleRate = deliveryFailedSampleRate
        }

        public init(_ receiver: WebhookReceiverConfiguration) {
            self.init(
                name: receiver.name, events: receiver.events, fullHandles: receiver.fullHandles,
                deliveryFailedSampleRate: receiver.deliveryFailedSampleRate)
        }
    }

    public var subscribers: [Subscriber]

    public init(_ subscribers: [Subscriber]) { self.subscribers = subscribers }

    public init(receivers: [WebhookReceiverConfiguration]) { self.init(receivers.map(Subscriber.init)) }

    /// Nobody listens: no event is made.
    public static let none = WebhookSubscriptions([])

    /// The outbox row kind a receiver's events are stored under.
    public static func rowKind(receiver: String) -> String { rowKindPrefix + receiver }
    /// Every webhook row kind starts with it.
    public static let rowKindPrefix = "webhook:"

    /// Whether any receiver wants events of `type`.
    public func wants(_ type: WebhookEventType) -> Bool { subscribers.contains { $0.events.contains(type) } }

    /// The rows `event` becomes: one per receiver that wants its kind (a `delivery.failed` only
    /// when its target is in the receiver's sample).
    public func rows(for event: WebhookEvent, sampleKey: String? = nil) -> [OutboxRecordRow] {
        subscribers.compactMap { subscriber in
            guard event.type == .ping || subscriber.events.contains(event.type) else { return nil }
            if event.type == .deliveryFailed, let sampleKey, !Self.sampled(sampleKey, rate: subscriber.deliveryFailedSampleRate) {
                return nil
            }
            return OutboxRecordRow(kind: Self.rowKind(receiver: subscriber.name), body: event.body(fullHandles: subscriber.fullHandles))
        }
    }

    /// Whether `key` falls in a sample of `rate` (0…1): decided by the key's FNV-1a hash, so the
    /// same key is in or out every time.
    public static func sampled(_ key: String, rate: Double) -> Bool {
        if rate >= 1 { return true }
        if rate <= 0 { return false }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return Double(hash % 1_000_000) < rate * 1_000_000
    }
}

/// The handle changes of one notification's send, as a store applies them: the events a removal
/// or a replaced handle becomes, written in the change's own transaction.
public struct HandleChangeEvents: Sendable, Hashable {
    public var subscriptions: WebhookSubscriptions
    /// The notification whose answers asked for the changes.
    public var notificationID: String

    public init(subscriptions: WebhookSubscriptions, notificationID: String) {
        self.subscriptions = subscriptions
        self.notificationID = notificationID
    }

    public static let none = HandleChangeEvents(subscriptions: .none, notificationID: "")

    /// The rows to write with `change` applied to `registration` (as it was before).
    public func rows(for change: StoredHandleChange, of registration: Registration, now: Timestamp) -> [OutboxRecordRow] {
        guard !subscriptions.subscribers.isEmpty else { return [] }
        let event: WebhookEvent
        switch change.change {
        case .remove:
            guard subscriptions.wants(.registrationPruned) else { return [] }
            event = .registrationPruned(
                registration, outcome: change.outcome, reason: change.reason, notificationID: notificationID, now: now)
        case .replace(let handle):
            guard subscriptions.wants(.handleUpdated) else { return [] }
            event = .handleUpdated(
                registration, handle: DeviceHandle(uncheckedPlatform: registration.platform, value: handle), notificationID: notificationID,
                now: now)
        }
        return subscriptions.rows(for: event)
    }
}

/// The events a notification's end becomes (`notification.completed`), written by the store in
/// the transaction that ends it (``OutboxQueue/finish(notificationID:app:owner:now:completion:)``).
public struct CompletionEvents: Sendable, Hashable {
    public var subscriptions: WebhookSubscriptions

    public init(subscriptions: WebhookSubscriptions) { self.subscriptions = subscriptions }

    public static let none = CompletionEvents(subscriptions: .none)

    /// The rows to write with `record`'s end (its final state and counts).
    public func rows(for record: NotificationRecord, now: Timestamp) -> [OutboxRecordRow] {
        guard subscriptions.wants(.notificationCompleted) else { return [] }
        return subscriptions.rows(for: .notificationCompleted(record, now: now))
    }
}
