import Foundation
import JWTKit
import Logging
import Pushgate
import PushgateCurl
import Testing

@testable import PNSSandbox

/// A running sandbox, its files in a temporary folder, and a libcurl client that trusts its CA.
struct SandboxFixture {
    let sandbox: PushSandbox
    let directory: String
    let files: [String: String]
    let clock: ManualSandboxClock

    static func start(apnsMaximumConcurrentStreams: Int = 1000) async throws -> SandboxFixture {
        let clock = ManualSandboxClock(now: Date().timeIntervalSince1970)
        var logger = Logger(label: "test.sandbox")
        logger.logLevel = ProcessInfo.processInfo.environment["PUSHGATE_SANDBOX_DEBUG"] == "1" ? .debug : .warning
        let sandbox = try await PushSandbox.start(
            configuration: SandboxConfiguration(apnsMaximumConcurrentStreams: apnsMaximumConcurrentStreams, clock: clock), logger: logger)
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
            iss: teamID ?? credentials.apnsTeamID, iat: IssuedAtClaim(value: Date(timeIntervalSince1970: issuedAt ?? clock.now())))
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

extension CurlResponse {
    /// The JSON body parsed, or nil.
    var json: JSONValue? { try? JSONParser.parse(body) }
}
