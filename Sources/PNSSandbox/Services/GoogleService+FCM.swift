import Foundation
import JWTKit
import Pushgate

/// FCM HTTP v1: `POST /v1/projects/{project}/messages:send`.
extension GoogleService {
    /// A google.rpc.Status error: the FcmError detail when `errorCode` is given, and a
    /// google.rpc.BadRequest detail naming each field in `violations` (field, description).
    func rpcError(
        _ status: Int, _ canonical: String, _ message: String, errorCode: String?, violations: [(String?, String)] = [],
        retryAfter: Int? = nil
    )
        -> SandboxHTTPResponse
    {
        var details: [String] = []
        if let errorCode {
            details.append(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#)
        }
        if !violations.isEmpty {
            let listed = violations.map { field, description in
                let named = field.map { #""field":\#(Escaping.jsonString($0)),"# } ?? ""
                return #"{\#(named)"description":\#(Escaping.jsonString(description))}"#
            }
            details.append(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[\#(listed.joined(separator: ","))]}"#)
        }
        let detailsMember = details.isEmpty ? "" : #","details":[\#(details.joined(separator: ","))]"#
        let body = #"{"error":{"code":\#(status),"message":\#(Escaping.jsonString(message)),"status":"\#(canonical)"\#(detailsMember)}}"#
        return .json(status, body, headers: retryAfter.map { [HTTPHeader(name: "retry-after", value: String($0))] } ?? [])
    }

    /// The members a v1 `Message` may have (Firebase's REST reference); anything else is refused
    /// as protobuf JSON parsing refuses an unknown name.
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]
    /// The members of the send request itself.
    static let requestFields: Set<String> = ["validate_only", "message"]

    /// Protobuf JSON's answer to a member the schema does not have.
    /// (A top-level name has no "at" part, and its violation no field.)
    func unknownName(_ name: String, at path: String?) -> SandboxHTTPResponse {
        let location = path.map { " at '\($0)'" } ?? ""
        let text = "Invalid JSON payload received. Unknown name \"\(name)\"\(location): Cannot find field."
        return rpcError(400, "INVALID_ARGUMENT", text, errorCode: nil, violations: [(path, text)])
    }

    private static let canonicalStatus: [Int: String] = [
        400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL", 503: "UNAVAILABLE",
    ]

    func send(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        let project = request.path.dropFirst("/v1/projects/".count).dropLast("/messages:send".count)
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer "),
            state.isAccessTokenValid(String(authorization.dropFirst("Bearer ".count)))
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
                400, "INVALID_ARGUMENT", "Invalid JSON payload received. Expected an object with a \"message\" field.",
                errorCode: "INVALID_ARGUMENT")
        }
        if let unknown = root.objectMembers?.first(where: { !Self.requestFields.contains($0.key) }) {
            return unknownName(unknown.key, at: nil)
        }
        if let unknown = members.first(where: { !Self.messageFields.contains($0.key) }) { return unknownName(unknown.key, at: "message") }
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
        if let action = state.takeFault(service: .fcm, handle: token) {
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
            case .padBody(let bytes):
                padding = bytes
            }
        }
        // The message alone: neither its target nor a dry run's validate_only counts.
        let wrapper = root["validate_only"] == nil ? 0 : #""validate_only":true,"#.utf8.count
        let target = targets.first.flatMap { $0.value.stringValue } ?? ""
        let messageBytes = request.body.count - target.utf8.count - wrapper
        let limit = token == nil ? SandboxAssumptions.fcmMaximumTopicMessageBytes : SandboxAssumptions.fcmMaximumMessageBytes
        if messageBytes > limit {
            return rpcError(400, "INVALID_ARGUMENT", SandboxAssumptions.fcmMessageTooBigMessage, errorCode: "INVALID_ARGUMENT")
        }
        guard let token else {
            // A topic or condition: every subscribed device that matches receives it.
            let name = "projects/\(project)/messages/\(Self.messageNumber())"
            switch topicAudience(topic: message["topic"]?.stringValue, condition: message["condition"]?.stringValue) {
            case .refused(let refusal):
                return refusal
            case .devices(let devices):
                if root["validate_only"]?.kind != .bool(true) {
                    for device in devices { deliver(request, platform: .fcm, to: device, messageID: name) }
                }
            }
            return .json(200, #"{"name":"\#(name)"}"#)
        }
        // FCM registration tokens are the same for v1 and the legacy API: a legacy (gcm) app
        // instance's token is reached through v1 too.
        guard let device = state.lookUp(handle: token), device.platform == .fcm || device.platform == .gcm else {
            return rpcError(
                400, "INVALID_ARGUMENT", SandboxAssumptions.fcmInvalidArgumentMessage, errorCode: "INVALID_ARGUMENT",
                violations: [("message.token", "Invalid registration token")])
        }
        if device.belongsToAnotherApp {
            return rpcError(403, "PERMISSION_DENIED", "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")
        }
        if device.status != .active {
            return rpcError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")
        }
        if root["validate_only"]?.kind != .bool(true) {
            let name = "projects/\(project)/messages/\(Self.messageNumber())"
            deliver(request, platform: device.platform, to: device, messageID: name)
            return .json(200, #"{"name":"\#(name)"}"#)
        }
        return .json(200, #"{"name":"projects/\#(project)/messages/fake_message_id"}"#)
    }
}
