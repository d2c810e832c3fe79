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

/// The tutorials' app-backend API (mounted at `/api`): registrations, sends, secure push,
/// telemetry, cancel, the console's routes; every route behind Basic authentication, every
/// refusal answered as `{"error", "status"}` (``GatewayError``'s HTTP mapping).
///
/// Each route is a method: it parses the request, calls one of the gateway's services and
/// answers a value the request context's encoder writes (``JSONAnswer``; a status or headers
/// beside it with `EditedResponse`).
struct TutorialAPI: Sendable {
    let gateway: Gateway
    let maximumBodyBytes: Int
    let sandbox: SandboxBridge?
    let hubs: HubDirectory?
    /// The outcome webhooks' poster (for `/api/webhooks/test`), when an app has a receiver.
    var webhooks: WebhookPoster? = nil

    /// The routes, behind `authenticator`.
    func routes(authenticator: Authenticator) -> RouteCollection<GatewayContext> {
        let api = RouteCollection(context: GatewayContext.self).add(middleware: BasicAuthenticationMiddleware(authenticator: authenticator))
        api.get("me", use: me)
        api.get("registrations", use: registrations)
        api.post("register", use: reserveRegistrationID)
        api.put("register/:id", use: upsertRegistration)
        api.delete("register/:id", use: deleteRegistration)
        api.post("notifications", use: send)
        api.get("notifications", use: notifications)
        api.get("notifications/:id/outcome", use: outcome)
        api.delete("notifications/:id", use: cancel)
        api.get("notifications/:id", use: secureMessage)
        api.post("liveactivities/:name", use: sendLiveActivity)
        api.get("liveactivities", use: liveActivities)
        api.get("liveactivities/:name", use: liveActivity)
        ChannelsAPI(gateway: gateway, maximumBodyBytes: maximumBodyBytes).add(to: api)
        WebhooksAPI(gateway: gateway, poster: webhooks).add(to: api)
        if let sandbox { GatewayHTTP.addSandboxRoutes(to: api, sandbox, gateway: gateway) }
        // Anything else under /api: the API's own error shape, not the router's empty 404.
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            api.on("**", method: method) { request, _ -> Response in
                throw GatewayError.notFound("no \(request.method) \(request.uri.path.prefix(120)) in the API (see /openapi.json)")
            }
        }
        return api
    }

    /// `GET /api/me`: who is signed in; admins see the hubs with their rules' names and rights
    /// (never a key).
    @Sendable func me(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<MeBody> {
        let user = try context.authenticatedUser()
        let hubList = user.isAdmin ? hubs.map(HubSummary.list) : nil
        return JSONAnswer(
            MeBody(
                admin: user.isAdmin, hubs: hubList, platforms: gateway.app.configuration.services.configuredPlatforms.map(\.rawValue),
                sandbox: sandbox != nil, user: user.name))
    }

    /// `GET /api/registrations?tags=&limit=`: the user's own registrations.
    @Sendable func registrations(_ request: Request, context: GatewayContext) async throws -> JSONText {
        let user = try context.authenticatedUser()
        let query = try QueryParameters(request.uri, accepting: ["tags", "limit"])
        let limit = try GatewayHTTP.integer(query.get("limit"), named: "limit", default: 100)
        let found = try await gateway.registrations.list(user: user, tagExpression: query.get("tags"), limit: limit)
        // Each registration is written as its JSON line (`Registration.jsonLine`), as exported.
        return JSONText("[" + found.map(\.jsonLine).joined(separator: ",") + "]")
    }

    /// `POST /api/register?handle=`: a registration id (the one already holding the handle, if any).
    @Sendable func reserveRegistrationID(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<String> {
        let user = try context.authenticatedUser()
        let query = try QueryParameters(request.uri, accepting: ["handle"])
        return JSONAnswer(try await gateway.registrations.reserveID(handle: query.get("handle"), user: user).rawValue)
    }

    /// `PUT /api/register/{id}`: the device's platform, handle and tags.
    @Sendable func upsertRegistration(_ request: Request, context: GatewayContext) async throws -> HTTPResponse.Status {
        let user = try context.authenticatedUser()
        let id = GatewayHTTP.decodedID(context)
        let body = try await GatewayHTTP.collectJSON(request, limit: maximumBodyBytes)
        try await gateway.registrations.upsert(id: id, try Registrations.DeviceRegistration(json: body), user: user)
        return .ok
    }

    /// `DELETE /api/register/{id}`.
    @Sendable func deleteRegistration(_ request: Request, context: GatewayContext) async throws -> HTTPResponse.Status {
        let user = try context.authenticatedUser()
        try await gateway.registrations.delete(id: GatewayHTTP.decodedID(context), user: user)
        return .ok
    }

    /// `POST /api/notifications`: parse → ``Sends/run(_:logger:)`` → answer.
    @Sendable func send(_ request: Request, context: GatewayContext) async throws -> Response {
        let command = try await sendCommand(request, user: try context.authenticatedUser())
        switch try await gateway.sends.run(command, logger: context.logger) {
        case .dryRun(let report):
            return try JSONAnswer(report).response(from: request, context: context)
        case .accepted(let accepted):
            return try Self.accepted(accepted, respondAsync: command.mode == .asynchronous).response(from: request, context: context)
        case .delivered(let outcome):
            return try Self.answer(outcome, request).response(from: request, context: context)
        case .streamed(let send):
            return GatewayHTTP.streamed(send, logger: context.logger)
        }
    }

    /// `GET /api/notifications?sender=&limit=`: the caller's notifications (an admin's: anyone's).
    @Sendable func notifications(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<[NotificationRecordBody]> {
        let user = try context.authenticatedUser()
        let query = try QueryParameters(request.uri, accepting: ["limit", "sender"])
        let limit = try GatewayHTTP.integer(query.get("limit"), named: "limit", default: 50)
        let records = try await gateway.notifications.records(user: user, sender: query.get("sender"), limit: limit)
        return JSONAnswer(records.map { NotificationRecordBody($0, failedTargets: nil, nextFailedAfter: nil) })
    }

    /// `GET /api/notifications/{id}/outcome`: a notification's telemetry, in JSON or in NH's XML.
    @Sendable func outcome(_ request: Request, context: GatewayContext) async throws -> Response {
        let user = try context.authenticatedUser()
        let record = try await gateway.notifications.record(id: GatewayHTTP.decodedID(context), user: user)
        let query = try QueryParameters(request.uri, accepting: ["failedLimit", "failedAfter"])
        let limit = try GatewayHTTP.integer(query.get("failedLimit"), named: "failedLimit", default: 100)
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
        if GatewayHTTP.acceptsXML(request) {
            let failures = disclosed ? record.failed : 0
            let path = GatewayHTTP.outcomePath(record.id)
            return XMLAnswer(record.xmlDocument(location: path, failedTargetsURI: failures > 0 ? path + "?failedLimit=1000" : nil))
                .response(from: request, context: context)
        }
        return try JSONAnswer(NotificationRecordBody(record, failedTargets: failed, nextFailedAfter: next))
            .response(from: request, context: context)
    }

    /// `DELETE /api/notifications/{id}`: cancels it; 200 when it had ended, 202 while it stops.
    @Sendable func cancel(_ request: Request, context: GatewayContext) async throws -> EditedResponse<JSONAnswer<NotificationRecordBody>> {
        let user = try context.authenticatedUser()
        let record = try await gateway.notifications.cancel(id: GatewayHTTP.decodedID(context), user: user)
        return EditedResponse(
            status: record.state.isFinal ? .ok : .accepted,
            response: JSONAnswer(NotificationRecordBody(record, failedTargets: nil, nextFailedAfter: nil)))
    }

    /// `GET /api/notifications/{id}`: a secure send's message, for its recipient.
    @Sendable func secureMessage(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<SecureMessageBody> {
        let user = try context.authenticatedUser()
        let message = try await gateway.notifications.readSecure(id: GatewayHTTP.decodedID(context), user: user)
        return JSONAnswer(SecureMessageBody(id: message.id, payload: message.payload, read: message.read))
    }

    /// `POST /api/liveactivities/{name}?event=start|update|end&priority=10|5&tags=&async=`: a
    /// start, update or end of the caller's own activity `name` (`docs/live-activities.md`); the
    /// body's members are Apple's `aps` keys. Answered as a send is.
    @Sendable func sendLiveActivity(_ request: Request, context: GatewayContext) async throws -> Response {
        let user = try context.authenticatedUser()
        let body = try await GatewayHTTP.collectJSON(request, limit: maximumBodyBytes)
        let query = try QueryParameters(request.uri, accepting: ["event", "priority", "tags", "async", "channel"])
        let activity = try Self.liveActivity(
            name: GatewayHTTP.decodedParameter(context, "name"), event: query.get("event"), priority: query.get("priority"), owner: nil,
            tags: query.get("tags"), channel: query.get("channel"))
        let command = SendCommand(
            route: .tutorialLiveActivity, sender: .user(user), audience: .liveActivity, content: .liveActivity(activity, body: body),
            mode: try GatewayHTTP.asyncRequested(request, query: query) ? .asynchronous : .synchronous,
            idempotencyKey: request.headers[GatewayHTTP.idempotencyKeyHeader])
        switch try await gateway.sends.run(command, logger: context.logger) {
        case .accepted(let accepted):
            return try Self.accepted(accepted, respondAsync: true).response(from: request, context: context)
        case .delivered(let outcome):
            return try Self.answer(outcome, request).response(from: request, context: context)
        case .dryRun, .streamed:
            throw GatewayError.badRequest("a Live Activity send is answered when delivered, or at once with async=true")
        }
    }

    /// A Live Activity send's parameters, read strictly: both APIs' (`event`, `priority`).
    static func liveActivity(
        name: String, event: String?, priority: String?, owner: String?, tags: String?, channel: String?
    ) throws(GatewayError)
        -> SendCommand.LiveActivity
    {
        guard let text = event, let event = LiveActivityEvent(rawValue: text) else {
            throw .badRequest("event is required: start, update or end")
        }
        let priority = try GatewayHTTP.integer(priority, named: "priority", default: 10)
        return SendCommand.LiveActivity(name: name, event: event, priority: priority, owner: owner, tags: tags, channel: channel)
    }

    /// `GET /api/liveactivities?limit=`: the caller's activities (an admin's: everyone's), newest first.
    @Sendable func liveActivities(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<[LiveActivities.Activity]> {
        let user = try context.authenticatedUser()
        let query = try QueryParameters(request.uri, accepting: ["limit"])
        let limit = try GatewayHTTP.integer(query.get("limit"), named: "limit", default: 100)
        return JSONAnswer(try await gateway.liveActivities.list(owner: user.isAdmin ? nil : .user(user.name), limit: limit))
    }

    /// `GET /api/liveactivities/{name}?owner=`: the caller's activity (an admin's: `owner`'s, or
    /// the hub's as `$hub`), with the devices following it.
    @Sendable func liveActivity(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<LiveActivities.Activity> {
        let user = try context.authenticatedUser()
        let query = try QueryParameters(request.uri, accepting: ["owner"])
        var owner = RegistrationOwner.user(user.name)
        if let text = query.get("owner"), text != user.name {
            guard user.isAdmin else { throw GatewayError.forbidden("owner: a user sees their own activities only") }
            guard let named = RegistrationOwner(exportText: text) else {
                throw GatewayError.badRequest("owner '\(text.prefix(40))' is not a user name or $hub")
            }
            owner = named
        }
        return JSONAnswer(try await gateway.liveActivities.show(owner: owner, name: GatewayHTTP.decodedParameter(context, "name")))
    }

    /// The tutorial API's send request as a ``SendCommand``: its query parameters read strictly
    /// (``sendParameters``), the body, `Prefer`, `Accept` and `Idempotency-Key`.
    func sendCommand(_ request: Request, user: AuthenticatedUser) async throws(GatewayError) -> SendCommand {
        let body = try await GatewayHTTP.collectJSON(request, limit: maximumBodyBytes)
        let query = try QueryParameters(request.uri, accepting: Self.sendParameters)
        let secure = try query.flag("secure")
        let deliverAt = try gateway.sends.scheduleTime(query.get("deliverAt")).map {
            SendCommand.Given($0, text: query.get("deliverAt") ?? "")
        }
        let timeToLive = try SendCommand.timeToLive(parsing: query.get("ttl")).map { SendCommand.Given($0, text: query.get("ttl") ?? "") }
        let audience = try SendCommand.Audience.tutorial(
            toTag: query.get("to_tag"), tags: query.get("tags"), topic: query.get("topic"), condition: query.get("condition"))
        let streaming = (request.headers[.accept] ?? "").lowercased().contains(GatewayHTTP.progressMediaType)
        var mode: SendCommand.Mode?
        if try query.flag("dryRun") {
            mode = .dryRun(sample: try GatewayHTTP.integer(query.get("sample"), named: "sample", default: 10))
        } else if try GatewayHTTP.asyncRequested(request, query: query) {
            mode = .asynchronous
        } else if query.has("async") && (deliverAt != nil || !streaming) {
            mode = .synchronous  // async=false, said explicitly (which a delivery time contradicts)
        } else if streaming {
            mode = .streamed
        }
        return SendCommand(
            route: .tutorialNotifications, sender: .user(user), audience: audience, content: .message(body: body, secure: secure),
            platforms: query.get("pns"), mode: mode, deliverAt: deliverAt, timeToLive: timeToLive,
            validateOnly: try query.flag("validateOnly"), idempotencyKey: request.headers[GatewayHTTP.idempotencyKeyHeader])
    }

    /// Every query parameter `POST /api/notifications` takes; any other is a 400 naming it.
    static let sendParameters: Set<String> = [
        "pns", "to_tag", "tags", "ttl", "deliverAt", "async", "secure", "validateOnly", "topic", "condition", "dryRun", "sample",
    ]

    /// A send accepted for background delivery: `202` with its record and where to follow it.
    static func accepted(_ accepted: Sends.Accepted, respondAsync: Bool) -> EditedResponse<JSONAnswer<NotificationRecordBody>> {
        let record = accepted.record
        var headers: HTTPFields = [.location: GatewayHTTP.outcomePath(record.id)]
        if respondAsync { headers[GatewayHTTP.preferenceAppliedHeader] = "respond-async" }
        if let secureID = record.secureID { headers[GatewayHTTP.secureIDHeader] = secureID }
        if accepted.replayed { headers[GatewayHTTP.idempotentReplayedHeader] = "true" }
        return EditedResponse(
            status: .accepted, headers: headers,
            response: JSONAnswer(NotificationRecordBody(record, failedTargets: nil, nextFailedAfter: nil)))
    }

    /// A synchronous send's answer: its result as JSON, or as NH's XML when the client accepts XML.
    static func answer(_ outcome: Sends.SendOutcome, _ request: Request) throws(GatewayError) -> EditedResponse<ResultAnswer> {
        if let refusal = outcome.refusal { throw refusal }
        var headers = HTTPFields()
        let body: ResultAnswer
        if GatewayHTTP.acceptsXML(request) {
            body = .xml(XMLAnswer(outcome.result.xmlDocument()))
        } else {
            body = .json(outcome.result)
            if let secureID = outcome.secureID { headers[GatewayHTTP.secureIDHeader] = secureID }
        }
        if outcome.httpStatus == 202 { headers[.location] = GatewayHTTP.outcomePath(outcome.result.notificationID) }
        if outcome.replayed { headers[GatewayHTTP.idempotentReplayedHeader] = "true" }
        return EditedResponse(status: .init(code: outcome.httpStatus), headers: headers, response: body)
    }
}
