import Pushgate

/// A Push Kit v1 send body, `{"validate_only":bool,"message":{…}}`, checked as Push Kit documents
/// (protocols.md §9); a refusal is the ``HMSAnswer`` to send back. No I/O: tokens are looked up by
/// the service afterwards.
struct HMSSendRequest: Sendable, Hashable {
    enum Target: Sendable, Hashable {
        case tokens([String])
        case topic(String)
        case condition(String)
    }

    /// A dry run: checked and answered as if sent, delivered nowhere.
    var validateOnly: Bool
    var target: Target
    /// The message without its token list: what each device's inbox receives.
    var delivered: JSONValue

    /// The members of the request itself.
    static let requestMembers: Set<String> = ["validate_only", "message"]
    /// The members of a v1 `message` (Huawei's send API reference).
    static let messageMembers: Set<String> = ["data", "notification", "android", "apns", "webpush", "token", "topic", "condition"]
    static let targetMembers: Set<String> = ["token", "topic", "condition"]

    init(body: [UInt8]) throws(HMSAnswer) {
        guard let root = try? JSONParser.parse(body), let rootMembers = root.objectMembers else {
            throw .badStructure("the body is not a JSON object")
        }
        if let unknown = rootMembers.first(where: { !Self.requestMembers.contains($0.key) }) {
            throw .badStructure("unknown member '\(unknown.key)'")
        }
        switch root["validate_only"]?.kind {
        case nil, .null?: validateOnly = false
        case .bool(let flag)?: validateOnly = flag
        default: throw .badParameter("validate_only must be a boolean")
        }
        guard let message = root["message"], let members = message.objectMembers else {
            throw .badStructure("'message' must be an object")
        }
        if let unknown = members.first(where: { !Self.messageMembers.contains($0.key) }) {
            throw .badStructure("unknown member 'message.\(unknown.key)'")
        }
        // A null member is as good as absent (some clients send "topic": null beside a token list).
        let targets = members.filter { Self.targetMembers.contains($0.key) && $0.value.kind != .null }
        guard targets.count == 1, let chosen = targets.first else {
            throw .badParameter(
                targets.isEmpty ? "the message has no target (token, topic or condition)" : "give exactly one of token, topic or condition")
        }
        target = try Self.target(chosen)
        try Self.check(message)
        if case .tokens(let tokens) = target {
            // Each token with its quotes and separator does not count against the limit.
            let tokenBytes = tokens.reduce(0) { $0 + $1.utf8.count + 3 }
            if body.count - tokenBytes > SandboxAssumptions.hmsMaximumMessageBytes { throw .tooLarge }
        } else if body.count > SandboxAssumptions.hmsMaximumMessageBytes {
            throw .tooLarge
        }
        delivered = JSONValue(.object(members.filter { $0.key != "token" }))
    }

    private static func target(_ member: JSONMember) throws(HMSAnswer) -> Target {
        switch member.key {
        case "token":
            guard let elements = member.value.arrayElements else { throw .badParameter("message.token must be an array of tokens") }
            guard (1...SandboxAssumptions.hmsMaximumTokens).contains(elements.count) else { throw .tooManyTokens }
            var tokens: [String] = []
            tokens.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                guard let token = element.stringValue, !token.isEmpty else {
                    throw .badParameter("message.token[\(index)] must be a token (a non-empty string)")
                }
                tokens.append(token)
            }
            return .tokens(tokens)
        case "topic":
            guard let topic = member.value.stringValue, !topic.isEmpty else { throw .badParameter("message.topic must be a topic name") }
            return .topic(topic)
        default:
            guard let condition = member.value.stringValue, !condition.isEmpty else {
                throw .badParameter("message.condition must be a condition (a string)")
            }
            return .condition(condition)
        }
    }

    /// The members whose types and values Push Kit documents.
    private static func check(_ message: JSONValue) throws(HMSAnswer) {
        func present(_ value: JSONValue?) -> JSONValue? { value?.kind == .null ? nil : value }
        if let data = present(message["data"]), data.stringValue == nil {
            throw .badParameter("message.data must be a string (JSON text), not \(data.typeDescription)")
        }
        for name in ["notification", "apns", "webpush"] {
            if let member = present(message[name]), member.objectMembers == nil {
                throw .badParameter("message.\(name) must be an object, not \(member.typeDescription)")
            }
        }
        guard let android = present(message["android"]) else { return }
        guard android.objectMembers != nil else { throw .badParameter("message.android must be an object") }
        if let urgency = present(android["urgency"]), urgency.stringValue != "HIGH", urgency.stringValue != "NORMAL" {
            throw .badParameter("message.android.urgency must be HIGH or NORMAL")
        }
        if let ttl = present(android["ttl"]), !isDuration(ttl.stringValue) {
            throw .badParameter(#"message.android.ttl must be a duration in seconds such as "86400s""#)
        }
        if let key = present(android["collapse_key"]) {
            guard case .number(let text) = key.kind, let value = Int(text), (-1...100).contains(value) else { throw .badCollapseKey }
        }
        for name in ["category", "data", "bi_tag"] {
            if let member = present(android[name]), member.stringValue == nil {
                throw .badParameter("message.android.\(name) must be a string, not \(member.typeDescription)")
            }
        }
        if let notification = present(android["notification"]), notification.objectMembers == nil {
            throw .badParameter("message.android.notification must be an object, not \(notification.typeDescription)")
        }
    }

    /// A protobuf-style duration in seconds: `"86400s"`, `"1.5s"`.
    static func isDuration(_ text: String?) -> Bool {
        guard let text, text.hasSuffix("s") else { return false }
        let parts = text.dropLast().split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count)
            && parts.allSatisfy { part in !part.isEmpty && part.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }
    }
}
