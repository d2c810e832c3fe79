import Pushgate

/// Huawei's OAuth 2.0 token endpoint: `POST /oauth2/v3/token`, form-encoded client credentials
/// (the app id and app secret).
extension HuaweiService {
    /// Huawei's account-server sub-errors (protocols.md §9).
    enum OAuthSubError: Int {
        /// The client secret is wrong.
        case wrongSecret = 12304
        /// The `client_id` is not an app id.
        case badClientID = 20002
        /// No app has this id.
        case unknownClient = 20003
    }

    /// `{"error":1101,"sub_error":…,"error_description":…}` with 400.
    func oauthError(_ subError: Int, _ description: String) -> SandboxHTTPResponse {
        .json(400, #"{"error":1101,"sub_error":\#(subError),"error_description":\#(Escaping.jsonString(description))}"#)
    }

    func token(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        if let action = state.takeFault(service: .hmsToken, handle: nil), let response = await oauthFault(action, padding: &padding) {
            return response
        }
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        let form = FormEncoding.decode(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "client_credentials" else {
            return oauthError(SandboxAssumptions.hmsMissingParameterSubError, "grant_type must be client_credentials")
        }
        guard let clientID = form["client_id"], !clientID.isEmpty else {
            return oauthError(SandboxAssumptions.hmsMissingParameterSubError, "missing required parameter: client_id")
        }
        guard clientID.utf8.count <= 20, clientID.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return oauthError(OAuthSubError.badClientID.rawValue, "invalid client_id")
        }
        guard clientID == credentials.hmsAppID else { return oauthError(OAuthSubError.unknownClient.rawValue, "client not found") }
        guard let secret = form["client_secret"], !secret.isEmpty else {
            return oauthError(SandboxAssumptions.hmsMissingParameterSubError, "missing required parameter: client_secret")
        }
        guard secret == credentials.hmsAppSecret else { return oauthError(OAuthSubError.wrongSecret.rawValue, "invalid client_secret") }
        let lifetime = SandboxAssumptions.hmsAccessTokenLifetimeSeconds
        let accessToken = state.issueAccessToken(prefix: Self.accessTokenPrefix, lifetime: lifetime)
        return .json(200, #"{"access_token":"\#(accessToken)","expires_in":\#(Int(lifetime)),"token_type":"Bearer"}"#)
    }

    /// An injected fault's answer at the token endpoint, or nil to answer normally (after a delay,
    /// or with `padding` set).
    private func oauthFault(_ action: SandboxFault.Action, padding: inout Int) async -> SandboxHTTPResponse? {
        await action.answer(padding: &padding) { status, reason, retryAfter in
            let error = reason.flatMap { Int($0) } ?? status
            return .json(
                status, #"{"error":\#(error),"error_description":"\#(SandboxAssumptions.hmsOAuthFaultDescription)"}"#,
                headers: retryAfter.map { [HTTPHeader(name: "Retry-After", value: String($0))] } ?? [])
        }
    }
}
