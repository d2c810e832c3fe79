import Hummingbird
import Logging
import PushgateGateway

/// Authorizes a hub request before any hub route runs: the hub must be configured, the API
/// version one NH clients send, the Shared Access Signature one of the hub's rules'. The route
/// then runs in a ``HubRequestContext``, which cannot lack its authorized call. Every refusal and
/// error of the hub's routes is answered here, once, as Notification Hubs' XML `<Error>`; refused
/// credentials and rights are logged (method, path, peer, reason: never the token or a key).
struct HubAuthorizationMiddleware: RouterMiddleware {
    typealias Context = GatewayContext

    let hubs: HubDirectory
    /// How clients reach this listener (`https`), for the links the hub writes.
    let scheme: String
    /// Who a request comes from, for the rates kept per client address.
    let clients: ClientAddressResolver

    func handle(
        _ request: Request, context: GatewayContext, next: (Request, GatewayContext) async throws -> Response
    ) async throws
        -> Response
    {
        var context = context
        do {
            context.hubCall = try HubHTTP.authorize(request, context: context, hubs: hubs, scheme: scheme, clients: clients)
            return try await next(request, context)
        } catch let error as GatewayError {
            if error.kind == .unauthorized || error.kind == .forbidden {
                HubHTTP.refusals.notice(
                    "hub request refused",
                    metadata: [
                        "status": "\(error.code)", "method": "\(request.method.rawValue)", "path": "\(request.uri.path.prefix(120))",
                        "peer": "\(context.remoteAddress)", "reason": "\(error.message.prefix(200))",
                    ])
            }
            return HubHTTP.errorResponse(error)
        } catch {
            return HubHTTP.errorResponse(GatewayError(.misconfigured, "internal error: \(error)"))
        }
    }
}

/// The context of a hub route: the request's authorized call (hub, rule and rights, API version,
/// links), set by ``HubAuthorizationMiddleware``; a route cannot be reached without it.
struct HubRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let call: HubHTTP.HubCall

    init(context: GatewayContext) throws {
        guard let call = context.hubCall else {
            throw GatewayError(.unauthorized, "the hub request was not authorized (HubAuthorizationMiddleware)")
        }
        coreContext = context.coreContext
        self.call = call
    }
}
