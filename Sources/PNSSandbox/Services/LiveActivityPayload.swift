import Pushgate

/// An APNs refusal: the status and Apple's `reason` string.
struct APNSRefusal: Error, Sendable, Hashable {
    var status: Int
    var reason: String

    init(_ status: Int, _ reason: String) {
        self.status = status
        self.reason = reason
    }
}

/// The `aps` keys of a Live Activity push (ActivityKit), read from a payload and checked per event
/// as Apple's table has them (protocols.md §7): `timestamp` and `event` always; `content-state`
/// for `start` and `update`; `attributes-type` and `attributes` for `start`.
///
/// APNs itself documents no reason for a Live Activity payload it refuses (the device, not the
/// service, ignores a bad one); the sandbox refuses with the reasons in
/// ``SandboxAssumptions`` (`MissingEvent`, `BadEvent`, `MissingTimestamp`…, all UNCONFIRMED)
/// so that a gateway's mistake shows at once.
struct LiveActivityPayload: Sendable, Hashable {
    enum Event: String, Sendable, Hashable, CaseIterable {
        case start, update, end
    }

    var event: Event
    /// Unix seconds.
    var timestamp: Double
    var contentState: JSONValue?
    var attributesType: String?
    var attributes: JSONValue?
    var alert: JSONValue?
    var staleDate: Double?
    var dismissalDate: Double?
    /// `input-push-token: 1`: the start asks ActivityKit for an update token.
    var inputPushToken: Bool
    /// `input-push-channel`: the start subscribes the activity to this broadcast channel.
    var inputPushChannel: String?

    /// The Live Activity keys of `payload` (a JSON object), for one of `events`.
    static func parse(_ payload: JSONValue, events: Set<Event>) throws(APNSRefusal) -> LiveActivityPayload {
        let aps = payload["aps"]
        guard let eventName = aps?["event"] else { throw APNSRefusal(400, SandboxAssumptions.liveActivityMissingEventReason) }
        guard let event = eventName.stringValue.flatMap(Event.init(rawValue:)), events.contains(event) else {
            throw APNSRefusal(400, SandboxAssumptions.liveActivityBadEventReason)
        }
        guard let timestampValue = aps?["timestamp"] else {
            throw APNSRefusal(400, SandboxAssumptions.liveActivityMissingTimestampReason)
        }
        guard let timestamp = number(timestampValue) else { throw APNSRefusal(400, SandboxAssumptions.liveActivityBadTimestampReason) }

        let contentState = aps?["content-state"]
        if event != .end, contentState == nil {
            throw APNSRefusal(400, SandboxAssumptions.liveActivityMissingContentStateReason)
        }
        if let contentState, contentState.objectMembers == nil {
            throw APNSRefusal(400, SandboxAssumptions.liveActivityBadContentStateReason)
        }

        var parsed = LiveActivityPayload(
            event: event, timestamp: timestamp, contentState: contentState, alert: aps?["alert"], inputPushToken: false)
        for (key, date) in [("stale-date", \LiveActivityPayload.staleDate), ("dismissal-date", \.dismissalDate)] {
            guard let value = aps?[key] else { continue }
            guard let seconds = number(value) else { throw APNSRefusal(400, SandboxAssumptions.liveActivityBadDateReason) }
            parsed[keyPath: date] = seconds
        }
        guard event == .start else { return parsed }

        guard let attributesType = aps?["attributes-type"]?.stringValue, !attributesType.isEmpty else {
            throw APNSRefusal(400, SandboxAssumptions.liveActivityMissingAttributesTypeReason)
        }
        guard let attributes = aps?["attributes"], attributes.objectMembers != nil else {
            throw APNSRefusal(400, SandboxAssumptions.liveActivityMissingAttributesReason)
        }
        parsed.attributesType = attributesType
        parsed.attributes = attributes
        // iOS 18: one or the other.
        let token = aps?["input-push-token"]
        let channel = aps?["input-push-channel"]
        if let token {
            guard let flag = number(token), flag == 0 || flag == 1 else {
                throw APNSRefusal(400, SandboxAssumptions.liveActivityBadInputPushReason)
            }
            parsed.inputPushToken = flag == 1
        }
        if let channel {
            guard let id = channel.stringValue, !id.isEmpty, !parsed.inputPushToken else {
                throw APNSRefusal(400, SandboxAssumptions.liveActivityBadInputPushReason)
            }
            parsed.inputPushChannel = id
        }
        return parsed
    }

    private static func number(_ value: JSONValue) -> Double? {
        guard case .number(let text) = value.kind else { return nil }
        return Double(text)
    }
}
