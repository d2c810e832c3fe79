import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateXML

/// The request context: Hummingbird's core storage plus the authenticated user.
public struct GatewayContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var user: AuthenticatedUser?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// Basic authentication for every `/api` route.
struct BasicAuthenticationMiddleware: RouterMiddleware {
    typealias Context = GatewayContext
    let authenticator: Authenticator

    func handle(
        _ request: Request, context: GatewayContext, next: (Request, GatewayContext) async throws -> Response
    ) async throws -> Response {
        switch await authenticator.authenticate(request.headers[.authorization]) {
        case .user(let user):
            var context = context
            context.user = user
            return try await next(request, context)
        case .missing:
            return GatewayHTTP.error(
                GatewayError(401, "authentication required: send Authorization: Basic base64(user:password)"), challenge: true)
        case .refused:
            return GatewayHTTP.error(GatewayError(401, "wrong user name or password"), challenge: true)
        case .rateLimited:
            var response = GatewayHTTP.error(GatewayError(429, "too many failed logins for this user; try again in a minute"))
            response.headers[.retryAfter] = "60"
            return response
        }
    }
}

/// Builds the Hummingbird application serving the tutorials' app-backend API.
public enum GatewayHTTP {
    /// The header carrying a secure send's id in the response.
    public static let secureIDHeader = HTTPField.Name("X-Pushgate-Secure-Id")!

    /// The router with every route; `maximumBodyBytes` bounds request bodies.
    public static func router(
        gateway: Gateway, authenticator: Authenticator, maximumBodyBytes: Int, metrics: GatewayMetrics = GatewayMetrics()
    ) -> Router<GatewayContext> {
        let router = Router(context: GatewayContext.self)
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
        }
        router.get("healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }

        let api = router.group("api").add(middleware: BasicAuthenticationMiddleware(authenticator: authenticator))

        api.post("register") { request, context in
            let user = context.user!
            return await respond {
                let id = try await gateway.createRegistrationID(handle: request.uri.queryParameters.get("handle"), user: user)
                return json(200, Escaping.jsonString(id.rawValue))
            }
        }
        api.put("register/:id") { request, context in
            let user = context.user!
            let id = context.parameters.get("id") ?? ""
            return await respond {
                let body = try await collect(request, limit: maximumBodyBytes)
                try await gateway.upsertRegistration(id: id, try Gateway.DeviceRegistration(json: body), user: user)
                return Response(status: .ok)
            }
        }
        api.delete("register/:id") { _, context in
            let user = context.user!
            let id = context.parameters.get("id") ?? ""
            return await respond {
                try await gateway.deleteRegistration(id: id, user: user)
                return Response(status: .ok)
            }
        }
        api.post("notifications") { request, context in
            let user = context.user!
            return await respond {
                let body = try await collect(request, limit: maximumBodyBytes)
                let query = request.uri.queryParameters
                let sendRequest = Gateway.SendRequest(
                    pns: query.get("pns"), toTag: query.get("to_tag"), tagExpression: query.get("tags"), body: body)
                let secure = ["true", "1"].contains(query.get("secure")?.lowercased() ?? "")
                let outcome =
                    try await secure ? gateway.sendSecure(sendRequest, user: user) : gateway.send(sendRequest, user: user)
                metrics.sent(outcome.result)
                let wantsXML = (request.headers[.accept] ?? "").lowercased().contains("xml")
                if wantsXML {
                    return Response(
                        status: .init(code: outcome.status), headers: [.contentType: "application/xml; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: outcome.result.xmlDocument())))
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                var response = json(outcome.status, String(decoding: try encoder.encode(outcome.result), as: UTF8.self))
                if let secureID = outcome.secureID { response.headers[secureIDHeader] = secureID }
                return response
            }
        }
        api.get("notifications/:id") { _, context in
            let user = context.user!
            let id = context.parameters.get("id") ?? ""
            return await respond {
                let message = try await gateway.readSecure(id: id, user: user)
                return json(
                    200,
                    #"{"Id":\#(Escaping.jsonString(message.id)),"Payload":\#(Escaping.jsonString(message.payload)),"Read":\#(message.read)}"#
                )
            }
        }
        return router
    }

    /// Runs `body`, turning a ``GatewayError`` (or any other failure) into its error response.
    static func respond(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as GatewayError {
            return self.error(error)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return self.error(GatewayError(413, "request body too large"))
        } catch {
            return self.error(GatewayError(500, "internal error"))
        }
    }

    static func collect(_ request: Request, limit: Int) async throws -> [UInt8] {
        var request = request
        do {
            let buffer = try await request.collectBody(upTo: limit)
            return Array(buffer.readableBytesView)
        } catch {
            throw GatewayError(413, "request body is larger than \(limit) bytes")
        }
    }

    static func json(_ status: Int, _ text: String) -> Response {
        Response(
            status: .init(code: status), headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// `{"error": message, "status": code}`, with a Basic challenge when asked.
    static func error(_ error: GatewayError, challenge: Bool = false) -> Response {
        var response = json(error.status, #"{"error":\#(Escaping.jsonString(error.message)),"status":\#(error.status)}"#)
        if challenge { response.headers[.wwwAuthenticate] = #"Basic realm="pushgate", charset="UTF-8""# }
        return response
    }
}
