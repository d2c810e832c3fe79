import Foundation
import Pushgate
import PushgateDispatch
import Testing

@testable import PNSSandbox

/// Defects a read of wave 1's code found in the providers' concurrency.
@Suite struct ConcurrencyDefectTests {
    /// Wave 1: the actor awaited the signing, so 100 callers arriving at once each signed a token
    /// (APNs answers `TooManyProviderTokenUpdates` to the extra ones). One signing, one token.
    @Test func concurrentCallersShareOneProviderTokenSigning() async throws {
        let credentials = try SandboxCredentials(topic: "com.example.app", projectID: "project")
        let manager = try await APNSTokenManager(
            keyID: credentials.apnsKeyID, teamID: credentials.apnsTeamID, privateKeyPEM: credentials.apnsPrivateKeyPEM,
            clock: ManualClock())
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await manager.token() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(await manager.generatedCount == 1)
        // A refresh storm after a rejection also signs once.
        let refreshed = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await manager.refresh(after: tokens.first!) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(refreshed.count == 1)
        #expect(await manager.generatedCount <= 2)
    }

    /// Wave 1: when the retry backoff was cancelled, every pending target got `verdicts[0]`,
    /// which could be another token's `Success`.
    @Test func aCancelledLegacyGCMBackoffNeverReportsSuccess() async throws {
        let transport = InMemoryPushTransport { request in
            // The first token is delivered; the second is told to try again later.
            let body =
                #"{"multicast_id":1,"success":1,"failure":1,"canonical_ids":0,"results":[{"message_id":"0:1"},{"error":"Unavailable"}]}"#
            return .success(PushHTTPResponse(status: 200, headers: [], body: Array(body.utf8)))
        }
        let provider = GCMProvider(
            endpoint: "https://fcm.example/fcm/send", serverKey: "key", transport: transport,
            policy: RetryPolicy(maximumAttempts: 4, initialBackoffSeconds: 30, jitter: 0), clock: SystemClock())
        let targets = try [1, 2].map {
            DispatchTarget(
                registrationID: try RegistrationID(String(format: "%032x", $0)),
                handle: DeviceHandle(uncheckedPlatform: .gcm, value: "token-\($0)-" + String(repeating: "x", count: 30)))
        }
        let notification = try Payloads.notify(.gcm)
        let delivery = Task { await provider.deliver(notification, to: targets) }
        try await Task.sleep(for: .milliseconds(300))  // the first answer is in; the retry waits 30 s
        delivery.cancel()
        let reports = await delivery.value
        #expect(reports.count == 2)
        #expect(reports[0].verdict.outcome == .success)
        #expect(reports[1].verdict.outcome != .success, "\(reports[1].verdict)")
        #expect(reports[1].verdict.outcome == .abandoned)
    }
}
