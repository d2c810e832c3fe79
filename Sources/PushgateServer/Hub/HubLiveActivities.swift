import Foundation
import HTTPTypes
import Hummingbird
import Pushgate
import PushgateGateway

/// Live Activities through the hub API: an extension of ours (Notification Hubs has no way to
/// register a Live Activity token), in JSON, named in `docs/hub-api.md`.
///
/// - `PUT /{hub}/liveactivitytokens/{id}` (Listen): a push-to-start or update token as a
///   registration of the hub, written by the rules of every hub registration write (a Listen key
///   writes where it may write registrations; the hub's device quota);
/// - `DELETE /{hub}/liveactivitytokens/{id}` (Listen);
/// - `POST /{hub}/liveactivities/{name}?event=start|update|end[&owner=][&priority=][&channel=]`
///   (Send): a start (to the push-to-start tokens `ServiceBusNotification-Tags` selects), an
///   update or an end of the activity `name` of `owner` (a user of the tutorial API; the hub's
///   own tokens without it), or a broadcast to a channel. Stored and answered `201` with its
///   Location, as every hub send.
enum HubLiveActivities {
    static func addRoutes(
        route: (
            HTTPRequest.Method, RouterPath, AccessRight,
            @escaping @Sendable (Request, HubHTTP.HubCall) async throws -> any ResponseGenerator
        )
            -> Void,
        maximumBodyBytes limit: Int
    ) {
        route(.put, "liveactivitytokens/:id", .listen) { try await putToken($0, call: $1, limit: limit) }
        route(.delete, "liveactivitytokens/:id", .listen) { try await deleteToken($0, call: $1) }
        route(.post, "liveactivities/:name", .send) { try await send($0, call: $1, limit: limit) }
    }

    /// The body of `PUT /{hub}/liveactivitytokens/{id}`.
    struct TokenBody: Decodable {
        var kind: String
        var token: String
        var attributesType: String?
        var activity: String?
        var tags: [String]?
    }

    static func putToken(_ request: Request, call: HubHTTP.HubCall, limit: Int) async throws(GatewayError) -> EmptyAnswer {
        try HubHTTP.requireContentType(request, "json", "application/json")
        let id = try HubHTTP.registrationID(call.parameter("id"))
        let bytes = try await GatewayHTTP.collectJSON(request, limit: limit)
        let body: TokenBody
        do { body = try JSONDecoder().decode(TokenBody.self, from: Data(bytes)) } catch {
            throw .badRequest(
                "body: {\"kind\": \"pushToStart\" or \"liveActivity\", \"token\", \"attributesType\" or \"activity\", \"tags\"}")
        }
        let kind: RegistrationKind
        do { kind = try RegistrationKind(apiName: body.kind, attributesType: body.attributesType, activity: body.activity) } catch {
            throw .badRequest(error.description)
        }
        guard kind != .device else { throw .badRequest("kind: a device is registered at /registrations or /installations") }
        let gateway = call.gateway
        let handle: DeviceHandle
        do { handle = try gateway.app.configuration.handles.validate(body.token, for: .apns) } catch {
            throw .badRequest("token: \(error.description)")
        }
        let tags = try Installations.hubTags(body.tags ?? [], writer: call.writer, field: "tags")
        let registration: Registration
        do {
            // An update token dies with its activity (8 h + 4 h on the Lock Screen).
            let expiry =
                kind.activityName == nil ? nil : gateway.shared.clock.now.adding(seconds: LiveActivityMessage.maximumLifetimeSeconds)
            registration = try Registration(
                app: gateway.appID, id: id, handle: handle, tags: tags, expiresAt: expiry, owner: .hub, kind: kind)
        } catch {
            throw .badRequest("tags: \(error.description)")
        }
        // Only a token over a token: a device registration keeps its own routes.
        if let existing = try await gateway.installations.registration(id), existing.kind == .device {
            throw GatewayError(.conflict, "registration \(id) is a device's: Live Activity tokens take ids of their own")
        }
        try await gateway.installations.writeRegistration(
            registration, writer: call.writer, ifMatch: request.headers[HubHTTP.ifMatchHeader], client: call.client)
        return EmptyAnswer(.ok)
    }

    /// `DELETE /{hub}/liveactivitytokens/{id}`: a Live Activity token only (404 for anything else).
    static func deleteToken(_ request: Request, call: HubHTTP.HubCall) async throws(GatewayError) -> EmptyAnswer {
        let id = try HubHTTP.registrationID(call.parameter("id"))
        guard let existing = try await call.gateway.installations.registration(id), existing.kind != .device else {
            throw .notFound("no Live Activity token \(id)")
        }
        return try await HubHTTP.deleteRegistration(request, call: call)
    }

    static func send(_ request: Request, call: HubHTTP.HubCall, limit: Int) async throws(GatewayError) -> any ResponseGenerator {
        let query = try QueryParameters(request.uri, accepting: ["api-version", "event", "priority", "owner", "channel"])
        let body = try await GatewayHTTP.collectJSON(request, limit: limit)
        let activity = try TutorialAPI.liveActivity(
            name: call.parameter("name"), event: query.get("event"), priority: query.get("priority"), owner: query.get("owner"),
            tags: request.headers[HubHTTP.tagsHeader], channel: query.get("channel"))
        let command = SendCommand(
            route: .hubLiveActivity, sender: .hubKey(rule: call.grant.rule), audience: .liveActivity,
            content: .liveActivity(activity, body: body), mode: .asynchronous,
            idempotencyKey: request.headers[GatewayHTTP.idempotencyKeyHeader])
        guard case .accepted(let accepted) = try await call.gateway.sends.run(command, logger: call.gateway.logger) else {
            throw GatewayError(.misconfigured, "internal error: a hub Live Activity send is stored")
        }
        return HubHTTP.created(accepted.record.id, replayed: accepted.replayed, collection: "messages", request: request, call: call)
    }
}
