import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension GatewayError: HTTPResponseError {
    /// `{"error": message, "status": code}`; 429 carries `Retry-After`.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        BasicAuthenticationMiddleware.refusal(self, challenge: false)
    }
}

/// The body of every error answer.
struct ErrorBody: Codable, Sendable {
    var error: String
    var status: Int
}
