import Foundation
import JWTKit
import Pushgate

/// APNs authentication, shared by device sends, channel management and broadcasts: provider
/// tokens (ES256 JWT, verified once and cached, with Apple's one-hour lifetime and 20-minute
/// refresh rule) and client certificates from the sandbox's CA.
struct APNSAuthenticator: Sendable {
    let state: SandboxState
    let credentials: SandboxCredentials
    let authority: SandboxCertificateAuthority
    let keys: JWTKeyCollection

    init(state: SandboxState, credentials: SandboxCredentials, authority: SandboxCertificateAuthority) async throws {
        self.state = state
        self.credentials = credentials
        self.authority = authority
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(pem: credentials.apnsPublicKeyPEM), kid: JWKIdentifier(string: credentials.apnsKeyID))
    }

    /// What the connection's client certificate is worth, at the sandbox's time.
    func checkCertificate(_ certificate: [UInt8]) -> APNSClientCertificateCheck {
        authority.checkAPNSClientCertificate(certificate, now: Date(timeIntervalSince1970: state.clock.now.secondsSinceEpoch))
    }

    /// The request's `authorization: bearer <jwt>`: nil when it is accepted, else APNs' refusal.
    func checkProviderToken(_ request: SandboxHTTPRequest) async -> APNSRefusal? {
        guard let authorization = request.header("authorization"),
            SandboxHTTPRequest.name(authorization, hasLowercasePrefix: "bearer "), authorization.utf8.count > "bearer ".utf8.count
        else { return APNSRefusal(403, "MissingProviderToken") }
        // Trimmed without Foundation (trimmingCharacters bridges through NSString on Linux).
        var trimmed = Substring(authorization.dropFirst("bearer ".count))
        while let first = trimmed.utf8.first, first == 0x20 || first == 0x09 { trimmed = trimmed.dropFirst() }
        while let last = trimmed.utf8.last, last == 0x20 || last == 0x09 { trimmed = trimmed.dropLast() }
        return await verifyProviderToken(String(trimmed), connection: request.connection)
    }

    /// Authenticates a request made for a whole app (channel management, broadcasts): a
    /// development client certificate whose topics include `app`, else a provider token. (Apple
    /// documents certificates for broadcast sends; for management it is UNCONFIRMED, so the
    /// sandbox accepts both, as for sends.)
    func authenticateApp(_ request: SandboxHTTPRequest, app: String) async -> APNSRefusal? {
        guard let certificate = request.clientCertificate else { return await checkProviderToken(request) }
        switch checkCertificate(certificate) {
        case .bad: return APNSRefusal(403, "BadCertificate")
        case .valid(_, development: false): return APNSRefusal(403, "BadCertificateEnvironment")
        case .valid(let topics, development: true):
            return topics.contains(app) ? nil : APNSRefusal(400, SandboxAssumptions.apnsWrongTopicReason)
        }
    }

    /// Checks a provider token as APNs does: each distinct token is verified once and its verdict
    /// cached; an accepted token stays valid until its `iat` is an hour old. A connection that
    /// switches to a newer token sooner than 20 minutes after its previous one gets
    /// `TooManyProviderTokenUpdates` (Apple scopes the rule to the connection: a new process with a
    /// fresh token on a new connection — a restart, a replica — is accepted).
    func verifyProviderToken(_ jwt: String, connection: UInt64) async -> APNSRefusal? {
        let now = state.clock.now.secondsSinceEpoch
        // The common case, without suspending or parsing: a token judged before, its `iat` kept.
        if let cached = state.providerToken(jwt) {
            if let reason = cached.verdict { return APNSRefusal(403, reason) }
            if let issuedAt = cached.issuedAt, now - issuedAt > SandboxAssumptions.apnsProviderTokenLifetimeSeconds {
                return APNSRefusal(403, "ExpiredProviderToken")
            }
            return refreshVerdict(issuedAt: cached.issuedAt, connection: connection)
        }
        let verdict: APNSRefusal?
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
                    verdict = APNSRefusal(403, "InvalidProviderToken")
                } else if now - claims.iat.value.timeIntervalSince1970 > SandboxAssumptions.apnsProviderTokenLifetimeSeconds {
                    verdict = APNSRefusal(403, "ExpiredProviderToken")
                } else {
                    verdict = nil
                }
            } catch {
                verdict = APNSRefusal(403, "InvalidProviderToken")
            }
        } else {
            verdict = APNSRefusal(403, "InvalidProviderToken")
        }
        // Expiry is re-checked on every use, so only the other verdicts are cached.
        if verdict?.reason != "ExpiredProviderToken" { state.recordProviderToken(jwt, verdict: verdict?.reason, issuedAt: issuedAt) }
        if verdict != nil { return verdict }
        return refreshVerdict(issuedAt: issuedAt, connection: connection)
    }

    /// A valid token on `connection`: refused when the connection moved to it too soon after its
    /// previous token.
    private func refreshVerdict(issuedAt: Double?, connection: UInt64) -> APNSRefusal? {
        guard let issuedAt else { return nil }
        let accepted = state.acceptProviderToken(
            keyID: credentials.apnsKeyID, connection: connection, issuedAt: issuedAt,
            minimumInterval: SandboxAssumptions.apnsMinimumTokenRefreshSeconds)
        return accepted ? nil : APNSRefusal(429, "TooManyProviderTokenUpdates")
    }

    static func decodeSegment(_ jwt: String, _ index: Int) -> JSONValue? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(String(parts[index])) else { return nil }
        return try? JSONParser.parse(Array(data))
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
