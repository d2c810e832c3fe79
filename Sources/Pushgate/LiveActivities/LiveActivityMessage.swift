/// A Live Activity push as a caller describes it (the body of `POST /api/liveactivities/{name}`),
/// checked against Apple's table of `aps` keys per event and turned into the payload APNs gets.
///
/// The body's members are Apple's `aps` keys: `content-state`, `alert`, `stale-date`,
/// `dismissal-date`, `relevance-score`, `attributes-type`, `attributes`, `input-push-token`,
/// `input-push-channel`, `timestamp`; `properties` (an object of strings) is the content state
/// when `content-state` is not given. `event` and `priority` come from the query.
public struct LiveActivityMessage: Sendable, Hashable {
    public var event: LiveActivityEvent
    public var contentState: JSONValue?
    public var alert: JSONValue?
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    /// The number as given.
    public var relevanceScore: String?
    public var attributesType: ActivityAttributesType?
    public var attributes: JSONValue?
    public var inputPushToken: Bool
    public var inputPushChannel: String?
    /// The caller's `timestamp` (Unix seconds); nil: Pushgate stamps it.
    public var timestamp: Int64?
    /// `apns-priority`: 10 (immediate, spends the device's budget) or 5.
    public var priority: Int
    /// `properties`, when the content state was given so: the app's `liveactivity` template
    /// (if it has one) renders the content state from them (``contentState(rendering:)``).
    public var properties: TemplateProperties?

    /// APNs' limit for a Live Activity's payload (larger: 413 `PayloadTooLarge`).
    public static let maximumPayloadBytes = 4096
    /// The template set whose APNs template renders a content state from `properties`.
    public static let templatePurpose = "liveactivity"
    /// The attribute a start carries the activity's name under, so that the app registers the
    /// update token ActivityKit gives it under that name.
    public static let nameAttribute = "activityName"
    /// An activity lives at most 8 hours, and an ended one stays on the Lock Screen at most 4
    /// more: update tokens are kept that long at most.
    public static let maximumLifetimeSeconds: Double = 12 * 3600

    public init(
        event: LiveActivityEvent, contentState: JSONValue? = nil, alert: JSONValue? = nil, staleDate: Int64? = nil,
        dismissalDate: Int64? = nil, relevanceScore: String? = nil, attributesType: ActivityAttributesType? = nil,
        attributes: JSONValue? = nil, inputPushToken: Bool = false, inputPushChannel: String? = nil, timestamp: Int64? = nil,
        priority: Int = 10
    ) {
        self.event = event
        self.contentState = contentState
        self.alert = alert
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
        self.timestamp = timestamp
        self.priority = priority
    }

    /// Parses a request body (a JSON object; empty means `{}`), naming the member at fault.
    public init(event: LiveActivityEvent, priority: Int, body: [UInt8]) throws(LiveActivityError) {
        self.init(event: event, priority: priority)
        guard priority == 10 || priority == 5 else { throw .init("priority must be 10 (immediate) or 5 (opportunistic), not \(priority)") }
        guard !body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else { try check(); return }
        let root: JSONValue
        do { root = try JSONParser.parse(body) } catch { throw .init("body: \(error.description)") }
        guard let members = root.objectMembers else { throw .init("body must be a JSON object of aps keys (content-state, alert, …)") }
        for member in members {
            let value = member.value
            func integer() throws(LiveActivityError) -> Int64 {
                guard case .number(let text) = value.kind, let number = Int64(text), number >= 0 else {
                    throw .init("\"\(member.key)\" must be a whole number of seconds since 1970")
                }
                return number
            }
            func object() throws(LiveActivityError) -> JSONValue {
                guard value.objectMembers != nil else { throw .init("\"\(member.key)\" must be a JSON object") }
                return value
            }
            switch member.key {
            case "content-state": contentState = try object()
            case "properties":
                guard contentState == nil, let properties = value.objectMembers else {
                    throw .init("\"properties\" must be an object of strings, and not given with content-state")
                }
                var given: [String: String] = [:]
                for property in properties {
                    guard let text = property.value.stringValue else { throw .init("\"properties\".\(property.key) must be a string") }
                    given[property.key] = text
                }
                contentState = value
                self.properties = TemplateProperties(given)
            case "alert":
                guard value.objectMembers != nil || value.stringValue != nil else { throw .init("\"alert\" must be an object or a string") }
                alert = value
            case "stale-date": staleDate = try integer()
            case "dismissal-date": dismissalDate = try integer()
            case "timestamp": timestamp = try integer()
            case "relevance-score":
                guard case .number(let text) = value.kind else { throw .init("\"relevance-score\" must be a number") }
                relevanceScore = text
            case "attributes-type":
                guard let text = value.stringValue else { throw .init("\"attributes-type\" must be a string (the Swift type's name)") }
                do { attributesType = try ActivityAttributesType(text) } catch { throw .init(error.description) }
            case "attributes": attributes = try object()
            case "input-push-token":
                guard case .number(let text) = value.kind, text == "1" || text == "0" else { throw .init("\"input-push-token\" must be 1") }
                inputPushToken = text == "1"
            case "input-push-channel":
                guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= 256 else {
                    throw .init("\"input-push-channel\" must be a channel id (a string)")
                }
                inputPushChannel = text
            default:
                throw .init(
                    "\"\(member.key.prefix(40))\" is not a Live Activity key; use content-state (or properties), alert, stale-date, "
                        + "dismissal-date, relevance-score, timestamp, and for a start attributes-type, attributes, input-push-token or input-push-channel"
                )
            }
        }
        try check()
    }

