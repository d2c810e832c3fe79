/// A request the gateway refuses, with the HTTP status it answers and a message that names the
/// problem (never a secret).
public struct GatewayError: Error, Hashable, Sendable, CustomStringConvertible {
    public let status: Int
    public let message: String

    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { "\(status): \(message)" }

    static func badRequest(_ message: String) -> GatewayError { GatewayError(400, message) }
    static func forbidden(_ message: String) -> GatewayError { GatewayError(403, message) }
    static func notFound(_ message: String) -> GatewayError { GatewayError(404, message) }
    static func gone(_ message: String) -> GatewayError { GatewayError(410, message) }
}
