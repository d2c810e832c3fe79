import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateXML

/// The Notification Hubs REST API on `/{hub}/…`: sends (native, template, direct, test),
/// scheduled sends, telemetry, registrations (Atom XML) and installations (JSON), each request
/// authorized by a Shared Access Signature of one of the hub's rules.
enum HubHTTP {
    /// The API versions Notification Hubs clients send.
    static let apiVersions: Set<String> = [
        "2013-04", "2013-07", "2013-08", "2013-10", "2014-01", "2014-08", "2014-09", "2015-01", "2015-04", "2015-08", "2016-03",
        "2016-07", "2017-04", "2017-11", "2020-06",
    ]
    static let formatHeader = HTTPField.Name("ServiceBusNotification-Format")!
    static let tagsHeader = HTTPField.Name("ServiceBusNotification-Tags")!
    static let deviceHandleHeader = HTTPField.Name("ServiceBusNotification-DeviceHandle")!
    static let scheduleTimeHeader = HTTPField.Name("ServiceBusNotification-ScheduleTime")!
    static let testSendHeader = HTTPField.Name("ServiceBusNotification-TestSend")!
    static let trackingIDHeader = HTTPField.Name("TrackingId")!
    static let continuationHeader = HTTPField.Name("X-MS-ContinuationToken")!
    static let etagHeader = HTTPField.Name("ETag")!
    static let ifMatchHeader = HTTPField.Name("If-Match")!

