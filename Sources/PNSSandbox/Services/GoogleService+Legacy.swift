import Foundation
import JWTKit
import Pushgate

/// The legacy FCM HTTP API: `POST /fcm/send`.
extension GoogleService {
    func legacySend(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        guard let authorization = request.header("authorization"), authorization == "key=\(credentials.gcmServerKey)" else {
            return SandboxHTTPResponse(
                status: 401, headers: [HTTPHeader(name: "content-type", value: "text/html; charset=UTF-8")],
                body: Array(
                    "<HTML><HEAD><TITLE>Unauthorized</TITLE></HEAD><BODY><H1>Unauthorized</H1><H2>Error 401</H2></BODY></HTML>".utf8))
        }
        if let action = state.takeFault(service: .gcm, handle: nil), let response = await Self.apply(action, padding: &padding) {
            return response
        }
        guard let root = try? JSONParser.parse(request.body), root.objectMembers != nil else {
            return .text(400, "JSON_PARSING_ERROR: Unexpected character at position 0.")
        }
        let tokens: [String]
        if let to = root["to"]?.stringValue {
            tokens = [to]
        } else if let list = root["registration_ids"]?.arrayElements {
            let strings = list.compactMap(\.stringValue)
            guard strings.count == list.count, !strings.isEmpty else {
                return .text(400, "\"registration_ids\" field is not a JSON array of strings")
            }
            guard strings.count <= SandboxAssumptions.gcmMaximumRegistrationIDs else {
                return .text(400, "Number of messages on bulk (\(strings.count)) exceeds maximum allowed (1000)")
            }
            tokens = strings
        } else {
            return .text(400, "Missing \"to\" or \"registration_ids\" field")
        }
        if let data = root["data"], data.objectMembers == nil { return .text(400, "\"data\" field must be a JSON array") }
        let tooBig = request.body.count - tokens.reduce(0) { $0 + $1.utf8.count } > ServiceLimits.gcmPayloadBytes
        var results: [String] = []
        var success = 0
        var canonical = 0
        for token in tokens {
            let result: String
            if tooBig {
                result = #"{"error":"MessageTooBig"}"#
            } else if let action = state.takeFault(service: .gcm, handle: token), case .respond(_, let reason, _) = action {
                result = #"{"error":"\#(reason ?? "Unavailable")"}"#
            } else if let device = state.lookUp(handle: token), device.platform == .gcm {
                if device.belongsToAnotherApp {
                    result = #"{"error":"MismatchSenderId"}"#
                } else if device.status != .active {
                    result = #"{"error":"NotRegistered"}"#
                } else if root["dry_run"]?.kind == .bool(true) {
                    // A dry run: checked, answered, not delivered.
                    success += 1
                    result = #"{"message_id":"fake_message_id"}"#
                } else {
                    let messageID = "0:\(Self.messageNumber())%\(credentials.gcmSenderID)"
                    deliver(request, platform: .gcm, to: device, messageID: messageID)
                    success += 1
                    if let replacement = device.canonicalHandle, replacement != token {
                        canonical += 1
                        result = #"{"message_id":"\#(messageID)","registration_id":"\#(replacement)"}"#
                    } else {
                        result = #"{"message_id":"\#(messageID)"}"#
                    }
                }
            } else {
                result = #"{"error":"InvalidRegistration"}"#
            }
            results.append(result)
        }
        let body =
            #"{"multicast_id":\#(Self.messageNumber()),"success":\#(success),"failure":\#(tokens.count - success),"canonical_ids":\#(canonical),"results":[\#(results.joined(separator: ","))]}"#
        return .json(200, body)
    }
}
