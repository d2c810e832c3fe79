import Crypto
import Foundation
import JWTKit
import Pushgate

/// VAPID tokens (RFC 8292) for one application server key: an ES256 JWT per push service origin
/// (`aud`), valid 12 hours (`exp`; the services take at most 24), with the contact as `sub`;
/// each cached until an hour before it expires.
public actor VAPIDSigner {
    public static let lifetime: Double = 12 * 3600
    public static let renewBefore: Double = 3600

    /// The application server key (base64url), sent as `k=`.
    public nonisolated let publicKey: String
    private let subject: String
    private let keys: JWTKeyCollection
    private let clock: any PushgateClock
    private var tokens: [String: (token: String, expires: Double)] = [:]
    /// Signings in progress, by audience: callers arriving meanwhile (the actor is re-entrant at
    /// `await`) take the same token instead of signing one each.
    private var signing: [String: Task<String, any Error>] = [:]
    /// Most origins kept: the allow-list's wildcards admit any number of hosts.
    public static let maximumCachedAudiences = 1000
    /// How many tokens were signed (diagnostics and tests).
    public private(set) var signedCount = 0

    public enum Failure: Error, CustomStringConvertible {
        case badPrivateKey
        case keysDoNotMatch

        public var description: String {
            switch self {
            case .badPrivateKey: "vapidPrivateKey is not a P-256 private key (base64url of its 32 bytes, or PEM)"
            case .keysDoNotMatch: "vapidPrivateKey is not the private key of vapidPublicKey"
            }
        }
    }

    /// - Parameters:
    ///   - privateKey: the 32-byte scalar in base64url, or a PEM key.
    ///   - publicKey: the application server key in base64url; checked against the private key.
    public init(subject: String, publicKey: String, privateKey: String, clock: any PushgateClock) async throws(Failure) {
        let key = try Self.privateKey(privateKey)
        guard Base64URL.decode(publicKey) == Array(key.publicKey.x963Representation) else { throw .keysDoNotMatch }
        self.publicKey = Base64URL.encode(key.publicKey.x963Representation)
        self.subject = subject
        self.clock = clock
        keys = JWTKeyCollection()
        do { await keys.add(ecdsa: try ES256PrivateKey(backing: key)) } catch { throw .badPrivateKey }
    }

    /// A P-256 signing key from base64url (32 bytes) or PEM.
    public static func privateKey(_ text: String) throws(Failure) -> P256.Signing.PrivateKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("-----BEGIN") {
            do { return try P256.Signing.PrivateKey(pemRepresentation: trimmed) } catch { throw .badPrivateKey }
        }
        guard let raw = Base64URL.decode(trimmed), raw.count == 32 else { throw .badPrivateKey }
        do { return try P256.Signing.PrivateKey(rawRepresentation: raw) } catch { throw .badPrivateKey }
    }

    /// The token for `audience` (an endpoint's origin) to send now.
    public func token(audience: String) async throws -> String {
        let now = clock.now.secondsSinceEpoch
        if let cached = tokens[audience], cached.expires - now > Self.renewBefore { return cached.token }
        return try await sign(audience: audience, now: now)
    }

    /// The service refused `token`: a new one, unless `token` was already replaced.
    public func refresh(audience: String, after token: String) async throws -> String {
        if let cached = tokens[audience], cached.token != token { return cached.token }
        return try await sign(audience: audience, now: clock.now.secondsSinceEpoch)
    }

    private func sign(audience: String, now: Double) async throws -> String {
        if let running = signing[audience] { return try await running.value }
        let expires = (now + Self.lifetime).rounded(.down)
        let claims = Claims(aud: audience, exp: ExpirationClaim(value: Date(timeIntervalSince1970: expires)), sub: subject)
        let keys = self.keys
        // Shared with the callers that arrive while it signs (`signing`); it ends when the signing
        // does (no I/O), awaited below.
        let task = Task<String, any Error> { try await keys.sign(claims, header: ["typ": "JWT"]) }
        signing[audience] = task
        defer { signing[audience] = nil }
        let token = try await task.value
        if tokens.count >= Self.maximumCachedAudiences {
            // Expired tokens go first; if every one is current, the one that expires soonest.
            tokens = tokens.filter { $0.value.expires > now }
            if tokens.count >= Self.maximumCachedAudiences, let soonest = tokens.min(by: { $0.value.expires < $1.value.expires })?.key {
                tokens[soonest] = nil
            }
        }
        tokens[audience] = (token, expires)
        signedCount += 1
        return token
    }

    struct Claims: JWTPayload {
        var aud: String
        var exp: ExpirationClaim
        var sub: String
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A new key pair: the public key (the application server key) and the private scalar, both
    /// base64url.
    public static func generateKeyPair() -> (publicKey: String, privateKey: String) {
        let key = P256.Signing.PrivateKey()
        return (Base64URL.encode(key.publicKey.x963Representation), Base64URL.encode(key.rawRepresentation))
    }
}
