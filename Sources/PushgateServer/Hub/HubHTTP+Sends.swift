import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateGateway
import PushgateXML

extension HubHTTP {
    // MARK: Sends

    /// `POST /{hub}/messages` and `/schedulednotifications`: parse → ``Sends/run(_:logger:)`` → answer.
    static func send(
        _ request: Request, call: HubCall, limit: Int, scheduled: Bool
    ) async throws(GatewayError) -> any ResponseGenerator {
        let command = try await sendCommand(request, call: call, limit: limit, scheduled: scheduled)
        let collection = scheduled ? "schedulednotifications" : "messages"
        switch try await call.gateway.sends.run(command, logger: call.gateway.logger) {
        case .accepted(let accepted):
            return created(accepted.record.id, replayed: accepted.replayed, collection: collection, request: request, call: call)
        case .delivered(let outcome):
            return try testAnswer(outcome, request: request)
        case .dryRun, .streamed:
            throw GatewayError(.misconfigured, "internal error: a hub send is stored or a test send")
        }
    }

    /// A hub send request as a ``SendCommand``: `?direct` and `?test`, the Notification Hubs
    /// headers that address and shape it, its body.
    static func sendCommand(_ request: Request, call: HubCall, limit: Int, scheduled: Bool) async throws(GatewayError) -> SendCommand {
        let query = try QueryParameters(request.uri, accepting: ["api-version", "direct", "test"])
        let direct = try query.flag("direct", bare: true)
        // `?test` (the REST reference, the .NET and Python SDKs) or the header some SDKs send.
        let test = try query.flag("test", bare: true) || request.headers[testSendHeader]?.lowercased() == "true"
        var audience = SendCommand.Audience.everyone
        if direct {
            guard let handle = request.headers[deviceHandleHeader], !handle.isEmpty else {
                throw .badRequest("a direct send needs ServiceBusNotification-DeviceHandle")
            }
            // A browser's handle is its endpoint with the subscription's keys in P256DH and Auth.
            if request.headers[formatHeader]?.lowercased() == "browser", let p256dh = request.headers[p256dhHeader],
                let auth = request.headers[authHeader]
            {
                audience = .devices(
                    [WebPushSubscription.json(endpoint: handle, p256dh: p256dh, auth: auth)], field: deviceHandleHeader.rawName)
            } else {
                audience = .devices([handle], field: deviceHandleHeader.rawName)
            }
        } else if request.headers[deviceHandleHeader] != nil {
            throw .badRequest("ServiceBusNotification-DeviceHandle is for direct sends: add ?direct to the URL")
        } else if let tags = request.headers[tagsHeader] {
            audience = .tags(tags)
        }
        var deliverAt: SendCommand.Given<Timestamp>?
        if scheduled {
            guard let text = request.headers[scheduleTimeHeader] else {
                throw .badRequest("ServiceBusNotification-ScheduleTime is required (UTC, yyyy-MM-ddTHH:mm:ss)")
            }
            deliverAt = SendCommand.Given(try scheduleTime(text, gateway: call.gateway), text: text)
        }
        let bytes = try await body(request, limit: limit)
        return SendCommand(
            route: scheduled ? .hubScheduled : .hubMessages, sender: .hubKey(rule: call.grant.rule), audience: audience,
            content: .notificationHubs(
                format: request.headers[formatHeader], body: bytes,
                headers: request.headers.map { SendCommand.Header(name: $0.name.rawName, value: $0.value) }),
            mode: test ? .test : nil, deliverAt: deliverAt, idempotencyKey: request.headers[GatewayHTTP.idempotencyKeyHeader])
    }

    /// `201 Created` for a stored send, with where it is and its tracking id.
    static func created(_ id: String, replayed: Bool, collection: String, request: Request, call: HubCall) -> EmptyAnswer {
        var headers: HTTPFields = [.location: "\(call.base)/\(collection)/\(id)?api-version=\(call.apiVersion)"]
        headers[trackingIDHeader] = request.headers[trackingIDHeader] ?? id
        if replayed { headers[GatewayHTTP.idempotentReplayedHeader] = "true" }
        return EmptyAnswer(.created, headers: headers)
    }

    /// A test send's answer: `201 Created`, as for any send (clients raise on anything else), with the outcome.
    static func testAnswer(_ outcome: Sends.SendOutcome, request: Request) throws(GatewayError) -> EditedResponse<XMLAnswer> {
        if let refusal = outcome.refusal { throw refusal }
        var result = outcome.result
        // NH counts the registrations a send targets: template registrations a native send
        // passes over (and duplicate handles sent once), Skipped here, are not among them.
        result.targets = Array(result.targets.filter { $0.outcome != .skipped }.prefix(10))
        for index in result.platforms.indices { result.platforms[index].counts[.skipped] = nil }
        var headers: HTTPFields = [trackingIDHeader: request.headers[trackingIDHeader] ?? result.notificationID]
        if outcome.replayed { headers[GatewayHTTP.idempotentReplayedHeader] = "true" }
        return EditedResponse(status: .created, headers: headers, response: XMLAnswer(result.xmlDocument()))
    }

    /// `ServiceBusNotification-ScheduleTime` as the SDKs write it (``ScheduleTime``), checked
    /// against the outbox's scheduling window.
    static func scheduleTime(_ text: String, gateway: Gateway) throws(GatewayError) -> Timestamp {
        do {
            guard let time = try gateway.sends.scheduleTime(ScheduleTime.rfc3339(text)) else { throw GatewayError.badRequest("is empty") }
            return time
        } catch let error as GatewayError {
            throw .badRequest("ServiceBusNotification-ScheduleTime: '\(text.prefix(40))': \(error.message)")
        } catch {
            throw .badRequest("ServiceBusNotification-ScheduleTime: '\(text.prefix(40))' is not a time")
        }
    }

    /// `POST /{hub}/messages/$batch?direct`: a multipart/mixed body with the notification and a
    /// JSON array of device handles (up to 1,000).
    static func batchSend(_ request: Request, call: HubCall, limit: Int) async throws(GatewayError) -> EmptyAnswer {
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
        let command = SendCommand(
            route: .hubBatch, sender: .hubKey(rule: call.grant.rule), audience: .devices(handles, field: "devices"),
            content: .notificationHubs(
                format: request.headers[formatHeader], body: notification.body,
                headers: request.headers.map { SendCommand.Header(name: $0.name.rawName, value: $0.value) }))
        guard case .accepted(let accepted) = try await call.gateway.sends.run(command, logger: call.gateway.logger) else {
            throw GatewayError(.misconfigured, "internal error: a $batch send is stored")
        }
        return created(accepted.record.id, replayed: false, collection: "messages", request: request, call: call)
    }
}
