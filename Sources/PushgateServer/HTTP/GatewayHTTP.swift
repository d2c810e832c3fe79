import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateDispatch
import PushgateGateway
import PushgateWebhooks
import PushgateXML

/// Builds the Hummingbird router serving the tutorials' app-backend API.
///
/// Handlers throw ``GatewayError`` for every refusal (it is an `HTTPResponseError`); answers are
/// values the request context's encoder writes (``JSONAnswer``); ``encoded(_:_:)`` writes the
/// answers no route gives (errors, the sandbox's forwarded ones) with the same encoder.
public enum GatewayHTTP {
    /// The header carrying a secure send's id in the response.
    public static let secureIDHeader = HTTPField.Name("X-Pushgate-Secure-Id")!

    /// The media type of a streamed send: progress lines, then the result line.
    public static let progressMediaType = "application/x-ndjson"

    /// The router with every route; `maximumBodyBytes` bounds request bodies. The web console is
    /// served when `console.enabled`; its sandbox routes only with a `sandbox` bridge. `/metrics`
    /// is served for those `metricsAccess` permits, or not at all (nil: on a listener of its own).
    /// With `tracing` on, every request gets a span (``RequestTracingMiddleware``). `/healthz`
    /// answers from the database's `health` monitor (nil: a store with no database to watch).
    public static func router(
        gateway: Gateway, authenticator: Authenticator, maximumBodyBytes: Int, metrics: GatewayMetrics? = nil,
        console: ConsoleConfiguration = ConsoleConfiguration(enabled: false), sandbox: SandboxBridge? = nil, hubs: HubDirectory? = nil,
        scheme: String = "http", metricsAccess: MetricsAccess? = .open, tracing: PushgateTracing = .off, health: HealthMonitor? = nil,
        webhooks: WebhookPoster? = nil
    ) -> Router<GatewayContext> {
        let metrics = metrics ?? gateway.metrics
        // HEAD answers as GET does, without the body (RFC 9110 section 9.3.2).
        let router = Router(context: GatewayContext.self, options: .autoGenerateHeadEndpoints)
        if tracing.isEnabled { router.add(middleware: RequestTracingMiddleware(tracer: tracing.tracer)) }
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        router.add(
            middleware: AllowedMethodsMiddleware(
                serves: { template in
                    switch template {
                    case "/", "/console": console.enabled
                    case "/metrics": metricsAccess != nil
                    default: !template.hasPrefix("/api/sandbox/") || sandbox != nil
                    }
                }, isHub: { hubs?.hub(named: String($0)) != nil }))
        if let metricsAccess { addMetrics(to: router, metrics: metrics, access: metricsAccess) }
        addHealth(to: router, health: health)

        // The contract of both APIs (OpenAPI 3.1), as docs/openapi.json keeps it.
        router.get("openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json)))
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

        router.addRoutes(
            TutorialAPI(gateway: gateway, maximumBodyBytes: maximumBodyBytes, sandbox: sandbox, hubs: hubs, webhooks: webhooks)
                .routes(authenticator: authenticator),
            atPath: "api")
        if let hubs {
            router.addRoutes(HubHTTP.routes(hubs: hubs, maximumBodyBytes: maximumBodyBytes, scheme: scheme, clients: authenticator.clients))
        }
        return router
    }

    /// A whole-number query parameter (absent or empty: `default`), naming it and at most 40
    /// characters of a wrong value; its range is the core's to check.
    static func integer(_ text: String?, named name: String, default value: Int) throws(GatewayError) -> Int {
        guard let text, !text.isEmpty else { return value }
        guard let number = Int(text) else { throw .badRequest("\(name) must be a number, not '\(text.prefix(40))'") }
        return number
    }

    /// The sandbox's answer: as it is when it succeeded, else in the API's error shape (with its
    /// message when it gave one).
    static func forwarded(_ answer: (status: Int, body: String)) -> Response {
        guard !(200..<300).contains(answer.status) else { return json(answer.status, answer.body) }
        let message =
            (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])?["error"] as? String ?? answer.body
        return encoded(answer.status, ErrorBody(error: GatewayError(.invalid, message).message, status: answer.status))
    }

    /// The `:id` path parameter, percent-decoded.
    static func decodedID(_ context: GatewayContext) -> String { decodedParameter(context, "id") }

    /// A path parameter, percent-decoded.
    static func decodedParameter(_ context: GatewayContext, _ name: String) -> String {
        let raw = context.parameters.get(name) ?? ""
        return raw.removingPercentEncoding ?? raw
    }

