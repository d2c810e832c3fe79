import Foundation
import JWTKit
import Pushgate

/// The APNs provider API: `POST /3/device/<token>` over HTTP/2 with provider-token (ES256 JWT)
/// authentication, answering with Apple's status codes and `reason` strings.
struct APNSService: SandboxHTTPResponder {
    let state: SandboxState
    let credentials: SandboxCredentials
    let keys: JWTKeyCollection
    let authority: SandboxCertificateAuthority

    static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets",
        "controls",
    ]
    static let topicSuffixes: [String: String] = [
        "voip": ".voip", "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "location": ".location-query",
        "liveactivity": ".push-type.liveactivity", "pushtotalk": ".voip-ptt",
    ]

    init(state: SandboxState, credentials: SandboxCredentials, authority: SandboxCertificateAuthority) async throws {
        self.state = state
        self.credentials = credentials
        self.authority = authority
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(pem: credentials.apnsPublicKeyPEM), kid: JWKIdentifier(string: credentials.apnsKeyID))
    }

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let apnsID = request.header("apns-id") ?? UUID().uuidString.lowercased()
        var padding = 0
        let response = await answer(request, apnsID: apnsID, padding: &padding).padded(padding)
        state.count("apns", status: response.status)
        return response
    }

    private func reject(
        _ status: Int, _ reason: String, apnsID: String, timestamp: Int64? = nil, retryAfter: Int? = nil
    )
        -> SandboxHTTPResponse
    {
        var body = #"{"reason":"\#(reason)""#
        if let timestamp { body += #","timestamp":\#(timestamp)"# }
        body += "}"
        var headers = [HTTPHeader(name: "apns-id", value: apnsID)]
        if let retryAfter { headers.append(HTTPHeader(name: "retry-after", value: String(retryAfter))) }
        return .json(status, body, headers: headers)
    }

    /// The answer to `request`; `padding` is set when a fault asks for it to be padded.
    private func answer(_ request: SandboxHTTPRequest, apnsID: String, padding: inout Int) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return reject(405, "MethodNotAllowed", apnsID: apnsID) }
        let prefix = "/3/device/"
        guard request.path.hasPrefix(prefix) else { return reject(404, "BadPath", apnsID: apnsID) }
        let token = String(request.path.dropFirst(prefix.count))
        if token.isEmpty { return reject(400, "MissingDeviceToken", apnsID: apnsID) }
        if request.bodyTooLarge { return reject(413, "PayloadTooLarge", apnsID: apnsID) }

        if let action = state.takeFault(service: .apns, handle: token) {
            switch action {
            case .respond(let status, let reason, let retryAfter):
                return reject(status, reason ?? "InternalServerError", apnsID: apnsID, retryAfter: retryAfter)
            case .delay(let milliseconds):
                try? await Task.sleep(for: .milliseconds(milliseconds))
            case .dropConnection:
                return .dropConnection
            case .goAway(let reason):
                state.count("apns-goaway", status: 0)
                var response = reject(503, reason, apnsID: apnsID)
                response.action = .goAway(#"{"reason":"\#(reason)"}"#)
                return response
            case .padBody(let bytes):
                padding = bytes
            }
        }

        // Headers: no duplicates, each well formed.
        // (HTTP/2 header names arrive lower-case.)
        var seen: Set<String> = []
        for header in request.headers where header.name.hasPrefix("apns-") || header.name == "authorization" {
            if !seen.insert(header.name).inserted { return reject(400, "DuplicateHeaders", apnsID: apnsID) }
        }
        if let id = request.header("apns-id"), !Self.isCanonicalUUID(id) { return reject(400, "BadMessageId", apnsID: apnsID) }
        let pushType = request.header("apns-push-type")
        if let pushType, !Self.pushTypes.contains(pushType) { return reject(400, "InvalidPushType", apnsID: apnsID) }
        let priority = request.header("apns-priority")
        if let priority, !["1", "5", "10"].contains(priority) { return reject(400, "BadPriority", apnsID: apnsID) }
        if pushType == "background", priority == "10" {
            return reject(400, SandboxAssumptions.apnsBackgroundPriorityReason, apnsID: apnsID)
        }
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
            switch authority.checkAPNSClientCertificate(certificate, now: Date(timeIntervalSince1970: state.clock.now.secondsSinceEpoch)) {
            case .bad:
                return reject(403, "BadCertificate", apnsID: apnsID)
            case .valid(_, development: false):
                // The sandbox is the development environment (api.sandbox.push.apple.com).
                return reject(403, "BadCertificateEnvironment", apnsID: apnsID)
            case .valid(let topics, development: true):
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
            guard let authorization = request.header("authorization"),
                SandboxHTTPRequest.name(authorization, hasLowercasePrefix: "bearer "), authorization.utf8.count > "bearer ".utf8.count
            else { return reject(403, "MissingProviderToken", apnsID: apnsID) }
            // Trimmed without Foundation (trimmingCharacters bridges through NSString on Linux).
            var trimmed = Substring(authorization.dropFirst("bearer ".count))
            while let first = trimmed.utf8.first, first == 0x20 || first == 0x09 { trimmed = trimmed.dropFirst() }
            while let last = trimmed.utf8.last, last == 0x20 || last == 0x09 { trimmed = trimmed.dropLast() }
            if let reason = await verifyProviderToken(String(trimmed), connection: request.connection) {
                return reject(reason.status, reason.reason, apnsID: apnsID)
            }

            // Topic: required with token auth. Push types with a topic suffix (voip, complication,
            // fileprovider, location, liveactivity, pushtotalk) need it: the bare bundle id is
            // another topic.
            guard let topic else { return reject(400, "MissingTopic", apnsID: apnsID) }
            let untypedSuffixed = pushType == nil && Self.topicSuffixes.values.contains { topic == credentials.apnsTopic + $0 }
            if topic != expectedTopic && !untypedSuffixed {
                return reject(400, SandboxAssumptions.apnsWrongTopicReason, apnsID: apnsID)
            }
        }

        // Device token.
        let tokenBytes = token.utf8
        guard tokenBytes.count >= 64, tokenBytes.count % 2 == 0, tokenBytes.allSatisfy(Self.isHexDigit) else {
            return reject(400, "BadDeviceToken", apnsID: apnsID)
        }
        let lowercaseToken = tokenBytes.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") }) ? token.lowercased() : token
        guard let device = state.lookUp(handle: lowercaseToken), device.platform == .apns else {
            return reject(400, SandboxAssumptions.apnsUnknownTokenReason, apnsID: apnsID)
        }
        if device.belongsToAnotherApp { return reject(400, "DeviceTokenNotForTopic", apnsID: apnsID) }

        // Payload.
        if request.body.isEmpty { return reject(400, "PayloadEmpty", apnsID: apnsID) }
        let limit = pushType == "voip" ? ServiceLimits.apnsVoIPPayloadBytes : ServiceLimits.apnsPayloadBytes
        if request.body.count > limit { return reject(413, "PayloadTooLarge", apnsID: apnsID) }
        guard let payload = try? JSONParser.parse(request.body), payload.objectMembers != nil else {
            return reject(400, SandboxAssumptions.apnsInvalidJSONReason, apnsID: apnsID)
        }

        switch device.status {
        case .uninstalled: return reject(410, "Unregistered", apnsID: apnsID, timestamp: device.goneAtMilliseconds)
        case .expired: return reject(410, "ExpiredToken", apnsID: apnsID, timestamp: device.goneAtMilliseconds)
        case .active: break
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

    /// Checks a provider token as APNs does: each distinct token is verified once and its verdict
    /// cached; an accepted token stays valid until its `iat` is an hour old. A connection that
    /// switches to a newer token sooner than 20 minutes after its previous one gets
    /// `TooManyProviderTokenUpdates` (Apple scopes the rule to the connection: a new process with a
    /// fresh token on a new connection — a restart, a replica — is accepted).
    private func verifyProviderToken(_ jwt: String, connection: UInt64) async -> (status: Int, reason: String)? {
        let now = state.clock.now.secondsSinceEpoch
        // The common case, without suspending or parsing: a token judged before, its `iat` kept.
        if let cached = state.providerToken(jwt) {
            if let reason = cached.verdict { return (403, reason) }
            if let issuedAt = cached.issuedAt, now - issuedAt > SandboxAssumptions.apnsProviderTokenLifetimeSeconds {
                return (403, "ExpiredProviderToken")
            }
            return refreshVerdict(issuedAt: cached.issuedAt, connection: connection)
        }
        let verdict: (status: Int, reason: String)?
        // The `iat` of a token that verified (only an accepted token's is ever read again).
        var issuedAt: Double?
        // Signed with the credentials' own key, or with one issued since (a rotation).
        if let header = Self.decodeSegment(jwt, 0), header["alg"]?.stringValue == "ES256", let kid = header["kid"]?.stringValue,
            case let rotatedKey = kid == credentials.apnsKeyID ? nil : state.trustedAPNSKey(id: kid),
            kid == credentials.apnsKeyID || rotatedKey != nil
        {
            do {
                if let rotatedKey { await keys.add(ecdsa: try ES256PublicKey(pem: rotatedKey), kid: JWKIdentifier(string: kid)) }
                let claims = try await keys.verify(jwt, as: APNSProviderClaims.self)
                state.recordAPNSToken(keyID: kid)
                issuedAt = claims.iat.value.timeIntervalSince1970
                if claims.iss != credentials.apnsTeamID {
                    verdict = (403, "InvalidProviderToken")
                } else if now - claims.iat.value.timeIntervalSince1970 > SandboxAssumptions.apnsProviderTokenLifetimeSeconds {
                    verdict = (403, "ExpiredProviderToken")
                } else {
                    verdict = nil
                }
            } catch {
                verdict = (403, "InvalidProviderToken")
            }
        } else {
            verdict = (403, "InvalidProviderToken")
        }
        // Expiry is re-checked on every use, so only the other verdicts are cached.
        if verdict?.reason != "ExpiredProviderToken" { state.recordProviderToken(jwt, verdict: verdict?.reason, issuedAt: issuedAt) }
        if verdict != nil { return verdict }
        return refreshVerdict(issuedAt: issuedAt, connection: connection)
    }

    /// A valid token on `connection`: refused when the connection moved to it too soon after its
    /// previous token.
    private func refreshVerdict(issuedAt: Double?, connection: UInt64) -> (status: Int, reason: String)? {
        guard let issuedAt else { return nil }
        let accepted = state.acceptProviderToken(
            keyID: credentials.apnsKeyID, connection: connection, issuedAt: issuedAt,
            minimumInterval: SandboxAssumptions.apnsMinimumTokenRefreshSeconds)
        return accepted ? nil : (429, "TooManyProviderTokenUpdates")
    }

    static func decodeSegment(_ jwt: String, _ index: Int) -> JSONValue? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(String(parts[index])) else { return nil }
        return try? JSONParser.parse(Array(data))
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

/// The claims of an APNs provider token.
package struct APNSProviderClaims: JWTPayload {
    var iss: String
    var iat: IssuedAtClaim

    package init(iss: String, iat: IssuedAtClaim) {
        self.iss = iss
        self.iat = iat
    }

    package func verify(using algorithm: some JWTAlgorithm) async throws {}
}
