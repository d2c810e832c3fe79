import Foundation
import JWTKit
import Logging
import PNSSandbox
import Pushgate
import PushgateCurl
import Testing

/// A running sandbox, its files in a temporary folder, and a libcurl client that trusts its CA.
struct SandboxFixture {
    let sandbox: PushSandbox
    let directory: String
    let files: [String: String]
    let clock: ManualClock

    static func start(apnsMaximumConcurrentStreams: Int = 1000, apnsChannelLimit: Int = 10_000) async throws -> SandboxFixture {
        let clock = ManualClock()
        var logger = Logger(label: "test.sandbox")
        logger.logLevel = ProcessInfo.processInfo.environment["PUSHGATE_SANDBOX_DEBUG"] == "1" ? .debug : .warning
        let sandbox = try await PushSandbox.start(
            configuration: SandboxConfiguration(
                apnsMaximumConcurrentStreams: apnsMaximumConcurrentStreams, clock: clock, apnsChannelLimit: apnsChannelLimit),
            logger: logger)
        let directory = NSTemporaryDirectory() + "pushgate-sandbox-" + UUID().uuidString
        let files = try sandbox.writeGatewayFiles(to: directory)
        return SandboxFixture(sandbox: sandbox, directory: directory, files: files, clock: clock)
    }

    func client(_ version: CurlHTTPClientConfiguration.HTTPVersion = .http2, streams: Int = 100) throws -> CurlHTTPClient {
        try CurlHTTPClient(configuration: .init(httpVersion: version, caFile: files["ca"], maximumStreamsPerConnection: streams))
    }

    func stop() async throws {
        try await sandbox.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// An APNs provider token signed with the sandbox's key, issued at `issuedAt` (default: now).
    func providerToken(issuedAt: Double? = nil, keyID: String? = nil, teamID: String? = nil, pem: String? = nil) async throws -> String {
        let credentials = sandbox.credentials
        let keys = JWTKeyCollection()
        let kid = JWKIdentifier(string: keyID ?? credentials.apnsKeyID)
        await keys.add(ecdsa: try ES256PrivateKey(pem: pem ?? credentials.apnsPrivateKeyPEM), kid: kid)
        let claims = APNSProviderClaims(
            iss: teamID ?? credentials.apnsTeamID,
            iat: IssuedAtClaim(value: Date(timeIntervalSince1970: issuedAt ?? clock.now.secondsSinceEpoch)))
        return try await keys.sign(claims, kid: kid)
    }

    /// An APNs request to `token` with `payload` and the usual headers.
    func apnsRequest(
        token: String, jwt: String, payload: String = #"{"aps":{"alert":"hi"}}"#, headers: [(String, String)] = []
    )
        -> CurlRequest
    {
        var all: [(name: String, value: String)] = [
            ("authorization", "bearer \(jwt)"), ("apns-topic", sandbox.credentials.apnsTopic), ("apns-push-type", "alert"),
        ]
        for (name, value) in headers {
            all.removeAll { $0.name == name }
            all.append((name, value))
        }
        return CurlRequest(url: "\(sandbox.endpoints.apns)/3/device/\(token)", headers: all, body: Array(payload.utf8))
    }
}

extension SandboxFixture {
    /// Starts a sandbox and a client, runs `body`, and always shuts both down.
    static func with(
        streams: Int = 1000, channelLimit: Int = 10_000, http: CurlHTTPClientConfiguration.HTTPVersion = .http2,
        _ body: (SandboxFixture, CurlHTTPClient) async throws -> Void
    ) async throws {
        let fixture = try await SandboxFixture.start(apnsMaximumConcurrentStreams: streams, apnsChannelLimit: channelLimit)
        let client = try fixture.client(http)
        do {
            try await body(fixture, client)
        } catch {
            await client.shutdown()
            try await fixture.stop()
            throw error
        }
        await client.shutdown()
        try await fixture.stop()
    }

    /// A Google service-account assertion (RS256) with the given claims overrides.
    func googleAssertion(
        audience: String? = nil, scope: String = "https://www.googleapis.com/auth/firebase.messaging", issuer: String? = nil,
        lifetime: Double = 3600, pem: String? = nil
    ) async throws -> String {
        let credentials = sandbox.credentials
        let keys = JWTKeyCollection()
        await keys.add(rsa: try Insecure.RSA.PrivateKey(pem: pem ?? credentials.fcmPrivateKeyPEM), digestAlgorithm: .sha256)
        let now = Date(timeIntervalSince1970: clock.now.secondsSinceEpoch)
        let claims = GoogleAssertionClaims(
            iss: issuer ?? credentials.fcmClientEmail, scope: scope, aud: audience ?? sandbox.endpoints.googleToken,
            iat: IssuedAtClaim(value: now), exp: ExpirationClaim(value: now.addingTimeInterval(lifetime)))
        return try await keys.sign(claims)
    }

    /// Exchanges an assertion for an FCM access token at the sandbox's token endpoint.
    func fcmAccessToken(_ client: CurlHTTPClient) async throws -> String {
        let assertion = try await googleAssertion()
        let response = try await client.execute(
            CurlRequest(
                url: sandbox.endpoints.googleToken, headers: [("content-type", "application/x-www-form-urlencoded")],
                body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)))
        guard let token = response.json?["access_token"]?.stringValue else {
            throw CurlError.unexpected("token endpoint answered \(response.status) \(response.bodyText)")
        }
        return token
    }

    /// An FCM v1 send of `message` (a JSON object text) with `accessToken`.
    func fcmRequest(message: String, accessToken: String, project: String? = nil) -> CurlRequest {
        CurlRequest(
            url: "\(sandbox.endpoints.fcm)/v1/projects/\(project ?? sandbox.credentials.fcmProjectID)/messages:send",
            headers: [("authorization", "Bearer \(accessToken)"), ("content-type", "application/json; charset=UTF-8")],
            body: Array(#"{"message":\#(message)}"#.utf8))
    }

    /// A legacy GCM send.
    func gcmRequest(_ body: String, key: String? = nil) -> CurlRequest {
        CurlRequest(
            url: sandbox.endpoints.gcm,
            headers: [("authorization", "key=\(key ?? sandbox.credentials.gcmServerKey)"), ("content-type", "application/json")],
            body: Array(body.utf8))
    }
}

extension CurlError {
    static func unexpected(_ message: String) -> CurlError { CurlError(local: message) }
}

extension CurlResponse {
    /// The JSON body parsed, or nil.
    var json: JSONValue? { try? JSONParser.parse(body) }
}
