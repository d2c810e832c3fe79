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
            let found = try await gateway.registrations(user: user, tagExpression: query.get("tags"), limit: limit)
            return json(200, "[" + found.map(\.jsonLine).joined(separator: ",") + "]")
        }

        api.post("register") { request, context in
            let user = try context.authenticatedUser()
            let query = try QueryParameters(request.uri, accepting: ["handle"])
            let id = try await gateway.createRegistrationID(handle: query.get("handle"), user: user)
            return encoded(200, id.rawValue)
        }
        api.put("register/:id") { request, context in
            let user = try context.authenticatedUser()
            let id = decodedID(context)
            let body = try await collectJSON(request, limit: maximumBodyBytes)
            try await gateway.upsertRegistration(id: id, try Gateway.DeviceRegistration(json: body), user: user)
            return Response(status: .ok)
        }
        api.delete("register/:id") { _, context in
            let user = try context.authenticatedUser()
            try await gateway.deleteRegistration(id: decodedID(context), user: user)
            return Response(status: .ok)
        }
        api.post("notifications") { request, context in
            let user = try context.authenticatedUser()
            let body = try await collectJSON(request, limit: maximumBodyBytes)
            let query = try QueryParameters(request.uri, accepting: sendParameters)
            let secure = try query.flag("secure")
            // Checked before anything is stored (a secure send stores its message while preparing).
            let deliverAt = try gateway.scheduleTime(query.get("deliverAt"))
            var sendRequest = Gateway.SendRequest(
                pns: query.get("pns"), toTag: query.get("to_tag"), tagExpression: query.get("tags"), body: body,
                timeToLive: try Gateway.SendRequest.timeToLive(query.get("ttl")), deliverAt: deliverAt)
            sendRequest.validateOnly = try query.flag("validateOnly")
            sendRequest.fcmTopic = query.get("topic")
            sendRequest.fcmCondition = query.get("condition")
            if sendRequest.validateOnly && secure {
                throw GatewayError.badRequest("validateOnly cannot be combined with secure: a secure send stores its message")
            }
            let respondAsync = try asyncRequested(request, query: query)
            if deliverAt != nil, query.has("async"), try !query.flag("async") {
                throw GatewayError.badRequest("async=false contradicts deliverAt: a scheduled send is always answered 202 at once")
            }
            if let toTag = query.get("to_tag"), !toTag.isEmpty, let tags = query.get("tags"), !tags.isEmpty {
                throw GatewayError.badRequest("give to_tag (a user name) or tags (a tag expression), not both")
            }
            // A dry run: who it reaches and what each service would get; nothing stored or sent.
            if try query.flag("dryRun") {
                let sample = try integer(query.get("sample"), named: "sample", default: 10)
                return encoded(200, try await gateway.dryRun(sendRequest, secure: secure, user: user, sample: sample))
            }
            if respondAsync || deliverAt != nil { try gateway.outbox.require(for: "asynchronous and scheduled sends") }
            let scheduledOrAsync = respondAsync || deliverAt != nil
            let idempotencyKey = try gateway.idempotencyKey(
                header: request.headers[idempotencyKeyHeader],
                request: [
                    "POST /api/notifications", query.get("pns"), query.get("to_tag"), query.get("tags"), query.get("ttl"),
                    query.get("deliverAt"), secure ? "secure" : nil, respondAsync ? "async" : nil,
                    sendRequest.validateOnly ? "validateOnly" : nil, query.get("topic"), query.get("condition"),
                ], body: body)
            if let record = try await gateway.repeatedSend(idempotencyKey, sender: user.name) {
                guard scheduledOrAsync else { return try answer(gateway.replayed(record), request) }
                return accepted(Gateway.Accepted(record: record, replayed: true), respondAsync: respondAsync)
            }
            let prepared =
                try await secure
                ? gateway.prepareSecure(sendRequest, user: user, deliverAt: deliverAt) : gateway.prepare(sendRequest, user: user)
            if scheduledOrAsync {
                let accepted = try await gateway.enqueue(prepared, deliverAt: deliverAt, idempotencyKey: idempotencyKey)
                return self.accepted(accepted, respondAsync: respondAsync)
            }
            // Whose devices the send reached is the caller's to see only if they are the caller's.
            let disclosed = user.mayInspectDevices(ofAudience: prepared.audience.description)
            let accept = (request.headers[.accept] ?? "").lowercased()
            if accept.contains(progressMediaType) {
                return streamed(
                    prepared, gateway: gateway, metrics: metrics, logger: context.logger, idempotencyKey: idempotencyKey,
                    disclosed: disclosed)
            }
            var outcome = await deliverToCompletion(prepared, gateway: gateway, logger: context.logger, idempotencyKey: idempotencyKey)
            if !outcome.replayed { metrics.sent(outcome.result) }
            if !disclosed { outcome.result = outcome.result.withoutDevices() }
            return try answer(outcome, request)
        }
        api.get("notifications") { request, context in
            let user = try context.authenticatedUser()
            let query = try QueryParameters(request.uri, accepting: ["limit", "sender"])
            let limit = try integer(query.get("limit"), named: "limit", default: 50)
            let records = try await gateway.notificationRecords(user: user, sender: query.get("sender"), limit: limit)
            return encoded(200, records.map { NotificationRecordBody($0, failedTargets: nil, nextFailedAfter: nil) })
        }
        api.get("notifications/:id/outcome") { request, context in
            let user = try context.authenticatedUser()
            let record = try await gateway.notificationRecord(id: decodedID(context), user: user)
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
            let failed = disclosed ? try await gateway.failedTargets(of: record, after: after, limit: limit) : []
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
            let record = try await gateway.cancelNotification(id: decodedID(context), user: user)
            return encoded(record.state.isFinal ? 200 : 202, NotificationRecordBody(record, failedTargets: nil, nextFailedAfter: nil))
        }
        api.get("notifications/:id") { _, context in
            let user = try context.authenticatedUser()
            let message = try await gateway.readSecure(id: decodedID(context), user: user)
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

    /// Every query parameter `POST /api/notifications` takes; any other is a 400 naming it.
    static let sendParameters: Set<String> = [
        "pns", "to_tag", "tags", "ttl", "deliverAt", "async", "secure", "validateOnly", "topic", "condition", "dryRun", "sample",
    ]

    /// A send accepted for background delivery: `202` with its record and where to follow it.
    static func accepted(_ accepted: Gateway.Accepted, respondAsync: Bool) -> Response {
        let record = accepted.record
        var response = encoded(202, NotificationRecordBody(record, failedTargets: nil, nextFailedAfter: nil))
        response.headers[.location] = outcomePath(record.id)
        if respondAsync { response.headers[preferenceAppliedHeader] = "respond-async" }
        if let secureID = record.secureID { response.headers[secureIDHeader] = secureID }
        if accepted.replayed { response.headers[idempotentReplayedHeader] = "true" }
        return response
    }

    /// A synchronous send's answer: its result as JSON, or as NH's XML when the client accepts XML.
    static func answer(_ outcome: Gateway.SendOutcome, _ request: Request) throws(GatewayError) -> Response {
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
