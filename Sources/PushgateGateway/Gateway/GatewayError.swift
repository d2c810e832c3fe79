import Pushgate

/// A request the core refuses: what kind of refusal, and a message that names the problem (the
/// field, value or position; never a secret). Each API answers a kind in its own terms, once:
/// the tutorial API as `{"error": message, "status": code}`, the hub API as NH's `<Error>`.
public struct GatewayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of refusal: a struct over a private code, so that kinds can be added without
    /// breaking an API's mapping (which has a default).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Code: String, Hashable, Sendable {
            case invalid, unauthorized, forbidden, notFound, methodNotAllowed, conflict, gone, preconditionFailed, tooLarge,
                unsupportedMediaType, unprocessable
            case tooManyRequests, notImplemented, unavailable, misconfigured
        }
        private let code: Code

        /// The request is malformed or breaks a rule: the message says which.
        public static let invalid = Kind(code: .invalid)
        /// No or wrong credentials.
        public static let unauthorized = Kind(code: .unauthorized)
        /// Authenticated, but not allowed this.
        public static let forbidden = Kind(code: .forbidden)
        public static let notFound = Kind(code: .notFound)
        /// The resource exists, the method is not one it takes.
        public static let methodNotAllowed = Kind(code: .methodNotAllowed)
        /// It clashes with what is stored (another user's device, a finished notification).
        public static let conflict = Kind(code: .conflict)
        /// The resource is no more (an expired or unknown registration id, as the tutorial client expects).
        public static let gone = Kind(code: .gone)
        /// An `If-Match` that does not hold.
        public static let preconditionFailed = Kind(code: .preconditionFailed)
        /// A body, payload or message over its limit.
        public static let tooLarge = Kind(code: .tooLarge)
        /// Well-formed, and refused for what it means (an idempotency key reused for another request).
        public static let unprocessable = Kind(code: .unprocessable)
        /// A body of a type the operation does not take.
        public static let unsupportedMediaType = Kind(code: .unsupportedMediaType)
        /// A limit on how much or how often (see ``GatewayError/retryAfterSeconds``).
        public static let tooManyRequests = Kind(code: .tooManyRequests)
        /// A documented operation this gateway does not provide.
        public static let notImplemented = Kind(code: .notImplemented)
        /// The store or a push service cannot be reached now; retry later.
        public static let unavailable = Kind(code: .unavailable)
        /// The gateway's own configuration is wrong (no templates for a purpose, a bad key).
        public static let misconfigured = Kind(code: .misconfigured)

        public var description: String { code.rawValue }
    }

    public let kind: Kind
    public let message: String
    /// For ``Kind/tooManyRequests`` and ``Kind/unavailable``: when to try again.
    public var retryAfterSeconds: Int?

    public init(_ kind: Kind, _ message: String, retryAfterSeconds: Int? = nil) {
        self.kind = kind
        self.message = Self.bounded(message)
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The most of a message an answer carries, in bytes of UTF-8: messages quote client input by
    /// its first few dozen characters, and this bounds any that quotes more (an error never echoes
    /// a large input, however many combining marks one of its characters carries).
    public static let maximumMessageBytes = 600

    private static func bounded(_ message: String) -> String {
        message.excerpt(maximumBytes: maximumMessageBytes, marker: "… (cut)")
    }

    public var description: String { "\(kind): \(message)" }

    package static func badRequest(_ message: String) -> GatewayError { GatewayError(.invalid, message) }
    package static func forbidden(_ message: String) -> GatewayError { GatewayError(.forbidden, message) }
    package static func notFound(_ message: String) -> GatewayError { GatewayError(.notFound, message) }
    package static func gone(_ message: String) -> GatewayError { GatewayError(.gone, message) }

    /// The refusal a domain input error deserves: an over-limit payload is too large, the rest invalid.
    package static func input(_ error: some PushgateInputError, _ message: String) -> GatewayError {
        GatewayError(error.isOverLimit ? .tooLarge : .invalid, message)
    }
}
