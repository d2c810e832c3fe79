import HTTPTypes

/// A request the gateway refuses, with the HTTP status it answers and a message that names the
/// problem (never a secret). Thrown from a route, it becomes `{"error": message, "status": code}`
/// (``GatewayError/response(from:context:)``).
public struct GatewayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status code.
    public let code: Int
    public let message: String
    /// For 429 and 503: when to try again (`Retry-After`).
    public var retryAfterSeconds: Int?

    public init(_ code: Int, _ message: String, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The HTTP status.
    public var status: HTTPResponse.Status { .init(code: code) }

    public var description: String { "\(code): \(message)" }

    static func badRequest(_ message: String) -> GatewayError { GatewayError(400, message) }
    static func forbidden(_ message: String) -> GatewayError { GatewayError(403, message) }
    static func notFound(_ message: String) -> GatewayError { GatewayError(404, message) }
    static func gone(_ message: String) -> GatewayError { GatewayError(410, message) }
}