    static let preferHeader = HTTPField.Name("Prefer")!
    /// The IETF idempotency-key draft's request header, on sends.
    public static let idempotencyKeyHeader = HTTPField.Name("Idempotency-Key")!
    /// Set on the answer to a repeat of a send: the first one's notification, not sent again.
    public static let idempotentReplayedHeader = HTTPField.Name("Idempotent-Replayed")!
    static let preferenceAppliedHeader = HTTPField.Name("Preference-Applied")!

    /// Where a notification's telemetry is read.
    public static func outcomePath(_ id: String) -> String { "/api/notifications/\(id)/outcome" }

    /// Whether the client asked for a `202 Accepted` once the send is stored: `?async=true`, or
    /// `Prefer: respond-async` (RFC 7240) unless `?async=false` says otherwise.
    static func asyncRequested(_ request: Request, query: QueryParameters) throws(GatewayError) -> Bool {
        let preferences = request.headers[values: preferHeader].flatMap { $0.split(separator: ",") }
            .map { $0.split(separator: ";").first.map { $0.trimmed(of: " \t").lowercased() } ?? "" }
        // An explicit ?async= wins over the header.
        return try query.flag("async", default: preferences.contains("respond-async"))
    }

    /// A send answered as it goes: a `{"progress": {"processed", "succeeded"}}` line after each
    /// batch of targets, then `{"status", "result", "secureId"}`. The HTTP status is 200 once
    /// streaming starts; the last line carries the send's own status.
    ///
    /// A client that disconnects does not stop the send: it carries on to its end, and its
    /// outcomes go to the metrics and the log, as for a non-streamed send.
    static func streamed(_ send: Sends.StreamedSend, logger: Logger) -> Response {
        Response(
            status: .ok, headers: [.contentType: "\(progressMediaType); charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                // Progress is cumulative: a slow reader skips lines rather than buffering them all.
                let (lines, continuation) = AsyncStream.makeStream(of: DispatchProgressLine.self, bufferingPolicy: .bufferingNewest(8))
                async let delivered: Sends.SendOutcome = {
                    defer { continuation.finish() }
                    return await send.run { continuation.yield(DispatchProgressLine(processed: $0.processed, succeeded: $0.succeeded)) }
                }()
                var connected = true
                for await line in lines {
                    guard connected else { continue }
                    do { try await writer.write(encodedLine(ProgressBody(progress: line))) } catch { connected = false }
                    if Task.isCancelled { break }
                }
                let outcome = await delivered
                guard connected else {
                    logger.notice(
                        "streamed send finished after its client disconnected",
                        metadata: [
                            "notification": "\(outcome.result.notificationID)", "succeeded": "\(outcome.result.successCount)",
                            "failed": "\(outcome.result.failureCount)",
                        ])
                    return
                }
                try await writer.write(
                    encodedLine(StreamedResultBody(result: outcome.result, status: outcome.httpStatus, secureId: outcome.secureID)))
                try await writer.finish(nil)
            })
    }

    /// The request body, at most `limit` bytes, when it is declared JSON (or not declared).
    static func collectJSON(_ request: Request, limit: Int) async throws(GatewayError) -> [UInt8] {
        if let type = request.headers[.contentType] {
            let mediaType = type.split(separator: ";").first.map { $0.trimmed(of: " \t").lowercased() } ?? ""
            guard mediaType == "application/json" || mediaType.hasSuffix("+json") else {
                throw GatewayError(.unsupportedMediaType, "Content-Type: expected application/json, not '\(type.prefix(100))'")
            }
        }
        return try await request.collectedBytes(limit: limit)
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// A JSON answer.
    static func encoded(_ status: Int, _ value: some Encodable) -> Response {
        let bytes = (try? encoder.encode(value)) ?? Data(#"{"error":"internal error: the answer could not be encoded","status":500}"#.utf8)
        return json(status, ByteBuffer(bytes: bytes))
    }

    /// One line of a streamed answer.
    static func encodedLine(_ value: some Encodable) -> ByteBuffer {
        var buffer = ByteBuffer(bytes: (try? encoder.encode(value)) ?? Data("{}".utf8))
        buffer.writeString("\n")
        return buffer
    }

    static func json(_ status: Int, _ text: String) -> Response { json(status, ByteBuffer(string: text)) }

    /// A JSON answer already written.
    static func json(_ status: Int, _ body: ByteBuffer) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body))
    }

    /// Whether the client asks for XML (Notification Hubs' documents) rather than JSON.
    static func acceptsXML(_ request: Request) -> Bool { (request.headers[.accept] ?? "").containsIgnoringASCIICase("xml") }
}
