import Foundation
import JWTKit
import Pushgate

/// FCM HTTP v1: `POST /v1/projects/{project}/messages:send`.
extension GoogleService {
    func rpcError(
        _ status: Int, _ canonical: String, _ message: String, errorCode: String?, retryAfter: Int? = nil
    )
        -> SandboxHTTPResponse
    {
        var details = ""
        if let errorCode {
            details = #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}]"#
        }
        let body = #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(canonical)"\#(details)}}"#
        return .json(status, body, headers: retryAfter.map { [HTTPHeader(name: "retry-after", value: String($0))] } ?? [])
    }

    private static let canonicalStatus: [Int: String] = [
        400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL", 503: "UNAVAILABLE",
    ]

    func send(_ request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        let project = request.path.dropFirst("/v1/projects/".count).dropLast("/messages:send".count)
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer "),
            await state.isAccessTokenValid(String(authorization.dropFirst("Bearer ".count)))
        else {
            return rpcError(
                401, "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                errorCode: nil)
        }
        guard project == credentials.fcmProjectID else {
            return rpcError(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied on resource", errorCode: nil)
        }
        guard let root = try? JSONParser.parse(request.body), let message = root["message"], let members = message.objectMembers else {
            return rpcError(
                400, "INVALID_ARGUMENT", "Invalid JSON payload received. Expected an object with a \\\"message\\\" field.",
                errorCode: "INVALID_ARGUMENT")
        }
        let targets = members.filter { ["token", "topic", "condition"].contains($0.key) }
        guard targets.count == 1 else {
            return rpcError(
                400, "INVALID_ARGUMENT",
                targets.isEmpty ? "Recipient of the message is not set." : "Exactly one of token, topic or condition must be set.",
                errorCode: "INVALID_ARGUMENT")
        }
        if let data = message["data"] {
            guard let entries = data.objectMembers else {
                return rpcError(
                    400, "INVALID_ARGUMENT", "Invalid value at 'message.data' (type.googleapis.com/google.protobuf.Struct)",
                    errorCode: "INVALID_ARGUMENT")
            }
            for (index, entry) in entries.enumerated() where entry.value.stringValue == nil {
                return rpcError(
                    400, "INVALID_ARGUMENT", "Invalid value at 'message.data[\(index)].value' (TYPE_STRING)", errorCode: "INVALID_ARGUMENT")
            }
        }
        let token = message["token"]?.stringValue
        if let action = await state.takeFault(service: .fcm, handle: token) {
            switch action {
            case .respond(let status, let reason, let retryAfter):
                let canonical = Self.canonicalStatus[status] ?? "UNKNOWN"
                return rpcError(status, canonical, "Injected fault.", errorCode: reason ?? canonical, retryAfter: retryAfter)
            case .delay(let milliseconds):
                try? await Task.sleep(for: .milliseconds(milliseconds))
            case .dropConnection:
                return .dropConnection
            case .goAway(let reason):
                var response = rpcError(503, "UNAVAILABLE", "The service is currently unavailable.", errorCode: "UNAVAILABLE")
                response.action = .goAway(#"{"reason":"\#(reason)"}"#)
                return response
            }
        }
        let messageBytes = request.body.count - (token?.utf8.count ?? 0)
        if messageBytes > SandboxAssumptions.fcmMaximumMessageBytes {
            return rpcError(400, "INVALID_ARGUMENT", "Message is too big", errorCode: "INVALID_ARGUMENT")
        }
        guard let token else {
            // Topic and condition sends have no device to deliver to; accept them.
            return .json(200, #"{"name":"projects/\#(project)/messages/\#(Self.messageNumber())"}"#)
        }
        guard let device = await state.device(handle: token), device.platform == .fcm else {
            return rpcError(
                400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", errorCode: "INVALID_ARGUMENT")
        }
        if device.belongsToAnotherApp {
            return rpcError(403, "PERMISSION_DENIED", "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")
        }
        if device.status != .active {
            return rpcError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")
        }
        if message["validate_only"] == nil, root["validate_only"]?.kind != .bool(true) {
            let name = "projects/\(project)/messages/\(Self.messageNumber())"
            await deliver(request, platform: .fcm, to: device, messageID: name)
            return .json(200, #"{"name":"\#(name)"}"#)
        }
        return .json(200, #"{"name":"projects/\#(project)/messages/fake_message_id"}"#)
    }
}