    /// Adds the hub routes to `router`; `scheme` is how clients reach this listener (`https`).
    static func addRoutes(to router: Router<GatewayContext>, hubs: HubDirectory, maximumBodyBytes: Int, scheme: String) {
        let group = router.group(":hub")
        func route(
            _ method: HTTPRequest.Method, _ path: RouterPath, _ right: AccessRight,
            _ handler: @escaping @Sendable (Request, HubCall) async throws -> Response
        ) {
            group.on(path, method: method) { request, context in
                do {
                    let call = try authorize(request, context: context, hubs: hubs, right: right, scheme: scheme)
                    return try await handler(request, call)
                } catch let error as GatewayError {
                    // Refused credentials and rights are worth a line (never the token or a key).
                    if error.code == 401 || error.code == 403 {
                        refusals.notice(
                            "hub request refused",
                            metadata: [
                                "status": "\(error.code)", "method": "\(request.method.rawValue)",
                                "path": "\(request.uri.path.prefix(120))",
                                "peer": "\(context.remoteAddress)", "reason": "\(error.message.prefix(200))",
                            ])
                    }
                    return errorResponse(error)
                } catch {
                    return errorResponse(GatewayError(500, "internal error: \(error)"))
                }
            }
        }

        route(.post, "messages", .send) { request, call in
            try await send(request, call: call, limit: maximumBodyBytes, scheduled: false)
        }
        route(.post, "messages/$batch", .send) { request, call in
            try await batchSend(request, call: call, limit: maximumBodyBytes)
        }
        route(.post, "schedulednotifications", .send) { request, call in
            try await send(request, call: call, limit: maximumBodyBytes, scheduled: true)
        }
        route(.delete, "schedulednotifications/:id", .send) { _, call in
            // Only a notification still waiting for its time is a scheduled one (NH: 404 otherwise).
            let id = call.parameter("id")
            let existing = try? await call.gateway.notificationRecord(id: id, user: call.user)
            guard let existing, existing.state == .scheduled, !existing.cancelRequested else {
                throw GatewayError.notFound("no scheduled notification '\(id.prefix(64))' is waiting to be sent")
            }
            _ = try await call.gateway.cancelNotification(id: id, user: call.user)
            return Response(status: .ok, headers: [.contentLength: "0"])
        }
        route(.get, "messages/:id", .send) { _, call in
            var record = try await call.gateway.notificationRecord(id: call.parameter("id"), user: call.user)
            // NH counts only the registrations a send targets: those it passed over (a template
            // registration under a native send, a handle another registration holds) are left out.
            for platform in record.counts.keys { record.counts[platform]?[.skipped] = nil }
            let location = "\(call.base)/messages/\(record.id)?api-version=\(call.apiVersion)"
            var document = record.xmlDocument(location: location.replacingOccurrences(of: "https://", with: "sb://"), failedTargetsURI: nil)
            // NotificationDetails spells the state "Canceled" (the tutorial API keeps "Cancelled").
            if record.state == .cancelled {
                document = Array(
                    String(decoding: document, as: UTF8.self).replacingOccurrences(
                        of: "<State>Cancelled</State>", with: "<State>Canceled</State>"
                    )
                    .utf8)
            }
            return xml(200, document)
        }
        route(.post, "registrationIDs", .listen) { _, call in
            let gateway = call.gateway
            let time = gateway.now()
            let id = try await gateway.stored { () throws(StoreError) in
                try await gateway.store.createRegistrationID(app: gateway.appID, owner: hubOwner, maximumReserved: 1_000_000, now: time)
            }
            var response = Response(status: .created)
            // As Notification Hubs answers: the id is the Location path's last segment.
            response.headers[.location] = "\(call.base)/registrationids/\(id.rawValue)?api-version=\(call.apiVersion)"
            response.headers[.contentLength] = "0"
            return response
        }
        route(.post, "registrations", .listen) { request, call in
            try requireContentType(request, "xml", "an Atom entry (application/atom+xml;type=entry)")
            let description = try HubRegistrationXML.parse(try await body(request, limit: maximumBodyBytes))
            let registration = try await upsert(description, id: RegistrationID.random(), call: call, expected: nil)
            return entry(registration, call: call, status: 200)
        }
        route(.put, "registrations/:id", .listen) { request, call in
            try requireContentType(request, "xml", "an Atom entry (application/atom+xml;type=entry)")
            let id = try registrationID(call.parameter("id"))
            let description = try HubRegistrationXML.parse(try await body(request, limit: maximumBodyBytes))
            let registration = try await upsert(description, id: id, call: call, expected: request.headers[ifMatchHeader])
            return entry(registration, call: call, status: 200)
        }
        route(.get, "registrations/:id", .listen) { _, call in
            let id = try registrationID(call.parameter("id"))
            guard let registration = try await existing(id, call: call) else {
                throw GatewayError.notFound("no registration \(id.rawValue)")
            }
            return entry(registration, call: call, status: 200)
        }
        route(.delete, "registrations/:id", .listen) { request, call in
            let id = try registrationID(call.parameter("id"))
            guard let registration = try await existing(id, call: call) else {
                throw GatewayError.notFound("no registration \(id.rawValue)")
            }
            try checkIfMatch(request.headers[ifMatchHeader], registration)
            try checkOwner(registration, grant: call.grant)
            let gateway = call.gateway
            _ = try await gateway.stored { () throws(StoreError) in try await gateway.store.delete(id: id, app: gateway.appID) }
            return Response(status: .ok, headers: [.contentLength: "0"])
        }
        route(.get, "registrations", .manage) { request, call in
            try await list(request, call: call, tag: nil)
        }
        route(.get, "tags/:tag/registrations", .manage) { request, call in
            try await list(request, call: call, tag: call.parameter("tag"))
        }
        HubInstallations.addRoutes(route: route, maximumBodyBytes: maximumBodyBytes)
        // Anything else under a configured hub: NH's XML error; 405 naming the methods a known
        // resource takes.
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch]
        let resources: [(RouterPath, [HTTPRequest.Method])] = [
            ("messages", [.post]), ("messages/$batch", [.post]), ("messages/:id", [.get]), ("schedulednotifications", [.post]),
            ("schedulednotifications/:id", [.delete]), ("registrationIDs", [.post]), ("registrations", [.get, .post]),
            ("registrations/:id", [.get, .put, .delete]), ("tags/:tag/registrations", [.get]),
            ("installations/:id", [.get, .put, .patch, .delete]),
        ]
        for (path, allowed) in resources {
            for method in methods where !allowed.contains(method) {
                group.on(path, method: method) { request, context in
                    guard hubs.hub(named: context.parameters.get("hub") ?? "") != nil else { return Response(status: .notFound) }
                    var response = errorResponse(
                        GatewayError(
                            405,
                            "\(method.rawValue) is not allowed on \(request.uri.path.prefix(120)); use \(allowed.map(\.rawValue).joined(separator: ", "))"
                        ))
                    response.headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
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
    }

    /// A body's declared type must be the one the route reads (none declared is taken as it).
    static func requireContentType(_ request: Request, _ expected: String, _ description: String) throws(GatewayError) {
        guard let type = request.headers[.contentType]?.lowercased(), !type.isEmpty else { return }
        guard type.contains(expected) else {
            throw GatewayError(415, "Content-Type '\(type.prefix(60))' is not accepted here; send \(description)")
        }
    }

    static let refusals = Logger(label: "pushgate.hub")

    /// Who owns registrations made through the hub API.
    static let hubOwner = "$hub"

    /// Resolves the hub, checks the API version and the signature, and the right the route needs.
    static func authorize(
        _ request: Request, context: GatewayContext, hubs: HubDirectory, right: AccessRight, scheme: String
    ) throws(GatewayError) -> HubCall {
        let name = context.parameters.get("hub") ?? ""
        guard let hub = hubs.hub(named: name) else { throw .notFound("no hub '\(name.prefix(60))' is configured here") }
        let version = request.uri.queryParameters.get("api-version") ?? "2020-06"
        guard apiVersions.contains(version) else {
            throw .badRequest("api-version '\(version.prefix(20))' is not supported; use one from 2013-04 to 2020-06")
        }
        let host = request.head.authority ?? ""
        switch hubs.authorize(request.headers[.authorization], hub: hub, host: host, path: request.uri.path) {
        case .failure(let error):
            throw GatewayError(401, error.description)
        case .success(let grant):
            guard grant.allows(right) else {
                throw GatewayError(
                    401,
                    "rule '\(grant.rule)' has \(grant.rights.sorted().map(\.rawValue).joined(separator: ", ")); this needs \(right.rawValue)"
                )
            }
            return HubCall(
                hub: hub, grant: grant, parameters: context.parameters, apiVersion: version, base: "\(scheme)://\(host)/\(hub.id.rawValue)")
        }
    }

    /// One hub request, authorized.
    struct HubCall: Sendable {
        let hub: HubDirectory.Hub
        let grant: HubGrant
        let parameters: Parameters
        let apiVersion: String
        /// `https://host:port/hub`.
        let base: String

        var gateway: Gateway { hub.gateway }
        /// The outbox's records are the hub's: a Send key sees every notification of its hub.
        var user: AuthenticatedUser { AuthenticatedUser(name: "$rule:" + grant.rule, isAdmin: true) }

        func parameter(_ name: String) -> String {
            let raw = parameters.get(name) ?? ""
            return raw.removingPercentEncoding ?? raw
        }
    }

    // MARK: Sends

    static func send(_ request: Request, call: HubCall, limit: Int, scheduled: Bool) async throws(GatewayError) -> Response {
        let query = request.uri.queryParameters
        let direct = query.has("direct")
        // `?test` (the REST reference, the .NET and Python SDKs) or the header some SDKs send.
        let test = query.has("test") || request.headers[testSendHeader]?.lowercased() == "true"
        var handles: [String]?
        if direct {
            guard let handle = request.headers[deviceHandleHeader], !handle.isEmpty else {
                throw .badRequest("a direct send needs ServiceBusNotification-DeviceHandle")
            }
            handles = [handle]
        } else if request.headers[deviceHandleHeader] != nil {
            throw .badRequest("ServiceBusNotification-DeviceHandle is for direct sends: add ?direct to the URL")
        }
        let gateway = call.gateway
        var deliverAt: Timestamp?
        if scheduled {
            guard let text = request.headers[scheduleTimeHeader] else {
                throw .badRequest("ServiceBusNotification-ScheduleTime is required (UTC, yyyy-MM-ddTHH:mm:ss)")
            }
            deliverAt = try scheduleTime(text, gateway: gateway)
            if test { throw .badRequest("a scheduled send cannot be a test send (?test)") }
        }
        let bytes = try await body(request, limit: limit)
        let prepared = try gateway.prepareHub(
            Gateway.HubSendRequest(
                format: request.headers[formatHeader], body: bytes, headers: request.headers.map { ($0.name.rawName, $0.value) },
                tags: request.headers[tagsHeader], directHandles: handles, sender: "$rule:" + call.grant.rule))
        if test {
            // Notification Hubs' debug send: delivered now, answered with the outcome (10 results at most).
            let outcome = await GatewayHTTP.deliverToCompletion(prepared, gateway: gateway, logger: gateway.logger)
            gateway.metrics.sent(outcome.result)
            var result = outcome.result
            // NH counts the registrations a send targets: template registrations a native send
            // passes over (and duplicate handles sent once), Skipped here, are not among them.
            result.targets = Array(result.targets.filter { $0.outcome != .skipped }.prefix(10))
            for index in result.platforms.indices { result.platforms[index].counts[.skipped] = nil }
            // 201 Created, as for any send (clients raise on anything else), with the outcome.
            var response = xml(201, result.xmlDocument())
            response.headers[trackingIDHeader] = request.headers[trackingIDHeader] ?? result.notificationID
            return response
        }
        guard gateway.outbox.configuration.enabled else {
            throw GatewayError(501, "the hub API sends through the outbox, which is turned off (outbox.enabled)")
        }
        let record = try await gateway.enqueue(prepared, deliverAt: deliverAt)
        var response = Response(status: .created, headers: [.contentLength: "0"])
        let collection = scheduled ? "schedulednotifications" : "messages"
        response.headers[.location] = "\(call.base)/\(collection)/\(record.id)?api-version=\(call.apiVersion)"
        response.headers[trackingIDHeader] = request.headers[trackingIDHeader] ?? record.id
        return response
    }

    /// `ServiceBusNotification-ScheduleTime`: UTC `yyyy-MM-ddTHH:mm:ss`, with fractions, `Z` or
    /// an offset, as the SDKs write it: .NET `2026-11-24T09:00:00.0000000Z`, JavaScript
    /// `2026-11-24T09:00:00.000Z`, Python `isoformat()` with or without `+00:00`, and
    /// notificationhubs-rest-python's `2026-11-24'T'09:00:00` (its format string's quotes kept).
    static func scheduleTime(_ text: String, gateway: Gateway) throws(GatewayError) -> Timestamp {
        var normalized = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "'", with: "")
        let time = normalized.dropFirst(10)
        if !normalized.hasSuffix("Z") && !time.contains("+") && !time.contains("-") && normalized.count >= 19 { normalized += "Z" }
        do {
            guard let time = try gateway.scheduleTime(normalized) else { throw GatewayError.badRequest("is empty") }
            return time
        } catch let error as GatewayError {
            throw .badRequest("ServiceBusNotification-ScheduleTime: '\(text.prefix(40))': \(error.message)")
        } catch {
            throw .badRequest("ServiceBusNotification-ScheduleTime: '\(text.prefix(40))' is not a time")
        }
    }

    /// `POST /{hub}/messages/$batch?direct`: a multipart/mixed body with the notification and a
    /// JSON array of device handles (up to 1,000).
    static func batchSend(_ request: Request, call: HubCall, limit: Int) async throws(GatewayError) -> Response {
        guard request.uri.queryParameters.has("direct") else { throw .badRequest("$batch sends are direct: add ?direct to the URL") }
        let type = request.headers[.contentType] ?? ""
        guard type.lowercased().hasPrefix("multipart/mixed"),
            // `boundary=x` (.NET), `boundary = "x"` (the JavaScript SDK: spaces and quotes).
            let boundary = type.split(separator: ";").compactMap({ part -> String? in
                let pieces = part.split(separator: "=", maxSplits: 1)
                guard pieces.count == 2, pieces[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { return nil }
                let value = pieces[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return value.isEmpty || value.count > 70 ? nil : value
            }).first
        else { throw GatewayError(415, "Content-Type: a $batch send is multipart/mixed with a boundary") }
        let parts = try multipart(try await body(request, limit: max(limit, 1 << 20)), boundary: boundary)
        guard let notification = parts.first(where: { $0.name == "notification" }),
            let devices = parts.first(where: { $0.name == "devices" })
        else { throw .badRequest("a $batch body has two parts: name=\"notification\" and name=\"devices\"") }
        guard let elements = (try? JSONParser.parse(devices.body))?.arrayElements else {
            throw .badRequest("the devices part must be a JSON array of device handles")
        }
        var handles: [String] = []
        handles.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard let handle = element.stringValue else { throw .badRequest("devices[\(index)] must be a string (a device handle)") }
            handles.append(handle)
        }
        let gateway = call.gateway
        let prepared = try gateway.prepareHub(
            Gateway.HubSendRequest(
                format: request.headers[formatHeader], body: notification.body,
                headers: request.headers.map { ($0.name.rawName, $0.value) }, tags: nil, directHandles: handles,
                sender: "$rule:" + call.grant.rule))
        let record = try await gateway.enqueue(prepared, deliverAt: nil)
        var response = Response(status: .created, headers: [.contentLength: "0"])
        response.headers[.location] = "\(call.base)/messages/\(record.id)?api-version=\(call.apiVersion)"
        response.headers[trackingIDHeader] = request.headers[trackingIDHeader] ?? record.id
        return response
    }

    struct Part {
        var name: String
        var body: [UInt8]
    }

    /// The parts of a multipart body, by their Content-Disposition name. On the bytes: a Swift
    /// `String` sees `\r\n` as one character, which is not how MIME counts.
    static func multipart(_ bytes: [UInt8], boundary: String) throws(GatewayError) -> [Part] {
        let delimiter = Array(("--" + boundary).utf8)
        func find(_ needle: [UInt8], from start: Int) -> Int? {
            guard needle.count <= bytes.count - start else { return nil }
            var index = start
            while index <= bytes.count - needle.count {
                if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
                index += 1
            }
            return nil
        }
        var parts: [Part] = []
        guard var cursor = find(delimiter, from: 0) else { throw .badRequest("the body has no part delimited by --\(boundary.prefix(70))") }
        while true {
            cursor += delimiter.count
            // "--" after the delimiter ends the body.
            if bytes.count >= cursor + 2, bytes[cursor] == UInt8(ascii: "-"), bytes[cursor + 1] == UInt8(ascii: "-") { break }
            guard let next = find(delimiter, from: cursor) else {
                throw .badRequest("the multipart body does not end with --\(boundary.prefix(70))--")
            }
            var part = Array(bytes[cursor..<next])
            // The CRLF before the next delimiter belongs to the delimiter (RFC 2046).
            if part.last == UInt8(ascii: "\n") { part.removeLast() }
            if part.last == UInt8(ascii: "\r") { part.removeLast() }
            let blank = [UInt8]("\r\n\r\n".utf8)
            let bare = [UInt8]("\n\n".utf8)
            let split: (head: Int, body: Int)? = {
                for (index, _) in part.enumerated() {
                    if part[index...].starts(with: blank) { return (index, index + 4) }
                    if part[index...].starts(with: bare) { return (index, index + 2) }
                }
                return nil
            }()
            if let split {
                let head = String(decoding: part[..<split.head], as: UTF8.self).lowercased()
                for line in head.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
                where line.hasPrefix("content-disposition") {
                    guard let nameRange = line.range(of: "name=") else { continue }
                    let name = line[nameRange.upperBound...].prefix { $0 != ";" }.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
                    parts.append(Part(name: name, body: Array(part[split.body...])))
                }
            }
            cursor = next
        }
        return parts
    }

    // MARK: Registrations

    static func registrationID(_ text: String) throws(GatewayError) -> RegistrationID {
        do { return try RegistrationID(text) } catch { throw .badRequest("registration id: \(error.description)") }
    }

    static func existing(_ id: RegistrationID, call: HubCall) async throws(GatewayError) -> Registration? {
        let gateway = call.gateway
        return try await gateway.stored { () throws(StoreError) in try await gateway.store.registration(id: id, app: gateway.appID) }
    }

    static func checkIfMatch(_ header: String?, _ registration: Registration?) throws(GatewayError) {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return }
        guard let registration else { throw GatewayError(412, "If-Match: the registration does not exist") }
        if header == "*" { return }
        let wanted = header.trimmingCharacters(in: CharacterSet(charactersIn: "\"W/"))
        guard wanted == registrationETag(registration) else {
            throw GatewayError(
                412, "If-Match: the registration changed (its ETag is \(registrationETag(registration)), not \(wanted.prefix(40)))")
        }
    }

    /// Validates a description and writes it: tags as Notification Hubs checks them (a Listen
    /// key may not set a `username:` tag), the handle as its service issues it, a template body
    /// as the gateway compiles it. Nothing is written when any part is wrong.
    static func upsert(
        _ description: HubRegistrationXML.Description, id: RegistrationID, call: HubCall, expected: String?
    ) async throws(GatewayError) -> Registration {
        let gateway = call.gateway
        let handle: DeviceHandle
        do { handle = try gateway.app.configuration.handles.validate(description.handle, for: description.platform) } catch {
            throw .badRequest(
                "\(HubRegistrationXML.types.first { $0.platform == description.platform }!.handleElement): \(error.description)")
        }
        let tags = try checkedTags(description.tags, grant: call.grant, field: "Tags")
        var template: RegistrationTemplate?
        if description.isTemplate, let body = description.bodyTemplate {
            var headers = description.wnsHeaders
            if let expiry = description.expiry, !expiry.isEmpty {
                // Stored as the template's apns-expiration: seconds since 1970 (0: at once).
                guard description.platform == .apns, UInt32(expiry) != nil else {
                    throw .badRequest("Expiry: '\(expiry.prefix(40))' must be seconds since 1970, on an Apple template registration")
                }
                headers["apns-expiration"] = expiry
            }
            let candidate = RegistrationTemplate(
                name: description.templateName, body: description.platform == .fcm ? Gateway.unwrappedFCMTemplate(body) : body,
                headers: headers)
            do { _ = try Gateway.compile(candidate, platform: description.platform) } catch {
                throw .badRequest("BodyTemplate: \(error.description)")
            }
            template = candidate
        }
        let registration: Registration
        do {
            registration = try Registration(
                app: gateway.appID, id: id, handle: handle, tags: tags, template: template, expiresAt: description.expiration,
                owner: hubOwner)
        } catch {
            throw .badRequest("Tags: \(error.description)")
        }
        let current = try await existing(id, call: call)
        if let current { try checkOwner(current, grant: call.grant) }
        if expected != nil { try checkIfMatch(expected, current) }
        let time = gateway.now()
        try await gateway.stored { () throws(StoreError) in try await gateway.store.restore([registration], now: time) }
        return registration
    }

    /// A user's registration (made through the authenticated `/api/register`) is theirs: a Listen
    /// key, which every copy of an app carries, may not replace or delete it.
    static func checkOwner(_ registration: Registration, grant: HubGrant) throws(GatewayError) {
        guard registration.owner != hubOwner, !grant.allows(.manage), !grant.allows(.send) else { return }
        throw GatewayError(
            403, "registration \(registration.id.rawValue) belongs to a user (made through /api/register); a Listen key may not change it")
    }

    /// Tags as ``TagPolicy`` checks them for the key's rights, with `field` naming where they were.
    static func checkedTags(_ texts: [String], grant: HubGrant, field: String) throws(GatewayError) -> [Tag] {
        let writer: TagPolicy.Writer = grant.allows(.manage) || grant.allows(.send) ? .hubBackend : .hubDevice
        do { return try TagPolicy.check(texts, writer: writer) } catch {
            throw GatewayError(error.isForbidden ? 403 : 400, "\(field): \(error.description)")
        }
    }

    static func entry(_ registration: Registration, call: HubCall, status: Int) -> Response {
        var response = Response(
            status: .init(code: status), headers: [.contentType: "application/atom+xml;type=entry;charset=utf-8"],
            body: .init(
                byteBuffer: ByteBuffer(
                    bytes: HubRegistrationXML.entry(registration, base: call.base, apiVersion: call.apiVersion, now: call.gateway.now()))))
        response.headers[etagHeader] = "W/\"\(registrationETag(registration))\""
        return response
    }

    /// `GET /{hub}/registrations` (`$filter`, `$top`, continuation) and `GET /{hub}/tags/{tag}/registrations`.
    static func list(_ request: Request, call: HubCall, tag: String?) async throws(GatewayError) -> Response {
        let gateway = call.gateway
        let query = request.uri.queryParameters
        let topText = query.get("$top") ?? "100"
        guard let top = Int(topText), (1...100).contains(top) else { throw .badRequest("$top: '\(topText.prefix(20))' must be 1 to 100") }
        var after: RegistrationID?
        if let token = request.headers[continuationHeader] ?? query.get("ContinuationToken") ?? query.get("continuationtoken")
            ?? query.get("continuationToken")
        {
            guard let id = continuationID(token) else {
                throw .badRequest("X-MS-ContinuationToken: '\(token.prefix(40))' is not one this hub issued")
            }
            after = id
        }
        var expression: TagExpression?
        var handleFilter: String?
        if let tag {
            do { expression = .tag(try Tag(tag)) } catch { throw .badRequest("tag: \(error.description)") }
        } else if let filter = query.get("$filter") {
            let (field, value) = try parseFilter(filter)
            switch field {
            case "tags":
                do { expression = .tag(try Tag(value)) } catch { throw .badRequest("$filter: \(error.description)") }
            case "devicetoken", "gcmregistrationid", "channeluri", "fcmv1registrationid":
                handleFilter = value
            default:
                throw .badRequest(
                    "$filter: '\(field)' is not filterable; use Tags, DeviceToken, GcmRegistrationId, FcmV1RegistrationId or ChannelUri")
            }
        }
        var found: [Registration] = []
        if let handle = handleFilter {
            var ids = try await gateway.stored { () throws(StoreError) in
                try await gateway.store.registrationIDs(handle: handle, app: gateway.appID)
            }
            if ids.isEmpty, handle.allSatisfy(\.isHexDigit) {
                let lowered = handle.lowercased()
                ids = try await gateway.stored { () throws(StoreError) in
                    try await gateway.store.registrationIDs(handle: lowered, app: gateway.appID)
                }
            }
            for id in ids.sorted().filter({ after == nil || $0 > after! }).prefix(top) {
                if let registration = try await existing(id, call: call) { found.append(registration) }
            }
        } else {
            do {
                for try await batch in gateway.store.registrations(
                    matching: expression, platforms: PlatformSelection(Platform.allCases), app: gateway.appID, batchSize: top,
                    now: gateway.now(),
                    after: after)
                {
                    found = batch
                    break
                }
            } catch {
                throw GatewayError(503, "the registration store is unavailable")
            }
        }
        var response = Response(
            status: .ok, headers: [.contentType: "application/atom+xml;type=feed;charset=utf-8"],
            body: .init(
                byteBuffer: ByteBuffer(
                    bytes: HubRegistrationXML.feed(
                        found, base: call.base,
                        collection: tag.map { "tags/\(SharedAccessSignature.formEncode($0))/registrations" } ?? "registrations",
                        apiVersion: call.apiVersion, now: gateway.now()))))
        if found.count == top, let last = found.last { response.headers[continuationHeader] = continuationToken(after: last.id) }
        return response
    }

    /// The opaque token a listing answers with: the last id, marked and base64url-encoded, so
    /// that only tokens the hub issued are taken back.
    static func continuationToken(after id: RegistrationID) -> String {
        Data(("nh1." + id.rawValue).utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func continuationID(_ token: String) -> RegistrationID? {
        guard token.count <= 200 else { return nil }
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8), text.hasPrefix("nh1.") else {
            return nil
        }
        return try? RegistrationID(String(text.dropFirst(4)))
    }

    /// `Field eq 'value'` (a quote doubled inside the value).
    static func parseFilter(_ text: String) throws(GatewayError) -> (String, String) {
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count == 3, parts[1].lowercased() == "eq", parts[2].hasPrefix("'"), parts[2].hasSuffix("'"), parts[2].count >= 2 else {
            throw .badRequest("$filter: '\(text.prefix(80))' must be Field eq 'value'")
        }
        let value = String(parts[2].dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
        return (parts[0].lowercased(), value)
    }

    // MARK: Bodies and answers

    static func body(_ request: Request, limit: Int) async throws(GatewayError) -> [UInt8] {
        var request = request
        do {
            let buffer = try await request.collectBody(upTo: limit)
            return Array(buffer.readableBytesView)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw GatewayError(413, "request body is larger than \(limit) bytes")
        } catch is NIOTooManyBytesError {
            throw GatewayError(413, "request body is larger than \(limit) bytes")
        } catch {
            throw GatewayError(400, "the request body could not be read: \(error)")
        }
    }

    static func xml(_ status: Int, _ bytes: [UInt8]) -> Response {
        Response(
            status: .init(code: status), headers: [.contentType: "application/xml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// NH's error body; like NH, the detail ends with the tracking id and time that support asks for.
    static func errorResponse(_ error: GatewayError) -> Response {
        let trackingID = UUID().uuidString.lowercased()
        let stamp = RFC3339.format(Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970.rounded(.down)))
        let detail = "\(error.message).TrackingId:\(trackingID),TimeStamp:\(stamp)"
        var response = xml(error.code, HubRegistrationXML.error(code: error.code, detail: detail))
        response.headers[trackingIDHeader] = trackingID
        if let seconds = error.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
        return response
    }
}
