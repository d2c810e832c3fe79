import Foundation
import Hummingbird
import Logging
import NIOCore
import PushgateGateway

/// The request context: Hummingbird's core storage, the client's address, and the authenticated
/// user (set by ``BasicAuthenticationMiddleware`` on every `/api` route).
public struct GatewayContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var user: AuthenticatedUser?
    /// A hub request's authorized call (set by ``HubAuthorizationMiddleware`` on `/{hub}/…`).
    var hubCall: HubHTTP.HubCall?
    /// The peer's IP address (throttling of failed logins is per address and user).
    public let remoteAddress: String

    /// Answers are written by the API's one encoder (sorted keys, slashes unescaped).
    public var responseEncoder: JSONEncoder { GatewayHTTP.encoder }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// The authenticated user; a route outside the authenticated group gets 401.
    func authenticatedUser() throws(GatewayError) -> AuthenticatedUser {
        guard let user else {
            throw GatewayError(.unauthorized, "authentication required: send Authorization: Basic base64(user:password)")
        }
        return user
    }
}
