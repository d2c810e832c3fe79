import Foundation
import JWTKit
import Pushgate

/// Google's side: the OAuth token endpoint (`POST /token`, RS256 JWT-bearer assertion), FCM HTTP v1
/// (`POST /v1/projects/{project}/messages:send`) and the legacy HTTP API (`POST /fcm/send`).
struct GoogleService: SandboxHTTPResponder {
    let state: SandboxState
    let credentials: SandboxCredentials
    let keys: JWTKeyCollection
    /// The token endpoint's own URL (the assertion's required `aud`).
    let tokenURI: String

    static let scopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform",
    ]

    init(state: SandboxState, credentials: SandboxCredentials, tokenURI: String) async throws {
        self.state = state
        self.credentials = credentials
        self.tokenURI = tokenURI
        keys = JWTKeyCollection()
        await keys.add(rsa: try Insecure.RSA.PublicKey(pem: credentials.fcmPublicKeyPEM), digestAlgorithm: .sha256)
    }

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let path = request.path
        if path == "/token" {
            let response = await token(request)
            await state.count("fcm-token", status: response.status)
            return response
        }
        if path == "/fcm/send" {
            let response = await legacySend(request)
            await state.count("gcm", status: response.status)
            return response
        }
        if path.hasPrefix("/v1/projects/"), path.hasSuffix("/messages:send") {
            let response = await send(request)
            await state.count("fcm", status: response.status)
            return response
        }
        return .text(404, "Not Found")
    }

    // MARK: OAuth

    private func oauthError(_ error: String, _ description: String) -> SandboxHTTPResponse {
        .json(400, #"{"error":"\#(error)","error_description":"\#(description)"}"#)
    }

    private func token(_ request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        if let action = await state.takeFault(service: .fcmToken, handle: nil), let response = await Self.apply(action) {
            return response
        }
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        let form = FormEncoding.decode(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return oauthError("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"] else { return oauthError("invalid_request", "Missing required parameter: assertion") }
        guard APNSService.decodeSegment(assertion, 0)?["alg"]?.stringValue == "RS256" else {
            return oauthError("invalid_grant", "Invalid JWT: the algorithm must be RS256")
        }
        let claims: GoogleAssertionClaims
        do {
            claims = try await keys.verify(assertion, as: GoogleAssertionClaims.self)
        } catch {
            return oauthError("invalid_grant", SandboxAssumptions.invalidGrantDescription)
        }
        let now = state.clock.now()
        let issuedAt = claims.iat.value.timeIntervalSince1970
        let expiresAt = claims.exp.value.timeIntervalSince1970
        guard claims.iss == credentials.fcmClientEmail else { return oauthError("invalid_grant", "Invalid issuer: \(claims.iss)") }
        guard claims.aud == tokenURI else { return oauthError("invalid_grant", "Invalid JWT: audience must be \(tokenURI)") }
        guard claims.scope.split(separator: " ").contains(where: { Self.scopes.contains(String($0)) }) else {
            return oauthError("invalid_scope", "Invalid OAuth scope: \(claims.scope)")
        }
        guard expiresAt > now, issuedAt <= now + 300, expiresAt - issuedAt <= 3600 else {
            return oauthError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        let lifetime = SandboxAssumptions.fcmAccessTokenLifetimeSeconds
        let accessToken = await state.issueAccessToken(prefix: "ya29.sandbox-", lifetime: lifetime)
        return .json(200, #"{"access_token":"\#(accessToken)","expires_in":\#(Int(lifetime)),"token_type":"Bearer"}"#)
    }

    // MARK: FCM v1

    private func rpcError(
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

    private func send(_ request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
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
            await state.deliver(
                ReceivedNotification(
                    platform: .fcm, deviceID: device.id, messageID: name,
                    headers: request.headers.filter { $0.name.lowercased() == "content-type" },
                    payload: String(decoding: request.body, as: UTF8.self), receivedAt: state.clock.now()))
            return .json(200, #"{"name":"\#(name)"}"#)
        }
        return .json(200, #"{"name":"projects/\#(project)/messages/fake_message_id"}"#)
    }

    // MARK: Legacy HTTP

    private func legacySend(_ request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        guard let authorization = request.header("authorization"), authorization == "key=\(credentials.gcmServerKey)" else {
            return SandboxHTTPResponse(
                status: 401, headers: [HTTPHeader(name: "content-type", value: "text/html; charset=UTF-8")],
                body: Array(
                    "<HTML><HEAD><TITLE>Unauthorized</TITLE></HEAD><BODY><H1>Unauthorized</H1><H2>Error 401</H2></BODY></HTML>".utf8))
        }
        if let action = await state.takeFault(service: .gcm, handle: nil), let response = await Self.apply(action) {
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
        let tooBig = request.body.count - tokens.reduce(0) { $0 + $1.utf8.count } > Platform.gcm.maximumPayloadBytes
        var results: [String] = []
        var success = 0
        var canonical = 0
        for token in tokens {
            let result: String
            if tooBig {
                result = #"{"error":"MessageTooBig"}"#
            } else if let action = await state.takeFault(service: .gcm, handle: token), case .respond(_, let reason, _) = action {
                result = #"{"error":"\#(reason ?? "Unavailable")"}"#
            } else if let device = await state.device(handle: token), device.platform == .gcm {
                if device.belongsToAnotherApp {
                    result = #"{"error":"MismatchSenderId"}"#
                } else if device.status != .active {
                    result = #"{"error":"NotRegistered"}"#
                } else {
                    let messageID = "0:\(Self.messageNumber())%\(credentials.gcmSenderID)"
                    await state.deliver(
                        ReceivedNotification(
                            platform: .gcm, deviceID: device.id, messageID: messageID,
                            headers: request.headers.filter { $0.name.lowercased() == "content-type" },
                            payload: String(decoding: request.body, as: UTF8.self), receivedAt: state.clock.now()))
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

    /// Applies a transport-level fault (a whole-request answer), or returns nil to answer normally.
    static func apply(_ action: SandboxFault.Action) async -> SandboxHTTPResponse? {
        switch action {
        case .respond(let status, let reason, let retryAfter):
            return .text(
                status, reason ?? "Injected fault", headers: retryAfter.map { [HTTPHeader(name: "Retry-After", value: String($0))] } ?? [])
        case .delay(let milliseconds):
            try? await Task.sleep(for: .milliseconds(milliseconds))
            return nil
        case .dropConnection:
            return .dropConnection
        case .goAway(let reason):
            var response = SandboxHTTPResponse.text(503, "Service Unavailable")
            response.action = .goAway(#"{"reason":"\#(reason)"}"#)
            return response
        }
    }

    static func messageNumber() -> UInt64 { UInt64.random(in: 1_000_000_000_000_000...9_999_999_999_999_999) }
}

/// The claims of a Google service-account JWT-bearer assertion.
struct GoogleAssertionClaims: JWTPayload {
    var iss: String
    var scope: String
    var aud: String
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
