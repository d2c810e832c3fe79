import Foundation
import Pushgate
import PushgateXML

/// Windows Push Notification Services: the OAuth token endpoint (`POST /accesstoken.srf`, client
/// credentials) and channel URIs (`POST /?token=…`) over HTTP/1.1.
struct WNSService: SandboxHTTPResponder {
    let state: SandboxState
    let credentials: SandboxCredentials

    static let rootElements = ["wns/toast": "toast", "wns/tile": "tile", "wns/badge": "badge"]
    /// The Entra ID (v2.0) scope for WNS.
    static let entraScope = "https://wns.windows.com/.default"

    /// `/{tenant}/oauth2/v2.0/token` (or the v1 `/{tenant}/oauth2/token`): Microsoft Entra ID.
    static func isEntraTokenPath(_ path: String) -> Bool {
        let parts = path.split(separator: "/")
        return parts.count >= 3 && parts[1] == "oauth2" && parts.last == "token"
    }

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        // Set by a fault that pads the answer.
        var padding = 0
        if request.path == "/accesstoken.srf" || Self.isEntraTokenPath(request.path) {
            let response = await token(request, padding: &padding).padded(padding)
            state.count("wns-token", status: response.status)
            return response
        }
        let response = await send(request, padding: &padding).padded(padding)
        state.count("wns", status: response.status)
        return response
    }

    private func token(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        if let action = state.takeFault(service: .wnsToken, handle: nil),
            let response = await GoogleService.apply(action, padding: &padding)
        {
            return response
        }
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        let form = FormEncoding.decode(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "client_credentials" else {
            return .json(400, #"{"error":"unsupported_grant_type","error_description":"The grant type is not supported."}"#)
        }
        let lifetime = SandboxAssumptions.wnsAccessTokenLifetimeSeconds
        if Self.isEntraTokenPath(request.path) {
            // Windows App SDK: Microsoft Entra ID client credentials for the WNS resource, at the
            // tenant's v2.0 endpoint (whose answer carries numbers; v1.0's carried strings).
            let tenant = request.path.split(separator: "/").first.map(String.init) ?? ""
            guard tenant == credentials.entraTenantID else {
                return .json(
                    400,
                    #"{"error":"invalid_request","error_description":"AADSTS90002: Tenant '\#(tenant.prefix(64))' not found."}"#)
            }
            guard form["client_id"] == credentials.entraClientID else {
                return .json(
                    400,
                    #"{"error":"unauthorized_client","error_description":"AADSTS700016: Application with identifier was not found in the directory."}"#
                )
            }
            guard form["client_secret"] == credentials.entraClientSecret else {
                return .json(
                    401, #"{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}"#)
            }
            guard form["scope"] == Self.entraScope else {
                return .json(
                    400,
                    #"{"error":"invalid_scope","error_description":"AADSTS70011: The provided value for the input parameter 'scope' is not valid. Expected \#(Self.entraScope)."}"#
                )
            }
            let accessToken = state.issueAccessToken(prefix: "eyJ0eXAiOiJKV1Qi.sandbox-", lifetime: lifetime)
            let seconds = Int(lifetime) - 1
            return .json(
                200, #"{"token_type":"Bearer","expires_in":\#(seconds),"ext_expires_in":\#(seconds),"access_token":"\#(accessToken)"}"#)
        }
        guard form["client_id"] == credentials.wnsClientID, form["client_secret"] == credentials.wnsClientSecret else {
            return .json(400, #"{"error":"invalid_client","error_description":"Invalid client id or client secret."}"#)
        }
        guard form["scope"] == "notify.windows.com" || form["scope"] == Self.entraScope else {
            return .json(400, #"{"error":"invalid_scope","error_description":"The scope must be notify.windows.com."}"#)
        }
        let accessToken = state.issueAccessToken(prefix: "EgAcAQMAAAAEgAAAC4AA", lifetime: lifetime)
        return .json(200, #"{"token_type":"bearer","access_token":"\#(accessToken)","expires_in":\#(Int(lifetime))}"#)
    }

    private func reject(_ status: Int, _ description: String?, retryAfter: Int? = nil, extra: [HTTPHeader] = []) -> SandboxHTTPResponse {
        var headers = [HTTPHeader(name: "X-WNS-Debug-Trace", value: "SANDBOX\(Int.random(in: 1000...9999))")]
        if let description { headers.append(HTTPHeader(name: "X-WNS-Error-Description", value: description)) }
        if let retryAfter { headers.append(HTTPHeader(name: "Retry-After", value: String(retryAfter))) }
        return SandboxHTTPResponse(status: status, headers: headers + extra)
    }

    private func send(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return reject(405, "Only POST is supported") }
        guard let token = request.query["token"], !token.isEmpty else { return reject(404, "The channel URI is not valid") }
        // Percent-escapes compare case-insensitively (RFC 3986 §2.1): urllib3 sends %2B for the
        // %2b the channel was issued with. Channels are issued with lower-case escapes.
        let channel = Self.lowercasingPercentEscapes("https://\(request.header("Host") ?? "")\(request.target)")
        guard let authorization = request.header("Authorization"), authorization.lowercased().hasPrefix("bearer "),
            state.isAccessTokenValid(String(authorization.dropFirst("bearer ".count)))
        else { return reject(401, "The access token is missing, invalid or expired") }

        if let action = state.takeFault(service: .wns, handle: channel) {
            switch action {
            case .respond(200, let verdict?, _) where ["dropped", "channelthrottled"].contains(verdict):
                // Accepted but not delivered: WNS's `X-WNS-Status` verdicts with a 200.
                return SandboxHTTPResponse(
                    status: 200,
                    headers: [
                        HTTPHeader(name: "X-WNS-Status", value: verdict),
                        HTTPHeader(
                            name: "X-WNS-Msg-ID", value: SandboxCredentials.randomHex(SandboxAssumptions.wnsMessageIDLength).uppercased()),
                        HTTPHeader(name: "X-WNS-Debug-Trace", value: "SANDBOX\(Int.random(in: 1000...9999))"),
                    ] + Self.correlation(request))
            case .respond(let status, let reason, let retryAfter):
                return reject(status, reason, retryAfter: retryAfter, extra: Self.correlation(request))
            case .delay(let milliseconds):
                try? await Task.sleep(for: .milliseconds(milliseconds))
            case .dropConnection:
                return .dropConnection
            case .goAway:
                var response = reject(503, "The service is shutting down")
                response.action = .goAway("")
                return response
            case .padBody(let bytes):
                padding = bytes
            }
        }

        guard let type = request.header("X-WNS-Type") else { return reject(400, "The X-WNS-Type header is missing") }
        guard type == "wns/raw" || Self.rootElements[type] != nil else { return reject(400, "X-WNS-Type '\(type)' is not valid") }
        let contentType = request.header("Content-Type")?.lowercased() ?? ""
        if type == "wns/raw" {
            guard contentType.hasPrefix("application/octet-stream") else {
                return reject(400, "Raw notifications must be sent as application/octet-stream")
            }
        } else if !contentType.hasPrefix("text/xml") {
            return reject(400, "Toast, tile and badge notifications must be sent as text/xml")
        }
        if let policy = request.header("X-WNS-Cache-Policy"), !["cache", "no-cache"].contains(policy) {
            return reject(400, "X-WNS-Cache-Policy must be cache or no-cache")
        }
        if let ttl = request.header("X-WNS-TTL"), Int(ttl).map({ $0 < 0 }) ?? true { return reject(400, "X-WNS-TTL must be a number") }
        if let tag = request.header("X-WNS-Tag"), type != "wns/tile" || tag.count > 16 {
            return reject(400, "X-WNS-Tag is allowed on tiles only, at most 16 characters")
        }
        if request.header("X-WNS-SuppressPopup") != nil {
            // Microsoft: Windows Phone channels only; "on a Windows channel, your notification will
            // be dropped and you will receive an error response" (status UNCONFIRMED: 400).
            return reject(
                400, "X-WNS-SuppressPopup is valid on Windows Phone channels only",
                extra: [HTTPHeader(name: "X-WNS-Status", value: "dropped")])
        }
        if let status = request.header("X-WNS-RequestForStatus"), !["true", "false"].contains(status) {
            return reject(400, "X-WNS-RequestForStatus must be true or false")
        }
        if request.bodyTooLarge || request.body.count > ServiceLimits.wnsPayloadBytes {
            return reject(413, "The notification payload exceeds 5000 bytes")
        }
        if let expected = Self.rootElements[type] {
            do {
                let root = try XMLPayload.rootElementName(of: request.body)
                guard root == expected else { return reject(400, "The payload root element <\(root)> does not match X-WNS-Type \(type)") }
            } catch {
                return reject(400, "The XML payload is not valid: \(error.description)")
            }
        }

        guard let device = state.lookUp(handle: channel), device.platform == .wns else {
            return reject(404, "The channel URI is not valid or not recognized by WNS")
        }
        if device.belongsToAnotherApp { return reject(403, "The channel belongs to another app") }
        if device.status != .active { return reject(410, "The channel expired") }

        let messageID = SandboxCredentials.randomHex(SandboxAssumptions.wnsMessageIDLength).uppercased()
        state.deliver(
            deviceID: device.id,
            state.keepsInboxes
                ? ReceivedNotification(
                    platform: .wns, deviceID: device.id, messageID: messageID,
                    headers: request.headers.filter {
                        SandboxHTTPRequest.name($0.name, hasLowercasePrefix: "x-wns-")
                            || SandboxHTTPRequest.sameName($0.name, "content-type")
                    },
                    payload: String(decoding: request.body, as: UTF8.self), receivedAt: state.clock.now.secondsSinceEpoch) : nil)
        var headers = [
            HTTPHeader(name: "X-WNS-Status", value: "received"), HTTPHeader(name: "X-WNS-Msg-ID", value: messageID),
            HTTPHeader(name: "X-WNS-Debug-Trace", value: "SANDBOX\(Int.random(in: 1000...9999))"),
        ]
        if request.header("X-WNS-RequestForStatus") == "true" {
            headers.append(HTTPHeader(name: "X-WNS-DeviceConnectionStatus", value: "connected"))
        }
        return SandboxHTTPResponse(status: 200, headers: headers + Self.correlation(request))
    }

    static func lowercasingPercentEscapes(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var characters = Array(text)
        var index = 0
        while index < characters.count {
            if characters[index] == "%", index + 2 < characters.count {
                characters[index + 1] = Character(characters[index + 1].lowercased())
                characters[index + 2] = Character(characters[index + 2].lowercased())
                index += 3
            } else {
                index += 1
            }
        }
        return String(characters)
    }

    /// `MS-CV`: the request's correlation vector extended, or a new one (Microsoft asks senders to
    /// quote it in problem reports).
    static func correlation(_ request: SandboxHTTPRequest) -> [HTTPHeader] {
        let vector = request.header("MS-CV").map { "\($0).1" } ?? "\(SandboxCredentials.randomToken(16)).0"
        return [HTTPHeader(name: "MS-CV", value: vector)]
    }
}
