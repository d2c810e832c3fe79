import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateCore
import PushgateXML

extension HubHTTP {
    // MARK: Sends

    static func send(_ request: Request, call: HubCall, limit: Int, scheduled: Bool) async throws(GatewayError) -> Response {
        let query = try QueryParameters(request.uri, accepting: ["api-version", "direct", "test"])
        let direct = try query.flag("direct", bare: true)
        // `?test` (the REST reference, the .NET and Python SDKs) or the header some SDKs send.
        let test = try query.flag("test", bare: true) || request.headers[testSendHeader]?.lowercased() == "true"
        var handles: [String]?
        if direct {
            guard let handle = request.headers[deviceHandleHeader], !handle.isEmpty else {
                throw .badRequest("a direct send needs ServiceBusNotification-DeviceHandle")
            }
            // A browser's handle is its endpoint with the subscription's keys in P256DH and Auth.
            if request.headers[formatHeader]?.lowercased() == "browser", let p256dh = request.headers[p256dhHeader],
                let auth = request.headers[authHeader]
            {
                handles = [WebPushSubscription.json(endpoint: handle, p256dh: p256dh, auth: auth)]
            } else {
                handles = [handle]
            }
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
        let sender = "$rule:" + call.grant.rule
        let collection = scheduled ? "schedulednotifications" : "messages"
        let idempotencyKey = try idempotencyKey(request, collection: collection, direct: direct, test: test, body: bytes, gateway: gateway)
        if let record = try await gateway.repeatedSend(idempotencyKey, sender: sender) {
            guard test else { return created(record.id, replayed: true, collection: collection, request: request, call: call) }
            return try testAnswer(gateway.replayed(record), request: request)
        }
        let prepared = try gateway.prepareHub(
            Gateway.HubSendRequest(
                format: request.headers[formatHeader], body: bytes, headers: request.headers.map { ($0.name.rawName, $0.value) },
                tags: request.headers[tagsHeader], directHandles: handles, sender: sender))
        if test {
            // Notification Hubs' debug send: delivered now, answered with the outcome (10 results at most).
            let outcome = await GatewayHTTP.deliverToCompletion(
                prepared, gateway: gateway, logger: gateway.logger, idempotencyKey: idempotencyKey)
            if !outcome.replayed { gateway.metrics.sent(outcome.result) }
            return try testAnswer(outcome, request: request)
        }
        try gateway.outbox.require(for: "the hub API's sends")
        let accepted = try await gateway.enqueue(prepared, deliverAt: deliverAt, idempotencyKey: idempotencyKey)
        return created(accepted.record.id, replayed: accepted.replayed, collection: collection, request: request, call: call)
    }

    /// The fingerprint of a hub send: its route, the headers that shape it (those a native send
    /// passes to some service, and the body's type), its body.
    static func idempotencyKey(
        _ request: Request, collection: String, direct: Bool, test: Bool, body: [UInt8], gateway: Gateway
    ) throws(GatewayError) -> IdempotencyKey? {
        let passed = request.headers.filter { field in
            field.name == .contentType || Platform.allCases.contains { Gateway.passesThrough(field.name.canonicalName, to: $0) }
        }.map { "\($0.name.canonicalName): \($0.value)" }.sorted()
        return try gateway.idempotencyKey(
            header: request.headers[GatewayHTTP.idempotencyKeyHeader],
            request: [
                "POST /{hub}/\(collection)", direct ? "direct" : nil, test ? "test" : nil, request.headers[formatHeader],
                request.headers[tagsHeader], request.headers[deviceHandleHeader], request.headers[p256dhHeader],
                request.headers[authHeader],
                request.headers[scheduleTimeHeader],
            ] + passed, body: body)
    }

    /// `201 Created` for a stored send, with where it is and its tracking id.
    static func created(_ id: String, replayed: Bool, collection: String, request: Request, call: HubCall) -> Response {
        var response = Response(status: .created, headers: [.contentLength: "0"])
        response.headers[.location] = "\(call.base)/\(collection)/\(id)?api-version=\(call.apiVersion)"
        response.headers[trackingIDHeader] = request.headers[trackingIDHeader] ?? id
        if replayed { response.headers[GatewayHTTP.idempotentReplayedHeader] = "true" }
        return response
    }

    /// A test send's answer: `201 Created`, as for any send (clients raise on anything else), with the outcome.
    static func testAnswer(_ outcome: Gateway.SendOutcome, request: Request) throws(GatewayError) -> Response {
        if let refusal = outcome.refusal { throw refusal }
        var result = outcome.result
        // NH counts the registrations a send targets: template registrations a native send
        // passes over (and duplicate handles sent once), Skipped here, are not among them.
        result.targets = Array(result.targets.filter { $0.outcome != .skipped }.prefix(10))
        for index in result.platforms.indices { result.platforms[index].counts[.skipped] = nil }
        var response = xml(201, result.xmlDocument())
        response.headers[trackingIDHeader] = request.headers[trackingIDHeader] ?? result.notificationID
        if outcome.replayed { response.headers[GatewayHTTP.idempotentReplayedHeader] = "true" }
        return response
    }

    /// `ServiceBusNotification-ScheduleTime` as the SDKs write it (``ScheduleTime``), checked
    /// against the outbox's scheduling window.
    static func scheduleTime(_ text: String, gateway: Gateway) throws(GatewayError) -> Timestamp {
        do {
            guard let time = try gateway.scheduleTime(ScheduleTime.rfc3339(text)) else { throw GatewayError.badRequest("is empty") }
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
        let query = try QueryParameters(request.uri, accepting: ["api-version", "direct"])
        guard try query.flag("direct", bare: true) else { throw .badRequest("$batch sends are direct: add ?direct to the URL") }
        guard let boundary = MultipartBody.boundary(contentType: request.headers[.contentType] ?? "") else {
            throw GatewayError(.unsupportedMediaType, "Content-Type: a $batch send is multipart/mixed with a boundary")
        }
        let body = try await body(request, limit: max(limit, 1 << 20))
        let parts: MultipartBody
        do { parts = try MultipartBody(body, boundary: boundary) } catch { throw .badRequest(error.description) }
        for name in ["notification", "devices"] where parts.parts.count(where: { $0.name == name }) > 1 {
            throw .badRequest("a $batch body has one part named \"\(name)\", not \(parts.parts.count(where: { $0.name == name }))")
        }
        guard let notification = parts.part(named: "notification"), let devices = parts.part(named: "devices") else {
            throw .badRequest("a $batch body has two parts: name=\"notification\" and name=\"devices\"")
        }
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
        var batch = Gateway.HubSendRequest(
            format: request.headers[formatHeader], body: notification.body,
            headers: request.headers.map { ($0.name.rawName, $0.value) }, tags: nil, directHandles: handles,
            sender: "$rule:" + call.grant.rule)
        batch.directHandlesField = "devices"
        let prepared = try gateway.prepareHub(batch)
        let record = try await gateway.enqueue(prepared, deliverAt: nil).record
        return created(record.id, replayed: false, collection: "messages", request: request, call: call)
    }
}
