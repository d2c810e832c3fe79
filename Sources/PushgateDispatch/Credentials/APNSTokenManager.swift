import Foundation
import JWTKit
import Pushgate

/// Provider tokens for APNs token authentication: one ES256 JWT shared by every connection,
/// regenerated when it is 50 minutes old (Apple rejects tokens older than an hour) and never more
/// often than every 20 minutes (Apple answers `TooManyProviderTokenUpdates`).
public actor APNSTokenManager {
    public static let refreshAge: Double = 50 * 60
    public static let minimumRefreshInterval: Double = 20 * 60

    /// The key id (`kid`) and team id (`iss`) the tokens carry.
    public nonisolated let keyID: String
    public nonisolated let teamID: String
    private let keys: JWTKeyCollection
    private let clock: any PushgateClock
    private var current: (token: String, issuedAt: Double)?
    /// The signing in progress: callers arriving meanwhile await it instead of signing again
    /// (the actor is re-entrant at `await`, and each extra token would be one more update
    /// APNs counts against `TooManyProviderTokenUpdates`).
    private var inFlight: Task<String, any Error>?
    /// How many tokens were generated (diagnostics and tests).
    public private(set) var generatedCount = 0

    /// - Parameter privateKeyPEM: the `.p8` key (PKCS#8 PEM).
    public init(keyID: String, teamID: String, privateKeyPEM: String, clock: any PushgateClock) async throws {
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: privateKeyPEM), kid: JWKIdentifier(string: keyID))
    }

    /// The token to send now.
    public func token() async throws -> String {
        let now = clock.now.secondsSinceEpoch
        if let current, now - current.issuedAt < Self.refreshAge { return current.token }
        return try await generate(now: now)
    }

    /// APNs refused `token` as expired or invalid: returns a fresh token, unless `token` was already
    /// replaced (another request refreshed first) or the current one is younger than 20 minutes.
    public func refresh(after token: String) async throws -> String {
        let now = clock.now.secondsSinceEpoch
        if let current {
            if current.token != token || now - current.issuedAt < Self.minimumRefreshInterval { return current.token }
        }
        return try await generate(now: now)
    }

    private func generate(now: Double) async throws -> String {
        if let inFlight { return try await inFlight.value }
        let issuedAt = now.rounded(.down)
        let claims = ProviderClaims(iss: teamID, iat: IssuedAtClaim(value: Date(timeIntervalSince1970: issuedAt)))
        let (keys, keyID) = (self.keys, self.keyID)
        // Shared with the callers that arrive while it signs (`inFlight`); it ends when the signing
        // does (no I/O), awaited below.
        let task = Task<String, any Error> { try await keys.sign(claims, kid: JWKIdentifier(string: keyID)) }
        inFlight = task
        defer { inFlight = nil }
        let token = try await task.value
        current = (token, issuedAt)
        generatedCount += 1
        return token
    }

    struct ProviderClaims: JWTPayload {
        var iss: String
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
