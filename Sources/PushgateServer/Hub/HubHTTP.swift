import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateGateway
import PushgateXML

/// The Notification Hubs REST API on `/{hub}/…`: sends (native, template, direct, test),
/// scheduled sends, telemetry, registrations (Atom XML) and installations (JSON), each request
/// authorized by a Shared Access Signature of one of the hub's rules.
///
/// (A namespace of about 35 members: one handler per route, the headers NH names, and the
/// authorization; the sends, registrations and installations are in extensions and
/// ``HubInstallations``.)
enum HubHTTP {
    /// The API versions Notification Hubs clients send.
    static let apiVersions: Set<String> = [
        "2013-04", "2013-07", "2013-08", "2013-10", "2014-01", "2014-08", "2014-09", "2015-01", "2015-04", "2015-08", "2016-03",
        "2016-07", "2017-04", "2017-11", "2020-06",
    ]
    static let formatHeader = HTTPField.Name("ServiceBusNotification-Format")!
    static let tagsHeader = HTTPField.Name("ServiceBusNotification-Tags")!
    static let deviceHandleHeader = HTTPField.Name("ServiceBusNotification-DeviceHandle")!
    /// A browser direct send's subscription keys (Notification Hubs' Web Push direct sends).
    static let p256dhHeader = HTTPField.Name("P256DH")!
    static let authHeader = HTTPField.Name("Auth")!
    static let scheduleTimeHeader = HTTPField.Name("ServiceBusNotification-ScheduleTime")!
    static let testSendHeader = HTTPField.Name("ServiceBusNotification-TestSend")!
    static let trackingIDHeader = HTTPField.Name("TrackingId")!
    static let continuationHeader = HTTPField.Name("X-MS-ContinuationToken")!
    static let etagHeader = HTTPField.Name("ETag")!
    static let ifMatchHeader = HTTPField.Name("If-Match")!

