import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateCore
import PushgateDispatch
import PushgateXML

extension GatewayHTTP {
    /// The tutorials' app-backend API (mounted at `/api`): registrations, sends, secure push,
    /// telemetry, cancel, the console's routes; every route behind Basic authentication, every
    /// refusal answered as `{"error", "status"}` (``GatewayError``'s HTTP mapping).
    static func tutorialAPI(
        gateway: Gateway, authenticator: Authenticator, maximumBodyBytes: Int, metrics: GatewayMetrics, sandbox: SandboxBridge?,
        hubs: HubDirectory?
    ) -> RouteCollection<GatewayContext> {
        let api = RouteCollection(context: GatewayContext.self).add(middleware: BasicAuthenticationMiddleware(authenticator: authenticator))

        api.get("me") { _, context in
            let user = try context.authenticatedUser()
            // Admins see the hubs with their rules' names and rights (never a key).
            let hubList = user.isAdmin ? hubs.map(HubSummary.list) : nil
            return encoded(
                200,
                MeBody(
                    admin: user.isAdmin, hubs: hubList, platforms: gateway.app.configuration.services.configuredPlatforms.map(\.rawValue),
                    sandbox: sandbox != nil, user: user.name))
        }
        api.get("registrations") { request, context in
            let user = try context.authenticatedUser()
            let query = try QueryParameters(request.uri, accepting: ["tags", "limit"])
            let limit = try integer(query.get("limit"), named: "limit", default: 100)
            let found = try await gateway.registrations.list(user: user, tagExpression: query.get("tags"), limit: limit)
            return json(200, "[" + found.map(\.jsonLine).joined(separator: ",") + "]")
        }

        api.post("register") { request, context in
            let user = try context.authenticatedUser()
            let query = try QueryParameters(request.uri, accepting: ["handle"])
            let id = try await gateway.registrations.reserveID(handle: query.get("handle"), user: user)
            return encoded(200, id.rawValue)
        }
        api.put("register/:id") { request, context in
            let user = try context.authenticatedUser()
            let id = decodedID(context)
            let body = try await collectJSON(request, limit: maximumBodyBytes)
            try await gateway.registrations.upsert(id: id, try Gateway.DeviceRegistration(json: body), user: user)
            return Response(status: .ok)
        }
        api.delete("register/:id") { _, context in
            let user = try context.authenticatedUser()
            try await gateway.registrations.delete(id: decodedID(context), user: user)
            return Response(status: .ok)
        }
        api.post("notifications") { request, context in
            try await notify(request, context: context, gateway: gateway, maximumBodyBytes: maximumBodyBytes)
        }
        api.get("notifications") { request, context in
            let user = try context.authenticatedUser()
            let query = try QueryParameters(request.uri, accepting: ["limit", "sender"])
            let limit = try integer(query.get("limit"), named: "limit", default: 50)
            let records = try await gateway.notifications.records(user: user, sender: query.get("sender"), limit: limit)
            return encoded(200, records.map { NotificationRecordBody($0, failedTargets: nil, nextFailedAfter: nil) })
        }
        api.get("notifications/:id/outcome") { request, context in
            let user = try context.authenticatedUser()
            let record = try await gateway.notifications.record(id: decodedID(context), user: user)
            let query = try QueryParameters(request.uri, accepting: ["failedLimit", "failedAfter"])
            let limit = try integer(query.get("failedLimit"), named: "failedLimit", default: 100)
            // The failed devices are listed to whoever may see whose devices the send reached;
            // anyone else reads the counts (their cursor would name a device too).
            let disclosed = user.mayInspectDevices(ofAudience: record.audience)
            var after: String?
            if let cursor = query.get("failedAfter") {
                guard disclosed, let id = FailureCursor.registrationID(cursor) else {
                    throw GatewayError.badRequest("failedAfter: '\(QueryParameters.quoted(cursor))' is not a cursor this gateway gave")
                }
                after = id
            }
            let failed = disclosed ? try await gateway.notifications.failedTargets(of: record, after: after, limit: limit) : []
            let next = failed.count == limit ? failed.last.map { FailureCursor.token(after: $0.registrationID.rawValue) } : nil
            if (request.headers[.accept] ?? "").lowercased().contains("xml") {
                let failures = disclosed ? record.failed : 0
                return Response(
                    status: .ok, headers: [.contentType: "application/xml; charset=utf-8"],
                    body: .init(
                        byteBuffer: ByteBuffer(
                            bytes: record.xmlDocument(
                                location: outcomePath(record.id),
                                failedTargetsURI: failures > 0 ? outcomePath(record.id) + "?failedLimit=1000" : nil))))
            }
            return encoded(200, NotificationRecordBody(record, failedTargets: failed, nextFailedAfter: next))
        }
        api.delete("notifications/:id") { _, context in
            let user = try context.authenticatedUser()
            let record = try await gateway.notifications.cancel(id: decodedID(context), user: user)
            return encoded(record.state.isFinal ? 200 : 202, NotificationRecordBody(record, failedTargets: nil, nextFailedAfter: nil))
        }
        api.get("notifications/:id") { _, context in
            let user = try context.authenticatedUser()
            let message = try await gateway.notifications.readSecure(id: decodedID(context), user: user)
            return encoded(200, SecureMessageBody(id: message.id, payload: message.payload, read: message.read))
        }
        if let sandbox { addSandboxRoutes(to: api, sandbox, gateway: gateway) }
        // Anything else under /api: the API's own error shape, not the router's empty 404.
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            api.on("**", method: method) { request, _ -> Response in
                throw GatewayError.notFound("no \(request.method) \(request.uri.path.prefix(120)) in the API (see /openapi.json)")
            }
        }
        return api
    }

    /// `POST /api/notifications`: parse → ``Sends/run(_:logger:)`` → answer.
    static func notify(
        _ request: Request, context: GatewayContext, gateway: Gateway, maximumBodyBytes: Int
    ) async throws -> Response {
        let command = try await sendCommand(
            request, user: try context.authenticatedUser(), gateway: gateway, maximumBodyBytes: maximumBodyBytes)
        switch try await gateway.sends.run(command, logger: context.logger) {
        case .dryRun(let report): return encoded(200, report)
        case .accepted(let accepted): return self.accepted(accepted, respondAsync: command.mode == .asynchronous)
        case .delivered(let outcome): return try answer(outcome, request)
        case .streamed(let send): return streamed(send, logger: context.logger)
        }
    }

    /// The tutorial API's send request as a ``SendCommand``: its query parameters read strictly
    /// (``sendParameters``), the body, `Prefer`, `Accept` and `Idempotency-Key`.
    static func sendCommand(
        _ request: Request, user: AuthenticatedUser, gateway: Gateway, maximumBodyBytes: Int
    ) async throws(GatewayError) -> SendCommand {
        let body = try await collectJSON(request, limit: maximumBodyBytes)
        let query = try QueryParameters(request.uri, accepting: sendParameters)
        let secure = try query.flag("secure")
        let deliverAt = try gateway.sends.scheduleTime(query.get("deliverAt")).map {
            SendCommand.Given($0, text: query.get("deliverAt") ?? "")
        }
        let timeToLive = try Sends.SendRequest.timeToLive(query.get("ttl")).map { SendCommand.Given($0, text: query.get("ttl") ?? "") }
        let audience = try SendCommand.Audience.tutorial(
            toTag: query.get("to_tag"), tags: query.get("tags"), topic: query.get("topic"), condition: query.get("condition"))
        let streaming = (request.headers[.accept] ?? "").lowercased().contains(progressMediaType)
        var mode: SendCommand.Mode?
        if try query.flag("dryRun") {
            mode = .dryRun(sample: try integer(query.get("sample"), named: "sample", default: 10))
        } else if try asyncRequested(request, query: query) {
            mode = .asynchronous
        } else if query.has("async") && (deliverAt != nil || !streaming) {
            mode = .synchronous  // async=false, said explicitly (which a delivery time contradicts)
        } else if streaming {
            mode = .streamed
        }
        return SendCommand(
            route: .tutorialNotifications, sender: .user(user), audience: audience, content: .message(body: body, secure: secure),
            platforms: query.get("pns"), mode: mode, deliverAt: deliverAt, timeToLive: timeToLive,
            validateOnly: try query.flag("validateOnly"), idempotencyKey: request.headers[idempotencyKeyHeader])
    }

    /// Every query parameter `POST /api/notifications` takes; any other is a 400 naming it.
    static let sendParameters: Set<String> = [
        "pns", "to_tag", "tags", "ttl", "deliverAt", "async", "secure", "validateOnly", "topic", "condition", "dryRun", "sample",
    ]

    /// A send accepted for background delivery: `202` with its record and where to follow it.
    static func accepted(_ accepted: Sends.Accepted, respondAsync: Bool) -> Response {
        let record = accepted.record
        var response = encoded(202, NotificationRecordBody(record, failedTargets: nil, nextFailedAfter: nil))
        response.headers[.location] = outcomePath(record.id)
        if respondAsync { response.headers[preferenceAppliedHeader] = "respond-async" }
        if let secureID = record.secureID { response.headers[secureIDHeader] = secureID }
        if accepted.replayed { response.headers[idempotentReplayedHeader] = "true" }
        return response
    }

    /// A synchronous send's answer: its result as JSON, or as NH's XML when the client accepts XML.
    static func answer(_ outcome: Sends.SendOutcome, _ request: Request) throws(GatewayError) -> Response {
        if let refusal = outcome.refusal { throw refusal }
        var response: Response
        if (request.headers[.accept] ?? "").lowercased().contains("xml") {
            response = Response(
                status: .init(code: outcome.httpStatus), headers: [.contentType: "application/xml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: outcome.result.xmlDocument())))
        } else {
            response = encoded(outcome.httpStatus, outcome.result)
            if let secureID = outcome.secureID { response.headers[secureIDHeader] = secureID }
        }
        if outcome.httpStatus == 202 { response.headers[.location] = outcomePath(outcome.result.notificationID) }
        if outcome.replayed { response.headers[idempotentReplayedHeader] = "true" }
        return response
    }
}
