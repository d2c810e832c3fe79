/// One outcome webhook event, before it is stored: what happened, with a stable id made once.
///
/// Stored as its JSON body (``body(fullHandles:)``) in a row written with the outcome that
/// caused it; the poster adds the store's `sequence` when it posts it:
///
/// ```json
/// {"sequence": 42, "id": "evt_0193…", "type": "registration.pruned", "created": 1795939200,
///  "notification": "0193…", "data": {"registration": "…", "owner": "alice", "platform": "apns", …}}
/// ```
public struct WebhookEvent: Sendable, Hashable {
    /// `evt_` and a time-ordered UUID: the same on every post of the event (a receiver drops repeats by it).
    public var id: String
    public var type: WebhookEventType
    public var created: Timestamp
    /// The notification whose outcome caused it (none for `ping`).
    public var notificationID: String?
    /// `data`'s members, handles aside.
    public var data: [JSONMember]
    /// Handles in `data` (`handle`, `previousHandle`): masked unless a receiver asks for them whole.
    public var handles: [(key: String, handle: DeviceHandle)]

    public init(
        type: WebhookEventType, created: Timestamp, notificationID: String?, data: [JSONMember],
        handles: [(key: String, handle: DeviceHandle)] = [], id: String? = nil
    ) {
        self.id = id ?? "evt_" + TimeOrderedID.make(at: created)
        self.type = type
        self.created = created
        self.notificationID = notificationID
        self.data = data
        self.handles = handles
    }

    public static func == (lhs: WebhookEvent, rhs: WebhookEvent) -> Bool {
        lhs.id == rhs.id && lhs.type == rhs.type && lhs.created == rhs.created && lhs.notificationID == rhs.notificationID
            && lhs.data == rhs.data && lhs.handles.map(\.key) == rhs.handles.map(\.key)
            && lhs.handles.map(\.handle) == rhs.handles.map(\.handle)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The event as JSON text, handles whole or masked; at most ``OutboxRecordRow/maximumBodyBytes``
    /// (a row the store would refuse would fail the outcome's record with it): past that, strings
    /// in `data` are cut to 256 bytes and arrays to their first 10 elements (`"truncated": true`).
    public func body(fullHandles: Bool) -> String {
        let whole = body(fullHandles: fullHandles, data: data)
        guard whole.utf8.count > OutboxRecordRow.maximumBodyBytes else { return whole }
        return body(
            fullHandles: fullHandles,
            data: data.map { JSONMember(key: $0.key, value: $0.value.shortened) } + [
                .init(key: "truncated", value: JSONValue(.bool(true)))
            ])
    }

    private func body(fullHandles: Bool, data: [JSONMember]) -> String {
        var members: [JSONMember] = [
            .init(key: "id", value: .string(id)),
            .init(key: "type", value: .string(type.rawValue)),
            .init(key: "created", value: .number(String(Int64(created.secondsSinceEpoch.rounded(.down))))),
        ]
        if let notificationID { members.append(.init(key: "notification", value: .string(notificationID))) }
        let handleMembers = handles.map { JSONMember(key: $0.key, value: .string(fullHandles ? $0.handle.value : $0.handle.masked)) }
        members.append(.init(key: "data", value: JSONValue(.object(data + handleMembers))))
        return String(decoding: JSONValue(.object(members)).serialized(), as: UTF8.self)
    }

    /// The body as it is posted: `sequence` (the store's order of events) first, then the stored body.
    public static func posted(body: String, sequence: Int64) -> String {
        guard body.hasPrefix("{") else { return body }
        return "{\"sequence\":\(sequence)," + body.dropFirst()
    }
}

extension WebhookEvent {
    /// `registration.pruned`: a service said `registration`'s handle is gone; it was removed.
    public static func registrationPruned(
        _ registration: Registration, outcome: Outcome, reason: String?, notificationID: String?, now: Timestamp
    ) -> WebhookEvent {
        WebhookEvent(
            type: .registrationPruned, created: now, notificationID: notificationID,
            data: registrationMembers(registration) + [
                .init(key: "outcome", value: .string(outcome.rawValue)), .init(key: "reason", value: reason.map(JSONValue.string) ?? .null),
            ], handles: [("handle", registration.handle)])
    }