    /// The Notification Hubs API's routes under `/{hub}/…`; `scheme` is how clients reach this
    /// listener (`https`).
    static func routes(
        hubs: HubDirectory, maximumBodyBytes: Int, scheme: String, clients: ClientAddressResolver
    ) -> RouteCollection<GatewayContext> {
        let router = RouteCollection(context: GatewayContext.self)
        // Every hub route runs in a context that has its authorized call: the middleware checks the
        // hub, the API version and the signature first, and answers every refusal and error of the
        // hub's routes as NH's XML <Error>; each route then checks the right it needs.
        let authorized = router.group(":hub").add(middleware: HubAuthorizationMiddleware(hubs: hubs, scheme: scheme, clients: clients))
            .group(context: HubRequestContext.self)
        // The one table of the hub's resources and their methods: what each route adds, read
        // again below for the 405 and OPTIONS answers.
        var resources: [(path: RouterPath, methods: [HTTPRequest.Method])] = []
        func route(
            _ method: HTTPRequest.Method, _ path: RouterPath, _ right: AccessRight,
            _ handler: @escaping @Sendable (Request, HubCall) async throws -> any ResponseGenerator
        ) {
            if let index = resources.firstIndex(where: { $0.path == path }) {
                resources[index].methods.append(method)
            } else {
                resources.append((path, [method]))
            }
            authorized.on(path, method: method) { request, context in
                try context.call.require(right)
                return try await handler(request, context.call).response(from: request, context: context)
            }
        }
        // Unauthenticated answers under a configured hub (405, 404), as NH gives them.
        let group = router.group(":hub")

        let limit = maximumBodyBytes
        route(.post, "messages", .send) { try await send($0, call: $1, limit: limit, scheduled: false) }
        route(.post, "messages/$batch", .send) { try await batchSend($0, call: $1, limit: limit) }
        route(.post, "schedulednotifications", .send) { try await send($0, call: $1, limit: limit, scheduled: true) }
        route(.delete, "schedulednotifications/:id", .send) { try await cancelScheduled($0, call: $1) }
        route(.get, "messages/:id", .send) { try await message($0, call: $1) }
        route(.post, "registrationIDs", .listen) { try await reserveRegistrationID($0, call: $1) }
        route(.post, "registrations", .listen) { try await createRegistration($0, call: $1, limit: limit) }
        route(.put, "registrations/:id", .listen) { try await replaceRegistration($0, call: $1, limit: limit) }
        route(.get, "registrations/:id", .listen) { try await readRegistration($0, call: $1) }
        route(.delete, "registrations/:id", .listen) { try await deleteRegistration($0, call: $1) }
        route(.get, "registrations", .manage) { try await list($0, call: $1, tag: nil) }
        route(.get, "tags/:tag/registrations", .manage) { try await list($0, call: $1, tag: $1.parameter("tag")) }
        HubInstallations.addRoutes(route: route, maximumBodyBytes: limit)
        HubLiveActivities.addRoutes(route: route, maximumBodyBytes: limit)
        // Anything else under a configured hub: NH's XML error; 405 naming the methods a known
        // resource takes (any method a client may try, QUERY included: RFC 9110's registry).
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch, .trace, HTTPRequest.Method("QUERY")!]
        for (path, allowed) in resources {
            // HEAD wherever GET goes (the router generates it), OPTIONS everywhere.
            let allow = (allowed + (allowed.contains(.get) ? [.head] : []) + [.options]).map(\.rawValue).joined(separator: ", ")
            group.on(path, method: .options) { _, context in
                guard hubs.hub(named: context.parameters.get("hub") ?? "") != nil else { return Response(status: .notFound) }
                return Response(status: .noContent, headers: [.allow: allow])
            }
            for method in methods where !allowed.contains(method) {
                group.on(path, method: method) { request, context in
                    guard hubs.hub(named: context.parameters.get("hub") ?? "") != nil else { return Response(status: .notFound) }
                    var response = errorResponse(
                        GatewayError(
                            .methodNotAllowed,
                            "\(request.method.rawValue) is not allowed on \(request.uri.path.prefix(120)); use \(allow)"
                        ))
                    response.headers[.allow] = allow
                    return response
                }
            }
        }
        for method in methods {
            group.on("**", method: method) { request, context in
                guard hubs.hub(named: context.parameters.get("hub") ?? "") != nil else { return Response(status: .notFound) }
                return errorResponse(GatewayError.notFound("no resource \(request.uri.path.prefix(120)) in this hub"))
            }
        }
        return router
    }

    // MARK: Routes (each: parse → one service call → answer)

    /// `DELETE /{hub}/schedulednotifications/{id}`: only a notification still waiting for its
    /// time is a scheduled one (NH: 404 otherwise).
    static func cancelScheduled(_ request: Request, call: HubCall) async throws(GatewayError) -> EmptyAnswer {
        let id = call.parameter("id")
        let existing = try? await call.gateway.notifications.record(id: id, user: call.user)
        guard let existing, existing.state == .scheduled, !existing.cancelRequested else {
            throw GatewayError.notFound("no scheduled notification '\(id.prefix(64))' is waiting to be sent")
        }
        _ = try await call.gateway.notifications.cancel(id: id, user: call.user)
        return EmptyAnswer(.ok)
    }

    /// `GET /{hub}/messages/{id}`: a send's NotificationDetails.
    static func message(_ request: Request, call: HubCall) async throws(GatewayError) -> XMLAnswer {
        var record = try await call.gateway.notifications.record(id: call.parameter("id"), user: call.user)
        // NH counts only the registrations a send targets: those it passed over (a template
        // registration under a native send, a handle another registration holds) are left out.
        for platform in record.counts.keys { record.counts[platform]?[.skipped] = nil }
        let location = "\(call.namespaceBase)/messages/\(record.id)?api-version=\(call.apiVersion)"
        return XMLAnswer(record.xmlDocument(location: location, failedTargetsURI: nil, spelling: .notificationHubs))
    }

    /// `POST /{hub}/registrationIDs`: `201` whose Location's last segment is the id, as NH answers.
    static func reserveRegistrationID(_ request: Request, call: HubCall) async throws(GatewayError) -> EmptyAnswer {
        let id = try await call.gateway.installations.reserveRegistrationID(rule: call.grant.rule, client: call.client)
        return EmptyAnswer(.created, headers: [.location: "\(call.base)/registrationids/\(id.rawValue)?api-version=\(call.apiVersion)"])
    }

    /// `POST /{hub}/registrations`: an Atom entry, stored under a new id.
    static func createRegistration(_ request: Request, call: HubCall, limit: Int) async throws(GatewayError) -> EditedResponse<XMLAnswer> {
        try requireContentType(request, "xml", "an Atom entry (application/atom+xml;type=entry)")
        let description = try HubRegistrationXML.parse(try await body(request, limit: limit))
        return entry(try await upsert(description, id: RegistrationID.random(), call: call, expected: nil), call: call)
    }

    /// `PUT /{hub}/registrations/{id}` (`If-Match` honoured).
    static func replaceRegistration(_ request: Request, call: HubCall, limit: Int) async throws(GatewayError) -> EditedResponse<XMLAnswer> {
        try requireContentType(request, "xml", "an Atom entry (application/atom+xml;type=entry)")
        let id = try registrationID(call.parameter("id"))
        let description = try HubRegistrationXML.parse(try await body(request, limit: limit))
        return entry(try await upsert(description, id: id, call: call, expected: request.headers[ifMatchHeader]), call: call)
    }

    /// `GET /{hub}/registrations/{id}` (masked for a Listen key).
    static func readRegistration(_ request: Request, call: HubCall) async throws(GatewayError) -> EditedResponse<XMLAnswer> {
        let id = try registrationID(call.parameter("id"))
        guard let registration = try await existing(id, call: call) else { throw GatewayError.notFound("no registration \(id.rawValue)") }
        return entry(registration, call: call, masked: call.readsMasked)
    }

    /// `DELETE /{hub}/registrations/{id}` (`If-Match` honoured).
    static func deleteRegistration(_ request: Request, call: HubCall) async throws(GatewayError) -> EmptyAnswer {
        let id = try registrationID(call.parameter("id"))
        try await call.gateway.installations.deleteRegistration(id, writer: call.writer, ifMatch: request.headers[ifMatchHeader])
        return EmptyAnswer(.ok)
    }

    /// A body's declared type must be the one the route reads (none declared is taken as it).
    static func requireContentType(_ request: Request, _ expected: String, _ description: String) throws(GatewayError) {
        guard let type = request.headers[.contentType]?.lowercased(), !type.isEmpty else { return }
        guard type.contains(expected) else {
            throw GatewayError(.unsupportedMediaType, "Content-Type '\(type.prefix(60))' is not accepted here; send \(description)")
        }
    }

    static let refusals = Logger(label: "pushgate.hub")

    /// Resolves the hub, checks the API version and the signature, and the right the route needs.
    static func authorize(
        _ request: Request, context: GatewayContext, hubs: HubDirectory, scheme: String, clients: ClientAddressResolver
    ) throws(GatewayError) -> HubCall {
        let name = context.parameters.get("hub") ?? ""
        guard let hub = hubs.hub(named: name) else { throw .notFound("no hub '\(name.prefix(60))' is configured here") }
        let version = try QueryParameters(request.uri).get("api-version") ?? "2020-06"
        guard apiVersions.contains(version) else {
            throw .badRequest("api-version '\(version.prefix(20))' is not supported; use one from 2013-04 to 2020-06")
        }
        let host = request.head.authority ?? ""
        switch hubs.authorize(request.headers[.authorization], hub: hub, host: host, path: request.uri.path) {
        case .failure(let error):
            throw GatewayError(.unauthorized, error.description)
        case .success(let grant):
            return HubCall(
                hub: hub, grant: grant, parameters: context.parameters, apiVersion: version, scheme: scheme,
                authority: "\(host)/\(hub.id.rawValue)",
                client: clients.client(
                    peer: context.remoteAddress, forwardedFor: request.headers[values: BasicAuthenticationMiddleware.forwardedFor]))
        }
    }

    /// One hub request, authorized.
    struct HubCall: Sendable {
        let hub: HubDirectory.Hub
        let grant: HubGrant
        let parameters: Parameters
        let apiVersion: String
        /// The scheme the request came in on, and `host:port/hub`.
        let scheme: String
        let authority: String
        /// Who sent the request (the peer, or the address a trusted proxy forwarded): what the
        /// Listen key's rates are kept by.
        let client: String

        /// `https://host:port/hub`: links to the hub's resources.
        var base: String { "\(scheme)://\(authority)" }
        /// The hub as Notification Hubs names it in NotificationDetails: `sb://host:port/hub` over HTTPS.
        var namespaceBase: String { scheme == "https" ? "sb://\(authority)" : base }

        var gateway: Gateway { hub.gateway }
        /// A key with only the Listen right (what every copy of the app carries) reads a
        /// registration or installation with its handle masked and a browser's keys left out:
        /// knowing an id is not enough to read a device's handle. The device knows its own.
        var readsMasked: Bool { writer == .device }
        /// Who writes, for the core's rules: the app's backend (Send or Manage) or a device (Listen only).
        var writer: Installations.HubWriter { grant.allows(.manage) || grant.allows(.send) ? .backend : .device }
        /// The outbox's records are the hub's: a Send key sees every notification of its hub.
        var user: AuthenticatedUser { AuthenticatedUser(name: "$rule:" + grant.rule, isAdmin: true) }

        /// Refuses unless the call's rule has `right`.
        func require(_ right: AccessRight) throws(GatewayError) {
            guard grant.allows(right) else {
                throw GatewayError(
                    .unauthorized,
                    "rule '\(grant.rule)' has \(grant.rights.sorted().map(\.rawValue).joined(separator: ", ")); this needs \(right.rawValue)"
                )
            }
        }

        func parameter(_ name: String) -> String {
            let raw = parameters.get(name) ?? ""
            return raw.removingPercentEncoding ?? raw
        }
    }

    // MARK: Bodies and answers

    static func body(_ request: Request, limit: Int) async throws(GatewayError) -> [UInt8] {
        try await request.collectedBytes(limit: limit)
    }

    /// NH's error body; like NH, the detail ends with the tracking id and time that support asks for.
    static func errorResponse(_ error: GatewayError) -> Response {
        let trackingID = UUID().uuidString.lowercased()
        let stamp = RFC3339.format(Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970.rounded(.down)))
        let detail = "\(error.message).TrackingId:\(trackingID),TimeStamp:\(stamp)"
        var response = Response(
            status: .init(code: error.code), headers: [.contentType: "application/xml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: HubRegistrationXML.error(code: error.code, detail: detail))))
        response.headers[trackingIDHeader] = trackingID
        if let seconds = error.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
        return response
    }
}
