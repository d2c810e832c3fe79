import Foundation
import JWTKit
import Pushgate

/// Google's OAuth token endpoint: `POST /token` with an RS256 JWT-bearer assertion.
extension GoogleService {
    /// The assertion audience Google documents for service accounts.
    static let documentedAudience = "https://oauth2.googleapis.com/token"

    func oauthError(_ error: String, _ description: String) -> SandboxHTTPResponse {
        .json(400, #"{"error":"\#(error)","error_description":"\#(description)"}"#)
    }

    func token(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        if let action = state.takeFault(service: .fcmToken, handle: nil), let response = await Self.apply(action, padding: &padding) {
            return response
        }
        guard request.method == "POST" else { return .text(405, "Method Not Allowed") }
        let form = FormEncoding.decode(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return oauthError("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"] else { return oauthError("invalid_request", "Missing required parameter: assertion") }
        guard APNSAuthenticator.decodeSegment(assertion, 0)?["alg"]?.stringValue == "RS256" else {
            return oauthError("invalid_grant", "Invalid JWT: the algorithm must be RS256")
        }
        let claims: GoogleAssertionClaims
        do {
            claims = try await keys.verify(assertion, as: GoogleAssertionClaims.self)
        } catch {
            return oauthError("invalid_grant", SandboxAssumptions.invalidGrantDescription)
        }
        let now = state.clock.now.secondsSinceEpoch
        let issuedAt = claims.iat.value.timeIntervalSince1970
        let expiresAt = claims.exp.value.timeIntervalSince1970
        guard claims.iss == credentials.fcmClientEmail else { return oauthError("invalid_grant", "Invalid issuer: \(claims.iss)") }
        // Google's documented audience is always https://oauth2.googleapis.com/token (google-auth
        // sends it whatever token_uri says); golang.org/x/oauth2 sends the token URL: both pass.
        guard claims.aud == Self.documentedAudience || claims.aud == tokenURI else {
            return oauthError("invalid_grant", "Invalid JWT: Failed audience check. Expected \(Self.documentedAudience)")
        }
        guard claims.scope.split(separator: " ").contains(where: { Self.scopes.contains(String($0)) }) else {
            return oauthError("invalid_scope", "Invalid OAuth scope: \(claims.scope)")
        }
        guard expiresAt > now, issuedAt <= now + 300, expiresAt - issuedAt <= 3600 else {
            return oauthError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        let lifetime = SandboxAssumptions.fcmAccessTokenLifetimeSeconds
        let accessToken = state.issueAccessToken(prefix: "ya29.sandbox-", lifetime: lifetime)
        return .json(200, #"{"access_token":"\#(accessToken)","expires_in":\#(Int(lifetime)),"token_type":"Bearer"}"#)
    }
}

/// The claims of a Google service-account JWT-bearer assertion.
package struct GoogleAssertionClaims: JWTPayload {
    var iss: String
    var scope: String
    var aud: String
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    package init(iss: String, scope: String, aud: String, iat: IssuedAtClaim, exp: ExpirationClaim) {
        self.iss = iss
        self.scope = scope
        self.aud = aud
        self.iat = iat
        self.exp = exp
    }

    package func verify(using algorithm: some JWTAlgorithm) async throws {}
}
