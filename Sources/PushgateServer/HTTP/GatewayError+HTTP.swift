import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Pushgate
import PushgateGateway

extension GatewayError: HTTPResponseError {
    /// The HTTP status each kind of refusal answers, in both APIs.
    public var status: HTTPResponse.Status { .init(code: code) }

    /// The status code of ``status``.
    var code: Int {
        switch kind {
        case .invalid: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .conflict: 409
        case .gone: 410
        case .preconditionFailed: 412
        case .tooLarge: 413
        case .unsupportedMediaType: 415
        case .unprocessable: 422
        case .tooManyRequests: 429
        case .notImplemented: 501
        case .unavailable: 503
        default: 500
        }
    }

    /// `{"error": message, "status": code}`; 429 carries `Retry-After`.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        BasicAuthenticationMiddleware.refusal(self, challenge: false)
    }
}

extension Sends.SendOutcome {
    /// The tutorial API's status for a send: 200 processed (partial failures are in the body),
    /// 404 nothing matched, 503 nothing reachable or cut short, 202 accepted and continuing.
    var httpStatus: Int {
        switch ending {
        case .continuing: 202
        case .interrupted: 503
        case .finished:
            switch result.state {
            case .noTargetFound: 404
            case .abandoned: 503
            default: 200
            }
        }
    }
}

/// The body of every error answer.
struct ErrorBody: Codable, Sendable {
    var error: String
    var status: Int
}
