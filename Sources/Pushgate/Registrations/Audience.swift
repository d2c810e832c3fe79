/// Who a send goes to: registrations (those whose tags satisfy an expression, or every one),
/// device handles given with the send, or one FCM topic or condition, which Firebase fans out to
/// the devices subscribed to it.
public enum Audience: Sendable, Hashable, CustomStringConvertible {
    /// The registrations whose tags satisfy the expression; every registration when nil (a hub
    /// API send without tags).
    case registrations(TagExpression?)
    /// Device handles given with the send (a hub API direct send), each once, in order: no
    /// registration stands behind them.
    case handles([DeviceHandle])
    /// An FCM topic or condition.
    case fcm(FCMRecipient)
    /// Registrations of a Live Activity kind (``RegistrationSelector``): an activity's update
    /// tokens, or the push-to-start tokens of one attributes type among those a tag expression
    /// selects. No ordinary send reaches them.
    case tokens(RegistrationSelector)
    /// An APNs broadcast channel (iOS 18): Apple fans one request out to every Live Activity
    /// subscribed to it, whatever their number.
    case apnsChannel(APNSChannelRecipient)

    /// The registrations whose tags satisfy `expression`.
    public static func tags(_ expression: TagExpression) -> Audience { .registrations(expression) }

    /// Every registration.
    public static let everyone = Audience.registrations(nil)

    /// What its targets are (``DispatchTarget/Kind``): stored registrations, handles given with
    /// the send, or an audience the service fans out. Every target of one audience is of one kind,
    /// so a stored page's targets get theirs back from their notification's audience.
    public var targetKind: DispatchTarget.Kind {
        switch self {
        case .registrations, .tokens: .registration
        case .handles: .device
        case .fcm, .apnsChannel: .audience
        }
    }

    /// Most handles in one direct send (Notification Hubs' batch limit).
    public static let maximumDirectHandles = 1000

    /// A direct send's handles, each device once however often it is listed (pages would not see
    /// repeats across their boundaries).
    public static func direct(handles: [DeviceHandle]) -> Audience {
        var seen = Set<DeviceHandle>()
        return .handles(handles.filter { seen.insert($0).inserted })
    }

    /// The place of a direct send's `n`-th handle (from 1) among its targets, as results name
    /// it: `direct-0001`, `direct-0002`, …. It names no registration: nothing is stored for it.
    static func directTargetID(_ position: Int) -> RegistrationID {
        let digits = String(position)
        return try! RegistrationID("direct-" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits)
    }

