import Foundation
import Pushgate

/// The APNs provider API: `POST /3/device/<token>` over HTTP/2 with provider-token (ES256 JWT)
/// authentication, answering with Apple's status codes and `reason` strings.
struct APNSService: SandboxHTTPResponder {
    let state: SandboxState
    let credentials: SandboxCredentials
    let authenticator: APNSAuthenticator

    static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets",
        "controls",
    ]
    /// The topic each push type goes to, after the bundle id (protocols.md §8.3); the others use
    /// the bare bundle id.
    static let topicSuffixes: [String: String] = [
        "voip": ".voip", "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "location": ".location-query",
        "liveactivity": ".push-type.liveactivity", "pushtotalk": ".voip-ptt", "widgets": ".push-type.widgets",
        "controls": ".push-type.controls",
    ]

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let apnsID = request.header("apns-id") ?? UUID().uuidString.lowercased()
        var padding = 0
        let response = await answer(request, apnsID: apnsID, padding: &padding).padded(padding)
        state.count("apns", status: response.status)
        return response
    }

    func reject(
        _ status: Int, _ reason: String, apnsID: String, timestamp: Int64? = nil, retryAfter: Int? = nil
    )
        -> SandboxHTTPResponse
    {
        APNSAnswer.refusal(
            APNSRefusal(status, reason), headers: [HTTPHeader(name: "apns-id", value: apnsID)], timestamp: timestamp,
            retryAfter: retryAfter)
    }

    /// The answer to `request`; `padding` is set when a fault asks for it to be padded.
    private func answer(_ request: SandboxHTTPRequest, apnsID: String, padding: inout Int) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return reject(405, "MethodNotAllowed", apnsID: apnsID) }
        let prefix = "/3/device/"
        guard request.path.hasPrefix(prefix) else { return reject(404, "BadPath", apnsID: apnsID) }
        let token = String(request.path.dropFirst(prefix.count))
        if token.isEmpty { return reject(400, "MissingDeviceToken", apnsID: apnsID) }
        if request.bodyTooLarge { return reject(413, "PayloadTooLarge", apnsID: apnsID) }

        if let action = state.takeFault(service: .apns, handle: token),
            let response = await APNSAnswer.apply(
                action, state: state, service: "apns", headers: [HTTPHeader(name: "apns-id", value: apnsID)], padding: &padding)
        {
            return response
        }

        // Headers: no duplicates, each well formed.
        if APNSAnswer.hasDuplicateHeaders(request) { return reject(400, "DuplicateHeaders", apnsID: apnsID) }
        if let id = request.header("apns-id"), !Self.isCanonicalUUID(id) { return reject(400, "BadMessageId", apnsID: apnsID) }
        let pushType = request.header("apns-push-type")
        if let pushType, !Self.pushTypes.contains(pushType) { return reject(400, "InvalidPushType", apnsID: apnsID) }
        let priority = request.header("apns-priority")
        if let priority, !["1", "5", "10"].contains(priority) { return reject(400, "BadPriority", apnsID: apnsID) }
        if pushType == "background", priority == "10" {
            return reject(400, SandboxAssumptions.apnsBackgroundPriorityReason, apnsID: apnsID)
        }
        // A Live Activity's push is 5 or 10 (protocols.md §7).
        if pushType == "liveactivity", priority == "1" { return reject(400, "BadPriority", apnsID: apnsID) }
        if let expiration = request.header("apns-expiration"), Int64(expiration).map({ $0 < 0 }) ?? true {
            return reject(400, "BadExpirationDate", apnsID: apnsID)
        }
        if let collapse = request.header("apns-collapse-id"), collapse.utf8.count > 64 {
            return reject(400, "BadCollapseId", apnsID: apnsID)
        }

        // Authentication: a client certificate presented on the connection, else a provider token.
        let topic = request.header("apns-topic")
        let topicSuffix = pushType.flatMap { Self.topicSuffixes[$0] }
        let expectedTopic = credentials.apnsTopic + (topicSuffix ?? "")
        if let certificate = request.clientCertificate {
            switch authenticator.checkCertificate(certificate) {
            case .bad:
                return reject(403, "BadCertificate", apnsID: apnsID)
            case .valid(_, development: false):
                // The sandbox is the development environment (api.sandbox.push.apple.com).
                return reject(403, "BadCertificateEnvironment", apnsID: apnsID)
            case .valid(let topics, development: true):
                if let pushType, SandboxAssumptions.apnsTokenOnlyPushTypes.contains(pushType) {
                    return reject(403, "InvalidProviderToken", apnsID: apnsID)
                }
                // apns-topic is required with a certificate for several topics; it must be one of them.
                // Without it, a single-topic certificate's subject UID is the topic.
                guard let topic = topic ?? (topics.count == 1 ? topics.first : nil) else {
                    return reject(400, "MissingTopic", apnsID: apnsID)
                }
                if !topics.contains(topic) { return reject(400, SandboxAssumptions.apnsWrongTopicReason, apnsID: apnsID) }
                if topic != expectedTopic, topicSuffix != nil {
                    return reject(400, SandboxAssumptions.apnsWrongTopicReason, apnsID: apnsID)
                }
            }
        } else {
            if let refusal = await authenticator.checkProviderToken(request) {
                return reject(refusal.status, refusal.reason, apnsID: apnsID)
            }
            // Topic: required with token auth. Push types with a topic suffix need it: the bare
            // bundle id (or another suffix) is another topic.
            guard let topic else { return reject(400, "MissingTopic", apnsID: apnsID) }
            let untypedSuffixed = pushType == nil && Self.topicSuffixes.values.contains { topic == credentials.apnsTopic + $0 }
            if topic != expectedTopic && !untypedSuffixed {
                return reject(400, SandboxAssumptions.apnsWrongTopicReason, apnsID: apnsID)
            }
        }

        // Device token: an app's device token, or an ActivityKit token (push-to-start or update).
        let tokenBytes = token.utf8
        guard tokenBytes.count >= 64, tokenBytes.count % 2 == 0, tokenBytes.allSatisfy(Self.isHexDigit) else {
            return reject(400, "BadDeviceToken", apnsID: apnsID)
        }
        let lowercaseToken = tokenBytes.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") }) ? token.lowercased() : token
        // One lookup for an app's device token (the hot path); an ActivityKit token only otherwise.
        let activityToken: SandboxLiveActivities.Token?
        var device = state.lookUp(handle: lowercaseToken)
        if device == nil {
            activityToken = state.liveActivities.lookUp(token: lowercaseToken)
            device = activityToken.flatMap { state.lookUp(id: $0.deviceID) }
        } else {
            activityToken = nil
        }
        guard let device, device.platform == .apns else {
            return reject(400, SandboxAssumptions.apnsUnknownTokenReason, apnsID: apnsID)
        }
        if device.belongsToAnotherApp { return reject(400, "DeviceTokenNotForTopic", apnsID: apnsID) }
        if activityToken != nil, pushType != "liveactivity" {
            return reject(
                400, pushType == nil ? SandboxAssumptions.liveActivityMissingPushTypeReason : "DeviceTokenNotForTopic", apnsID: apnsID)
        }

        // Payload.
        if request.body.isEmpty { return reject(400, "PayloadEmpty", apnsID: apnsID) }
        let limit = pushType == "voip" ? ServiceLimits.apnsVoIPPayloadBytes : ServiceLimits.apnsPayloadBytes
        if request.body.count > limit { return reject(413, "PayloadTooLarge", apnsID: apnsID) }
        guard let payload = try? JSONParser.parse(request.body), payload.objectMembers != nil else {
            return reject(400, SandboxAssumptions.apnsInvalidJSONReason, apnsID: apnsID)
        }
        var liveActivity: LiveActivityPayload?
        if pushType == "liveactivity" {
            do throws(APNSRefusal) {
                liveActivity = try LiveActivityPayload.parse(payload, events: Set(LiveActivityPayload.Event.allCases))
            } catch {
                return reject(error.status, error.reason, apnsID: apnsID)
            }
        }

        switch device.status {
        case .uninstalled: return reject(410, "Unregistered", apnsID: apnsID, timestamp: device.goneAtMilliseconds)
        case .expired: return reject(410, "ExpiredToken", apnsID: apnsID, timestamp: device.goneAtMilliseconds)
        case .active: break
        }
        if let activityToken, let liveActivity, let refused = receive(liveActivity, token: activityToken) {
            return reject(refused.refusal.status, refused.refusal.reason, apnsID: apnsID, timestamp: refused.timestamp)
        }

        state.deliver(
            deviceID: device.id,
            state.keepsInboxes
                ? ReceivedNotification(
                    platform: .apns, deviceID: device.id, messageID: apnsID,
                    headers: request.headers.filter { $0.name.hasPrefix("apns-") || $0.name == "content-type" },
                    payload: String(decoding: request.body, as: UTF8.self), receivedAt: state.clock.now.secondsSinceEpoch) : nil)
        // apns-unique-id: the development environment's id for the Push Notifications Console log.
        return SandboxHTTPResponse(
            status: 200,
            headers: [
                HTTPHeader(name: "apns-id", value: apnsID), HTTPHeader(name: "apns-unique-id", value: UUID().uuidString.lowercased()),
            ])
    }

    /// Lower-case 8-4-4-4-12 hex (bytes, not Characters: no grapheme breaking per request).
    static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.count == 36 else { return false }
        for (offset, byte) in bytes.enumerated() {
            let dash = offset == 8 || offset == 13 || offset == 18 || offset == 23
            let valid = dash ? byte == UInt8(ascii: "-") : isHexDigit(byte) && !(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
            if !valid { return false }
        }
        return true
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
    }
}
