import Pushgate

/// FCM topics: the Instance ID API's batch subscription (`POST /iid/v1:batchAdd`,
/// `/iid/v1:batchRemove`, as firebase-admin calls it) and delivery of topic and condition
/// messages to the devices subscribed.
extension GoogleService {
    func topicSubscription(_ request: SandboxHTTPRequest, subscribe: Bool) -> SandboxHTTPResponse {
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer "),
            state.isAccessTokenValid(String(authorization.dropFirst("Bearer ".count)))
        else {
            return .json(401, #"{"error":"Unauthorized"}"#)
        }
        guard let root = try? JSONParser.parse(request.body), let to = root["to"]?.stringValue,
            let tokens = root["registration_tokens"]?.arrayElements
        else {
            return .json(400, #"{"error":"InvalidRequest: expected \"to\" and \"registration_tokens\""}"#)
        }
        let topic = to.hasPrefix("/topics/") ? String(to.dropFirst("/topics/".count)) : to
        guard Self.isTopicName(topic) else { return .json(400, #"{"error":"InvalidTopicName"}"#) }
        let names = tokens.compactMap(\.stringValue)
        guard names.count == tokens.count, (1...SandboxAssumptions.fcmMaximumTokensPerBatch).contains(names.count) else {
            return .json(
                400,
                #"{"error":"InvalidRequest: registration_tokens must be 1 to \#(SandboxAssumptions.fcmMaximumTokensPerBatch) strings"}"#)
        }
        let results = state.changeSubscriptions(tokens: names, topic: topic, subscribe: subscribe)
            .map { error in error.map { #"{"error":"\#($0)"}"# } ?? "{}" }
        return .json(200, #"{"results":[\#(results.joined(separator: ","))]}"#)
    }

    /// Firebase's topic names: `[a-zA-Z0-9-_.~%]+`.
    static func isTopicName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || "-_.~%".utf8.contains(byte)
            }
    }

    /// The devices a topic or condition message reaches, or the service's refusal when the topic
    /// or condition is malformed.
    enum TopicAudience {
        case devices([SandboxDevice])
        case refused(SandboxHTTPResponse)
    }

    func topicAudience(topic: String?, condition: String?) -> TopicAudience {
        if let topic {
            // The v1 field is the bare name (Firebase: without `/topics/`; the prefix is refused).
            guard Self.isTopicName(topic) else {
                return .refused(
                    rpcError(
                        400, "INVALID_ARGUMENT", "Request contains an invalid argument.", errorCode: "INVALID_ARGUMENT",
                        violations: [("message.topic", "Invalid topic name \(topic)")]))
            }
            return .devices(state.fcmSubscribers { $0.contains(topic) })
        }
        guard let condition, let matches = TopicCondition.parse(condition) else {
            return .refused(
                rpcError(
                    400, "INVALID_ARGUMENT", "Request contains an invalid argument.", errorCode: "INVALID_ARGUMENT",
                    violations: [("message.condition", "Invalid condition expression provided.")]))
        }
        return .devices(state.fcmSubscribers(where: matches))
    }
}

/// An FCM condition (`'a' in topics && ('b' in topics || !('c' in topics))`) as a predicate over a
/// device's topics. Firebase: "FCM first evaluates any conditions in parentheses, and then
/// evaluates the expression from left to right", so `&&` and `||` have one precedence (`!`
/// binds to its operand); at most five topics. Nesting is bounded: a hostile condition of a
/// million `(` is refused, not a stack overflow.
enum TopicCondition {
    typealias Predicate = @Sendable (Set<String>) -> Bool

    static func parse(_ text: String) -> Predicate? {
        var parser = Parser(bytes: Array(text.utf8))
        guard let predicate = parser.expression(), parser.atEnd, parser.topics <= SandboxAssumptions.fcmMaximumConditionTopics else {
            return nil
        }
        return predicate
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var topics = 0
        var depth = 0
        static let maximumDepth = 64

        init(bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool {
            mutating get {
                skipSpaces()
                return index == bytes.count
            }
        }

        mutating func skipSpaces() { while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 } }

        mutating func take(_ word: String) -> Bool {
            skipSpaces()
            let word = Array(word.utf8)
            guard bytes[index...].starts(with: word) else { return false }
            index += word.count
            return true
        }

        /// `operand ((&& | ||) operand)*`, evaluated left to right.
        mutating func expression() -> Predicate? {
            guard var left = operand() else { return nil }
            while true {
                let first = left
                if take("&&") {
                    guard let right = operand() else { return nil }
                    left = { first($0) && right($0) }
                } else if take("||") {
                    guard let right = operand() else { return nil }
                    left = { first($0) || right($0) }
                } else {
                    return left
                }
            }
        }

        mutating func operand() -> Predicate? {
            depth += 1
            defer { depth -= 1 }
            guard depth <= Self.maximumDepth else { return nil }
            if take("!") {
                guard let inner = operand() else { return nil }
                return { !inner($0) }
            }
            if take("(") {
                guard let inner = expression(), take(")") else { return nil }
                return inner
            }
            guard take("'") else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "'") { index += 1 }
            guard index < bytes.count else { return nil }
            let name = String(decoding: bytes[start..<index], as: UTF8.self)
            index += 1
            guard GoogleService.isTopicName(name), take("in"), take("topics") else { return nil }
            topics += 1
            return { $0.contains(name) }
        }
    }
}