    /// What a store keeps beside the expression's text: `everyone`, the FCM recipient, or the
    /// direct handles as JSON (`{"handles":[["apns","…"],…]}`); nil for tags.
    public var storedRecipient: String? {
        switch self {
        case .registrations(let expression): return expression == nil ? "everyone" : nil
        case .fcm(let recipient): return recipient.handleValue
        case .apnsChannel(let channel): return APNSChannelRecipient.storedPrefix + channel.name + "\n" + channel.channelID
        case .tokens(let selector):
            var output = Array(#"{"kind":"#.utf8)
            Escaping.appendJSONString((selector.kind ?? .device).stored, to: &output)
            if let owner = selector.owner {
                output += Array(#","owner":"#.utf8)
                Escaping.appendJSONString(owner.exportText, to: &output)
            }
            if let expression = selector.expression {
                output += Array(#","tags":"#.utf8)
                Escaping.appendJSONString(expression.description, to: &output)
            }
            output.append(UInt8(ascii: "}"))
            return String(decoding: output, as: UTF8.self)
        case .handles(let handles):
            var output = Array(#"{"handles":["#.utf8)
            for (index, handle) in handles.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                output.append(UInt8(ascii: "["))
                Escaping.appendJSONString(handle.platform.rawValue, to: &output)
                output.append(UInt8(ascii: ","))
                Escaping.appendJSONString(handle.value, to: &output)
                output.append(UInt8(ascii: "]"))
            }
            output += Array("]}".utf8)
            return String(decoding: output, as: UTF8.self)
        }
    }

    /// The audience back from a store: `text` is the expression, `recipient` the stored recipient
    /// (also the line-per-target form older versions stored for direct handles).
    public static func stored(text: String, recipient: String?) -> Audience? {
        guard let recipient else { return (try? TagExpression(parsing: text)).map(Audience.tags) }
        if recipient == "everyone" { return .everyone }
        if recipient.hasPrefix(APNSChannelRecipient.storedPrefix) {
            let parts = recipient.dropFirst(APNSChannelRecipient.storedPrefix.count).split(separator: "\n", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            return .apnsChannel(APNSChannelRecipient(name: String(parts[0]), channelID: String(parts[1])))
        }
        if recipient.hasPrefix(#"{"kind":"#) {
            guard let stored = try? JSONParser.parse(Array(recipient.utf8)),
                let kind = stored["kind"]?.stringValue.flatMap(RegistrationKind.init(stored:))
            else { return nil }
            var owner: RegistrationOwner?
            if let text = stored["owner"]?.stringValue {
                guard let parsed = RegistrationOwner(exportText: text) else { return nil }
                owner = parsed
            }
            var expression: TagExpression?
            if let tags = stored["tags"]?.stringValue {
                guard let parsed = try? TagExpression(parsing: tags) else { return nil }
                expression = parsed
            }
            return .tokens(RegistrationSelector(kind: kind, owner: owner, expression: expression))
        }
        if recipient.hasPrefix(#"{"handles":"#) {
            guard let elements = (try? JSONParser.parse(Array(recipient.utf8)))?["handles"]?.arrayElements else { return nil }
            var handles: [DeviceHandle] = []
            for element in elements {
                guard let pair = element.arrayElements, pair.count == 2,
                    let platform = pair[0].stringValue.flatMap(Platform.init(rawValue:)),
                    let value = pair[1].stringValue
                else { return nil }
                handles.append(DeviceHandle(uncheckedPlatform: platform, value: value))
            }
            return .handles(handles)
        }
        if recipient.hasPrefix("direct\n") {
            return OutboxRetry.decode(String(recipient.dropFirst("direct\n".count))).map { .handles($0.map(\.handle)) }
        }
        return FCMRecipient(handleValue: recipient).map(Audience.fcm)
    }

    /// The tag expression, when the audience is registrations matched by one.
    public var expression: TagExpression? { selector?.expression }

    /// Which registrations the audience walks; nil when the sender gave its targets.
    public var selector: RegistrationSelector? {
        switch self {
        case .registrations(let expression): .devices(expression)
        case .tokens(let selector): selector
        case .handles, .fcm, .apnsChannel: nil
        }
    }

    /// Whether an audience's ``description`` names no registration (an FCM topic or condition,
    /// a direct send's handles): its targets are what the sender gave. No tag expression reads so:
    /// an expression's tags are joined by operators, and no tag holds a quote.
    public static func namesNoRegistrations(_ description: String) -> Bool {
        if description.hasPrefix("topic ") { return !description.dropFirst(6).contains(" ") }
        if description.hasPrefix("condition ") { return description.contains("'") }
        if description.hasPrefix(APNSChannelRecipient.descriptionPrefix) {
            return !description.dropFirst(APNSChannelRecipient.descriptionPrefix.count).contains(" ")
        }
        let direct = "direct send to "
        guard description.hasPrefix(direct) else { return false }
        let words = description.dropFirst(direct.count).split(separator: " ")
        return words.count == 2 && Int(words[0]) != nil && (words[1] == "handle" || words[1] == "handles")
    }

    /// Whose Live Activity tokens an audience's ``description`` names (`update token of activity
    /// order-4711 of alice`), or nil for any other audience: no tag expression begins so.
    public static func tokenOwner(ofDescription description: String) -> String? {
        guard description.hasPrefix("update token of activity ") || description.hasPrefix("push-to-start token of ") else { return nil }
        let parts = description.split(separator: " of ", omittingEmptySubsequences: false)
        return parts.count > 2 ? String(parts[parts.count - 1]) : nil
    }

    /// The expression's text, or `topic news` / `condition 'a' in topics && …` (telemetry).
    public var description: String {
        switch self {
        case .registrations(let expression?): expression.description
        case .registrations(nil): "every registration"
        case .fcm(let recipient): recipient.description
        case .apnsChannel(let channel): APNSChannelRecipient.descriptionPrefix + channel.name
        case .handles(let handles): "direct send to \(handles.count) handle\(handles.count == 1 ? "" : "s")"
        case .tokens(let selector):
            (selector.kind?.description ?? "registration")
                + (selector.expression.map { " matching \($0.description)" } ?? "") + (selector.owner.map { " of " + $0.exportText } ?? "")
        }
    }

    /// The targets of the audience after `after` (ids in order), at most `limit`, where the
    /// registrations' own walk is `registrations`: an FCM recipient is one target; a direct
    /// send's handles are targets by their place in the send.
    public func targets<Failure: Error>(
        after: RegistrationID?, limit: Int, registrations: (RegistrationSelector, RegistrationID?, Int) throws(Failure) -> [DispatchTarget]
    ) throws(Failure) -> [DispatchTarget] {
        guard let selector else { return givenTargets(after: after, limit: limit) }
        return try registrations(selector, after, limit)
    }

    /// ``targets(after:limit:registrations:)`` where the registrations' walk waits (a store's pages).
    public func targets<Failure: Error>(
        after: RegistrationID?, limit: Int, isolation: isolated (any Actor)? = #isolation,
        registrations: (RegistrationSelector, RegistrationID?, Int) async throws(Failure) -> [DispatchTarget]
    ) async throws(Failure) -> [DispatchTarget] {
        guard let selector else { return givenTargets(after: after, limit: limit) }
        return try await registrations(selector, after, limit)
    }

    /// The targets the sender gave (a topic, direct handles) after `after`, at most `limit`; none
    /// when the audience is registrations (walked from a store).
    private func givenTargets(after: RegistrationID?, limit: Int) -> [DispatchTarget] {
        switch self {
        case .registrations, .tokens: []
        case .fcm(let recipient): after == nil && limit > 0 ? [recipient.target] : []
        case .apnsChannel(let channel): after == nil && limit > 0 ? [channel.target] : []
        case .handles(let handles):
            Array(
                handles.enumerated().lazy.map {
                    DispatchTarget(registrationID: Self.directTargetID($0.offset + 1), handle: $0.element, kind: .device)
                }
                .filter { after == nil || $0.registrationID > after! }.prefix(limit))
        }
    }
}

/// An FCM HTTP v1 message's recipient other than a device token: a `topic` (its name) or a
/// `condition` over topics (`'news' in topics && ('eu' in topics || 'uk' in topics)`).
///
/// It travels through the send pipeline as one ``DispatchTarget`` whose handle holds
/// ``handleValue``: `/topics/NAME` or the condition. Neither form can be a registration token
/// (those are letters, digits and `-_:.` only), so ``init(handleValue:)`` tells them apart.
public enum FCMRecipient: Sendable, Hashable, CustomStringConvertible {
    case topic(String)
    case condition(String)

    /// Firebase: topic names match `[a-zA-Z0-9-_.~%]+`; 900 characters is the documented bound.
    public static let maximumTopicLength = 900
    /// Firebase: a condition names at most five topics.
    public static let maximumConditionTopics = 5
    /// A bound on a condition's text (five topics of the longest names and their operators).
    public static let maximumConditionLength = 5 * (maximumTopicLength + 16) + 64

    /// The registration id results report for the one target of a topic or condition send.
    public static let topicTargetID = try! RegistrationID("fcm-topic")
    public static let conditionTargetID = try! RegistrationID("fcm-condition")

    /// A topic, by name (`news`, or `/topics/news` as the legacy API wrote it).
    public init(topic text: String) throws(FCMRecipientError) {
        let name = text.hasPrefix("/topics/") ? String(text.dropFirst("/topics/".count)) : text
        if let problem = Self.topicNameProblem(name) { throw FCMRecipientError(field: "topic", problem: problem) }
        self = .topic(name)
    }

    /// A condition: topic names in single quotes followed by `in topics`, joined by `&&` and `||`,
    /// with `!` and parentheses; at most five topics. Firebase evaluates it; this checks its form
    /// so that a mistake is named here, with its position, instead of by the service.
    public init(condition text: String) throws(FCMRecipientError) {
        func fail(_ problem: String) -> FCMRecipientError { FCMRecipientError(field: "condition", problem: problem) }
        guard !text.isEmpty else { throw fail("is empty") }
        guard text.utf8.count <= Self.maximumConditionLength else {
            throw fail("is \(text.utf8.count) bytes; at most \(Self.maximumConditionLength)")
        }
        let characters = Array(text)
        var index = 0
        var topics = 0
        var expectOperand = true
        var depth = 0
        func skipSpaces() { while index < characters.count, characters[index] == " " { index += 1 } }
        func consume(_ word: String) -> Bool {
            let word = Array(word)
            guard index + word.count <= characters.count, Array(characters[index..<(index + word.count)]) == word else { return false }
            index += word.count
            return true
        }
        while true {
            skipSpaces()
            guard index < characters.count else { break }
            let position = index + 1
            if expectOperand {
                if consume("!") || consume("(") {
                    if characters[index - 1] == "(" { depth += 1 }
                    continue
                }
                guard characters[index] == "'" else {
                    throw fail("expects a quoted topic name, '!' or '(' at position \(position)")
                }
                index += 1
                let start = index
                while index < characters.count, characters[index] != "'" { index += 1 }
                guard index < characters.count else { throw fail("has an unterminated topic name at position \(position)") }
                if let problem = Self.topicNameProblem(String(characters[start..<index])) {
                    throw fail("topic at position \(position) \(problem)")
                }
                index += 1
                topics += 1
                guard topics <= Self.maximumConditionTopics else {
                    throw fail("names more than \(Self.maximumConditionTopics) topics (at position \(position))")
                }
                skipSpaces()
                guard consume("in") else { throw fail("expects 'in topics' at position \(index + 1)") }
                skipSpaces()
                guard consume("topics") else { throw fail("expects 'topics' at position \(index + 1)") }
                expectOperand = false
            } else if consume(")") {
                depth -= 1
                guard depth >= 0 else { throw fail("has an unmatched ')' at position \(position)") }
            } else if consume("&&") || consume("||") {
                expectOperand = true
            } else {
                throw fail("expects '&&', '||' or ')' at position \(position)")
            }
        }
        guard !expectOperand else { throw fail("ends where a topic is expected") }
        guard depth == 0 else { throw fail("has \(depth) unclosed '('") }
        self = .condition(text)
    }

    /// The recipient a target's handle holds, or nil for a device token.
    public init?(handleValue: String) {
        if handleValue.hasPrefix("/topics/") {
            self = .topic(String(handleValue.dropFirst("/topics/".count)))
        } else if handleValue.utf8.contains(UInt8(ascii: "'")) {
            self = .condition(handleValue)
        } else {
            return nil
        }
    }

    /// What a ``DispatchTarget`` handle holds for it.
    public var handleValue: String {
        switch self {
        case .topic(let name): "/topics/" + name
        case .condition(let text): text
        }
    }

    /// The send's one target.
    public var target: DispatchTarget {
        DispatchTarget(
            registrationID: { if case .topic = self { Self.topicTargetID } else { Self.conditionTargetID } }(),
            handle: DeviceHandle(uncheckedPlatform: .fcm, value: handleValue), kind: .audience)
    }

    /// The v1 message member: `topic` or `condition`.
    public var field: String {
        if case .topic = self { return "topic" }
        return "condition"
    }

    /// The member's value: the topic's name (without `/topics/`) or the condition.
    public var value: String {
        switch self {
        case .topic(let name): name
        case .condition(let text): text
        }
    }

    public var description: String { "\(field) \(value)" }

    static func topicNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.utf8.count > maximumTopicLength { return "is \(name.utf8.count) characters long; at most \(maximumTopicLength)" }
        if let (offset, bad) = name.enumerated().first(where: { !isTopicCharacter($0.element) }) {
            return "has an invalid character \(quoted(bad)) at position \(offset + 1); expected letters, digits and - _ . ~ %"
        }
        return nil
    }

    static func isTopicCharacter(_ character: Character) -> Bool {
        guard character.isASCII else { return false }
        return character.isLetter || character.isNumber || "-_.~%".contains(character)
    }
}

/// A topic or condition FCM would refuse; names the field (`topic` or `condition`) and the problem.
public struct FCMRecipientError: PushgateInputError, Hashable {
    public let field: String
    public let problem: String

    public var description: String { "\(field): \(problem)" }
}
