import HTTPTypes
import Hummingbird
import PushgateGateway

/// Basic authentication for every `/api` route.
package struct BasicAuthenticationMiddleware: RouterMiddleware {
    package typealias Context = GatewayContext
    static let requestedWith = HTTPField.Name("X-Requested-With")!
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    let authenticator: Authenticator

    package init(authenticator: Authenticator) { self.authenticator = authenticator }

    package func handle(
        _ request: Request, context: GatewayContext, next: (Request, GatewayContext) async throws -> Response
    ) async throws -> Response {
        // Script clients (the web console) say so, and get no challenge: a browser would answer it with its own password dialog.
        let challenge = request.headers[Self.requestedWith] == nil
        let client = authenticator.clients.client(peer: context.remoteAddress, forwardedFor: request.headers[values: Self.forwardedFor])
        switch await authenticator.authenticate(request.headers[.authorization], from: client) {
        case .user(let user):
            var context = context
            context.user = user
            return try await next(request, context)
        case .missing:
            return Self.refusal(
                GatewayError(.unauthorized, "authentication required: send Authorization: Basic base64(user:password)"),
                challenge: challenge)
        case .refused:
            return Self.refusal(GatewayError(.unauthorized, "wrong user name or password"), challenge: challenge)
        case .rateLimited(let seconds):
            return Self.refusal(
                GatewayError(
                    .tooManyRequests,
                    "too many failed logins for this user (from this client, or from everywhere); try again in \(seconds) s",
                    retryAfterSeconds: seconds),
                challenge: false)
        case .busy(let seconds):
            return Self.refusal(
                GatewayError(.unavailable, "too many password checks at once; try again in \(seconds) s", retryAfterSeconds: seconds),
                challenge: false)
        }
    }

    static func refusal(_ error: GatewayError, challenge: Bool) -> Response {
        var response = GatewayHTTP.encoded(error.code, ErrorBody(error: error.message, status: error.code))
        if let seconds = error.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
        if challenge { response.headers[.wwwAuthenticate] = #"Basic realm="pushgate", charset="UTF-8""# }
        return response
    }
}
