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
    static let requestedWith = HTTPField.Name("X-Requested-With")!
    let authenticator: Authenticator

    func handle(
        _ request: Request, context: GatewayContext, next: (Request, GatewayContext) async throws -> Response
    ) async throws -> Response {
        // Script clients (the web console) say so, and get no challenge: a browser would answer it with its own password dialog.
        let challenge = request.headers[Self.requestedWith] == nil
        switch await authenticator.authenticate(request.headers[.authorization]) {
        case .user(let user):
            var context = context
            context.user = user
            return try await next(request, context)
        case .missing:
            return GatewayHTTP.error(
                GatewayError(401, "authentication required: send Authorization: Basic base64(user:password)"), challenge: challenge)
        case .refused:
            return GatewayHTTP.error(GatewayError(401, "wrong user name or password"), challenge: challenge)
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

    /// The media type of a streamed send: progress lines, then the result line.
    public static let progressMediaType = "application/x-ndjson"

    /// The router with every route; `maximumBodyBytes` bounds request bodies. The web console is
    /// served when `console.enabled`; its sandbox routes only with a `sandbox` bridge.
    public static func router(
        gateway: Gateway, authenticator: Authenticator, maximumBodyBytes: Int, metrics: GatewayMetrics = GatewayMetrics(),
        console: ConsoleConfiguration = ConsoleConfiguration(enabled: false), sandbox: SandboxBridge? = nil
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

        if console.enabled {
            router.get("console") { _, _ in
                Response(
                    status: .ok,
                    headers: [
                        .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                        .contentSecurityPolicy: ConsolePage.contentSecurityPolicy,
                    ],
                    body: .init(byteBuffer: ByteBuffer(string: ConsolePage.html)))
            }
            router.get("/") { _, _ in Response(status: .found, headers: [.location: "/console"]) }
        }

        let api = router.group("api").add(middleware: BasicAuthenticationMiddleware(authenticator: authenticator))

        api.get("me") { _, context in
            let user = context.user!
            let platforms = gateway.app.configuration.services.configuredPlatforms.map { Escaping.jsonString($0.rawValue) }
            return json(
                200,
                #"{"admin":\#(user.isAdmin),"platforms":[\#(platforms.joined(separator: ","))],"sandbox":\#(sandbox != nil),"user":\#(Escaping.jsonString(user.name))}"#
            )
        }
        api.get("registrations") { request, context in
            let user = context.user!
            return await respond {
                let query = request.uri.queryParameters
                let limitText = query.get("limit") ?? "100"
                guard let limit = Int(limitText) else { throw GatewayError.badRequest("limit must be a number, not '\(limitText)'") }
                let found = try await gateway.registrations(user: user, tagExpression: query.get("tags"), limit: limit)
                return json(200, "[" + found.map(\.jsonLine).joined(separator: ",") + "]")
            }
        }

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
                let prepared =
                    try await secure ? gateway.prepareSecure(sendRequest, user: user) : gateway.prepare(sendRequest, user: user)
                if (request.headers[.accept] ?? "").lowercased().contains(progressMediaType) {
                    return streamed(prepared, gateway: gateway, metrics: metrics)
                }
                let outcome = try await gateway.deliver(prepared)
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
        if let sandbox { addSandboxRoutes(to: api, sandbox) }
        return router
    }

    /// `/api/sandbox/devices…`: the sandbox's devices and inboxes, for the console.
    static func addSandboxRoutes(to api: RouterGroup<GatewayContext>, _ sandbox: SandboxBridge) {
        api.get("sandbox/devices") { _, _ in forwarded(await sandbox.forward("GET", "/devices")) }
        api.post("sandbox/devices") { request, _ in
            await respond {
                let body = try await collect(request, limit: 1024)
                guard let platform = (try? JSONParser.parse(body))?["platform"]?.stringValue, Platform(rawValue: platform) != nil else {
                    throw GatewayError.badRequest(#"body must be {"platform": "apns|fcm|gcm|wns"}"#)
                }
                return forwarded(await sandbox.forward("POST", "/devices", body: Array(#"{"platform":"\#(platform)"}"#.utf8)))
            }
        }
        api.get("sandbox/devices/:id/inbox") { _, context in
            let id = context.parameters.get("id") ?? ""
            guard SandboxBridge.isDeviceID(id) else { return error(GatewayError.badRequest("'\(id)' is not a sandbox device id")) }
            return forwarded(await sandbox.forward("GET", "/devices/\(id)/inbox"))
        }
        api.post("sandbox/devices/:id/:action") { _, context in
            let id = context.parameters.get("id") ?? ""
            let action = context.parameters.get("action") ?? ""
            guard SandboxBridge.isDeviceID(id) else { return error(GatewayError.badRequest("'\(id)' is not a sandbox device id")) }
            guard SandboxBridge.actions.contains(action) else {
                return error(
                    GatewayError.notFound("no device action '\(action)' (\(SandboxBridge.actions.sorted().joined(separator: ", ")))"))
            }
            return forwarded(await sandbox.forward("POST", "/devices/\(id)/\(action)"))
        }
    }

    static func forwarded(_ answer: (status: Int, body: String)) -> Response { json(answer.status, answer.body) }

    /// A send answered as it goes: a `{"progress": {"processed", "succeeded"}}` line after each
    /// batch of targets, then `{"status", "result", "secureId"}` (or `{"status", "error"}`). The
    /// HTTP status is 200 once streaming starts; the last line carries the send's own status.
    static func streamed(_ prepared: Gateway.PreparedSend, gateway: Gateway, metrics: GatewayMetrics) -> Response {
        Response(
            status: .ok, headers: [.contentType: "\(progressMediaType); charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                let (lines, continuation) = AsyncStream.makeStream(of: String.self)
                async let delivered: Result<Gateway.SendOutcome, GatewayError> = {
                    defer { continuation.finish() }
                    do throws(GatewayError) {
                        return .success(
                            try await gateway.deliver(
                                prepared,
                                progress: { progress in
                                    continuation.yield(
                                        #"{"progress":{"processed":\#(progress.processed),"succeeded":\#(progress.succeeded)}}"#)
                                }))
                    } catch {
                        return .failure(error)
                    }
                }()
                for await line in lines { try await writer.write(ByteBuffer(string: line + "\n")) }
                var last: String
                switch await delivered {
                case .success(let outcome):
                    metrics.sent(outcome.result)
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    let result = String(decoding: try encoder.encode(outcome.result), as: UTF8.self)
                    last = #"{"result":\#(result),"status":\#(outcome.status)"#
                    if let secureID = outcome.secureID { last += #","secureId":\#(Escaping.jsonString(secureID))"# }
                    last += "}"
                case .failure(let error):
                    last = #"{"error":\#(Escaping.jsonString(error.message)),"status":\#(error.status)}"#
                }
                try await writer.write(ByteBuffer(string: last + "\n"))
                try await writer.finish(nil)
            })
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