    /// `handle.updated`: a service answered with `handle` for `registration` (a canonical id).
    public static func handleUpdated(
        _ registration: Registration, handle: DeviceHandle, notificationID: String?, now: Timestamp
    ) -> WebhookEvent {
        WebhookEvent(
            type: .handleUpdated, created: now, notificationID: notificationID, data: registrationMembers(registration),
            handles: [("handle", handle), ("previousHandle", registration.handle)])
    }

    /// `delivery.failed`: one target's final answer was not a success.
    public static func deliveryFailed(
        target: DispatchTarget, verdict: DeliveryVerdict, attempts: Int, notificationID: String, now: Timestamp
    ) -> WebhookEvent {
        WebhookEvent(
            type: .deliveryFailed, created: now, notificationID: notificationID,
            data: [
                .init(key: "registration", value: .string(target.registrationID.rawValue)),
                .init(key: "platform", value: .string(target.handle.platform.rawValue)),
                .init(key: "outcome", value: .string(verdict.outcome.rawValue)),
                .init(key: "reason", value: verdict.reason.map(JSONValue.string) ?? .null),
                .init(key: "statusCode", value: verdict.statusCode.map { JSONValue.number(String($0)) } ?? .null),
                .init(key: "attempts", value: .number(String(attempts))),
            ], handles: [("handle", target.handle)])
    }

    /// `notification.completed`: `record` ended; its state and counts per platform and outcome.
    public static func notificationCompleted(_ record: NotificationRecord, now: Timestamp) -> WebhookEvent {
        let counts = record.counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { platform, outcomes in
            JSONMember(
                key: platform.rawValue,
                value: JSONValue(
                    .object(
                        outcomes.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                            JSONMember(key: $0.key.rawValue, value: .number(String($0.value)))
                        })))
        }
        return WebhookEvent(
            type: .notificationCompleted, created: now, notificationID: record.id,
            data: [
                .init(key: "notification", value: .string(record.id)),
                .init(key: "state", value: .string(record.state.rawValue)),
                .init(key: "counts", value: JSONValue(.object(counts))),
            ])
    }

    /// `ping`: `pushgate webhooks test`'s event.
    public static func ping(app: AppID, receiver: String, now: Timestamp) -> WebhookEvent {
        WebhookEvent(
            type: .ping, created: now, notificationID: nil,
            data: [.init(key: "app", value: .string(app.rawValue)), .init(key: "receiver", value: .string(receiver))])
    }

    private static func registrationMembers(_ registration: Registration) -> [JSONMember] {
        [
            .init(key: "registration", value: .string(registration.id.rawValue)),
            .init(key: "owner", value: .string(registration.owner.exportText)),
            .init(key: "tags", value: JSONValue(.array(registration.tags.map { .string($0.rawValue) }))),
            .init(key: "platform", value: .string(registration.platform.rawValue)),
        ]
    }
}

extension JSONValue {
    /// Strings cut to 256 bytes (on a character boundary), arrays to their first 10 elements.
    var shortened: JSONValue {
        switch kind {
        case .string(let text) where text.utf8.count > 256:
            var cut = ""
            for character in text {
                guard cut.utf8.count + character.utf8.count <= 253 else { break }
                cut.append(character)
            }
            return .string(cut + "…")
        case .array(let elements): return JSONValue(.array(elements.prefix(10).map(\.shortened)))
        case .object(let members): return JSONValue(.object(members.map { JSONMember(key: $0.key, value: $0.value.shortened) }))
        default: return self
        }
    }

    static func string(_ text: String) -> JSONValue { JSONValue(.string(text)) }
    static func number(_ text: String) -> JSONValue { JSONValue(.number(text)) }
    static var null: JSONValue { JSONValue(.null) }
}
