import Foundation
import Pushgate

/// Huawei Push Kit's server API v1 on one listener: the OAuth 2.0 token endpoint
/// (`POST /oauth2/v3/token`, client credentials) and the send API
/// (`POST /v1/<appId>/messages:send`, up to 1,000 tokens, per-token results as 80100000's
/// illegal tokens). Codes and their texts are in ``HMSAnswer``; what Huawei leaves unsaid, in
/// ``SandboxAssumptions``.
struct HuaweiService: SandboxHTTPResponder {
    let state: SandboxState
    let credentials: SandboxCredentials

    static let tokenPath = "/oauth2/v3/token"
    static let sendPrefix = "/v1/"
    static let sendSuffix = "/messages:send"
    /// Issued access tokens start with this (Huawei's samples' tokens start `CgB6e3x9`), so a
    /// token another sandbox service issued is unknown here.
    static let accessTokenPrefix = "CgB6e3x9"

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let path = request.path
        // Set by a fault that pads the answer.
        var padding = 0
        if path == Self.tokenPath {
            let response = await token(request, padding: &padding).padded(padding)
            state.count("hms-token", status: response.status)
            return response
        }
        if path.hasPrefix(Self.sendPrefix), path.hasSuffix(Self.sendSuffix) {
            let response =
                request.bodyTooLarge
                ? HMSAnswer.tooLarge.response(requestID: requestID()) : await send(request, padding: &padding).padded(padding)
            state.count("hms", status: response.status)
            return response
        }
        return .text(404, "Not Found")
    }

    /// A `requestId` in Huawei's shape: the time in milliseconds, then 11 digits.
    func requestID() -> String {
        String(Int64(state.clock.now.secondsSinceEpoch * 1000)) + String(UInt64.random(in: 10_000_000_000...99_999_999_999))
    }

    func send(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        let requestID = requestID()
        let appID = request.path.dropFirst(Self.sendPrefix.count).dropLast(Self.sendSuffix.count)
        if let refusal = authenticate(request, appID: appID) { return refusal.response(requestID: requestID) }
        let parsed: HMSSendRequest
        do {
            parsed = try HMSSendRequest(body: request.body)
        } catch {
            return error.response(requestID: requestID)
        }
        if let action = takeFault(for: parsed.target) {
            let internalError = HMSAnswer(code: HMSAnswer.internalError.code, msg: HMSAnswer.internalError.msg, status: 503)
            if let answer = await action.answer(
                padding: &padding, goingAway: internalError.response(requestID: requestID),
                respond: { status, reason, retryAfter in
                    let code = reason ?? SandboxAssumptions.hmsDefaultFaultCode
                    return HMSAnswer(code: code, msg: HMSAnswer.text(of: code) ?? "Injected fault", status: status, retryAfter: retryAfter)
                        .response(requestID: requestID)
                })
            {
                return answer
            }
        }
        guard case .tokens(let tokens) = parsed.target else { return HMSAnswer.success.response(requestID: requestID) }
        var reached: [SandboxDevice] = []
        var illegal: [String] = []
        for token in tokens {
            if let device = state.lookUp(handle: token), device.platform == .hms, device.status == .active, !device.belongsToAnotherApp {
                reached.append(device)
            } else {
                illegal.append(token)
            }
        }
        if reached.isEmpty { return HMSAnswer.allTokensInvalid.response(requestID: requestID) }
        if !parsed.validateOnly {
            let payload = String(decoding: parsed.delivered.serialized(), as: UTF8.self)
            for device in reached { deliver(payload, request: request, to: device, messageID: requestID) }
        }
        let answer = illegal.isEmpty ? HMSAnswer.success : .partial(success: reached.count, illegalTokens: illegal)
        return answer.response(requestID: requestID)
    }

    /// The refusal of a request without a valid access token of this app, or nil.
    private func authenticate(_ request: SandboxHTTPRequest, appID: Substring) -> HMSAnswer? {
        guard let authorization = request.header("authorization"), SandboxHTTPRequest.name(authorization, hasLowercasePrefix: "bearer ")
        else { return .oauthFailed }
        let token = authorization.dropFirst("bearer ".count)
        guard !token.isEmpty, !token.contains(" ") else { return .oauthFailed }
        guard token.hasPrefix(Self.accessTokenPrefix), state.isAccessTokenValid(String(token)) else { return .oauthExpired }
        // A token bought with one app's credentials sends for that app only.
        return appID == credentials.hmsAppID ? nil : .oauthFailed
    }

    /// The first fault for a token of the request (or for any request), taking one use.
    private func takeFault(for target: HMSSendRequest.Target) -> SandboxFault.Action? {
        guard case .tokens(let tokens) = target else { return state.takeFault(service: .hms, handle: nil) }
        for token in tokens {
            if let action = state.takeFault(service: .hms, handle: token) { return action }
        }
        return nil
    }

    /// Puts the message (without its token list) in the device's inbox.
    private func deliver(_ payload: String, request: SandboxHTTPRequest, to device: SandboxDevice, messageID: String) {
        state.deliver(
            deviceID: device.id,
            state.keepsInboxes
                ? ReceivedNotification(
                    platform: .hms, deviceID: device.id, messageID: messageID,
                    headers: request.headers.filter { SandboxHTTPRequest.sameName($0.name, "content-type") }, payload: payload,
                    receivedAt: state.clock.now.secondsSinceEpoch) : nil)
    }
}
