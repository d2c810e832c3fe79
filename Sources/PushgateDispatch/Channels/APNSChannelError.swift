import Pushgate

/// A channel management call that did not succeed: Apple refused it (its status and reason), it
/// got no answer, the answer could not be read, or no provider token could be signed. Never
/// carries the token or the key.
public struct APNSChannelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong: a struct over a private code, so that kinds can be added.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Code: String, Hashable, Sendable {
            case refused, unreachable, unreadable, credentials, invalidChannelID
        }
        private let code: Code

        /// Apple answered with a refusal: ``APNSChannelError/status`` and ``APNSChannelError/reason``.
        public static let refused = Kind(code: .refused)
        /// No answer: the management host could not be reached, or did not answer in time.
        public static let unreachable = Kind(code: .unreachable)
        /// An answer that is not what Apple documents (no channel id, a body that does not parse, too long).
        public static let unreadable = Kind(code: .unreadable)
        /// No provider token could be signed with the configured key.
        public static let credentials = Kind(code: .credentials)
        /// A channel id that cannot be sent (not base64): nothing was sent.
        public static let invalidChannelID = Kind(code: .invalidChannelID)

        public var description: String { code.rawValue }
    }

    public let kind: Kind
    /// Apple's status, when it answered.
    public let status: Int?
    /// Apple's `reason`, when it gave one.
    public let reason: String?
    /// The request's `apns-request-id` (what Apple's support asks for).
    public let requestID: String?
    let detail: String

    init(_ kind: Kind, status: Int? = nil, reason: String? = nil, requestID: String? = nil, detail: String) {
        self.kind = kind
        self.status = status
        self.reason = reason
        self.requestID = requestID
        self.detail = detail
    }

    /// Apple does not know the channel (deleted, or created in the other environment).
    public var isChannelNotRegistered: Bool { kind == .refused && reason == "ChannelNotRegistered" }

    public var description: String {
        var text = detail
        if let requestID { text += " (apns-request-id \(requestID))" }
        return text
    }

    static func refused(_ operation: APNSChannelWire.Operation, _ response: PushHTTPResponse, requestID: String) -> APNSChannelError {
        let reason = APNSChannelWire.reason(response)
        return APNSChannelError(
            .refused, status: response.status, reason: reason, requestID: requestID,
            detail: "APNs refused to \(operation.rawValue) the channel: \(response.status) \(reason ?? "(no reason given)")")
    }
}