    /// Apple's table: what each event requires and allows.
    public func check() throws(LiveActivityError) {
        switch event {
        case .start:
            guard contentState != nil else { throw .init("a start needs content-state (or properties)") }
            guard attributesType != nil, attributes != nil else { throw .init("a start needs attributes-type and attributes") }
            if inputPushToken && inputPushChannel != nil { throw .init("give input-push-token or input-push-channel, not both") }
        case .update, .end:
            if event == .update, contentState == nil { throw .init("an update needs content-state (or properties)") }
            if attributesType != nil || attributes != nil || inputPushToken || inputPushChannel != nil {
                throw .init("attributes-type, attributes, input-push-token and input-push-channel belong to a start")
            }
        }
        if event != .end, dismissalDate != nil { throw .init("dismissal-date belongs to an end") }
    }

    /// The payload APNs gets, stamped `timestamp`; a start's attributes carry the activity's name
    /// (``nameAttribute``) unless they name it already.
    public func payload(timestamp: Int64, name: ActivityName) -> [UInt8] {
        var members: [JSONMember] = [
            JSONMember(key: "timestamp", value: JSONValue(.number(String(timestamp)))),
            JSONMember(key: "event", value: JSONValue(.string(event.rawValue))),
        ]
        if let contentState { members.append(JSONMember(key: "content-state", value: contentState)) }
        if let alert { members.append(JSONMember(key: "alert", value: alert)) }
        if let staleDate { members.append(JSONMember(key: "stale-date", value: JSONValue(.number(String(staleDate))))) }
        if let dismissalDate { members.append(JSONMember(key: "dismissal-date", value: JSONValue(.number(String(dismissalDate))))) }
        if let relevanceScore { members.append(JSONMember(key: "relevance-score", value: JSONValue(.number(relevanceScore)))) }
        if let attributesType { members.append(JSONMember(key: "attributes-type", value: JSONValue(.string(attributesType.rawValue)))) }
        if var attributes = attributes?.objectMembers {
            if !attributes.contains(where: { $0.key == Self.nameAttribute }) {
                attributes.append(JSONMember(key: Self.nameAttribute, value: JSONValue(.string(name.rawValue))))
            }
            members.append(JSONMember(key: "attributes", value: JSONValue(.object(attributes))))
        }
        if inputPushToken { members.append(JSONMember(key: "input-push-token", value: JSONValue(.number("1")))) }
        if let inputPushChannel { members.append(JSONMember(key: "input-push-channel", value: JSONValue(.string(inputPushChannel)))) }
        return JSONValue(.object([JSONMember(key: "aps", value: JSONValue(.object(members)))])).serialized()
    }

    /// The content state rendered from ``properties`` by `template` (the app's `liveactivity`
    /// template, whose body is the content state with `$(name)` expressions): it must render a
    /// JSON object.
    public mutating func contentState(rendering template: PlatformTemplate) throws(LiveActivityError) {
        guard let properties else { return }
        let rendered: [UInt8]
        do { rendered = try template.render(properties).body } catch { throw .init("properties: \(error.description)") }
        guard let state = try? JSONParser.parse(rendered), state.objectMembers != nil else {
            throw .init("the liveactivity template must render a JSON object (the content state)")
        }
        contentState = state
    }

    /// The content state as stored beside the activity (JSON), if any.
    public var contentStateText: String? { contentState.map { String(decoding: $0.serialized(), as: UTF8.self) } }

    /// The stamp and event a Live Activity payload carries (`aps.timestamp`, `aps.event`), or nil
    /// for any other payload: how the outbox's hooks read a stored send.
    public static func stamp(of payload: [UInt8]) -> (timestamp: Int64, event: LiveActivityEvent)? {
        guard let aps = (try? JSONParser.parse(payload))?["aps"], case .number(let text)? = aps["timestamp"]?.kind,
            let timestamp = Int64(text), let event = aps["event"]?.stringValue.flatMap(LiveActivityEvent.init(rawValue:))
        else { return nil }
        return (timestamp, event)
    }
}

/// A Live Activity send is not acceptable; the description names the member at fault.
public struct LiveActivityError: PushgateInputError, Hashable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
