import Foundation
import PNSSandbox
import Pushgate
import PushgateDispatch
import Testing

/// Concurrency defects the providers guard against.
@Suite struct ConcurrencyDefectTests {
    /// An actor that awaits the signing lets 100 callers arriving at once each sign a token
    /// (APNs answers `TooManyProviderTokenUpdates` to the extra ones). One signing, one token.
    @Test func concurrentCallersShareOneProviderTokenSigning() async throws {
        let credentials = try SandboxCredentials(topic: "com.example.app", projectID: "project")
        let clock = ManualClock()
        let manager = try await APNSTokenManager(
            keyID: credentials.apnsKeyID, teamID: credentials.apnsTeamID, privateKeyPEM: credentials.apnsPrivateKeyPEM, clock: clock)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await manager.token() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(await manager.generatedCount == 1)

        // 21 minutes later APNs rejects that token on every connection at once: the refresh storm
        // signs once too, and every caller gets the new token.
        clock.advance(seconds: 21 * 60)
        let rejected = try #require(tokens.first)
        let refreshed = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await manager.refresh(after: rejected) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(refreshed.count == 1)
        #expect(!refreshed.contains(rejected))
        #expect(await manager.generatedCount == 2)
    }

    /// The OAuth access-token manager (FCM service accounts, WNS client credentials) is re-entrant
    /// at its fetch the same way: 100 callers arriving while the token endpoint answers share one
    /// request, and so do 50 callers refreshing the same refused token.
    @Test func concurrentCallersShareOneAccessTokenFetch() async throws {
        let fetches = FetchCounter()
        let manager = OAuthTokenManager(clock: ManualClock()) {
            let number = await fetches.next()
            try await Task.sleep(for: .milliseconds(50))  // the token endpoint takes a while to answer
            return ("access-token-\(number)", 3600)
        }
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await manager.token() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens == ["access-token-1"])
        #expect(await fetches.count == 1)
        #expect(await manager.fetchCount == 1)

        let refreshed = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await manager.refresh(after: "access-token-1") } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(refreshed == ["access-token-2"])
        #expect(await fetches.count == 2)
        #expect(await manager.fetchCount == 2)
    }

    /// When the retry backoff is cancelled, no pending target gets `verdicts[0]`, which could be
    /// another token's `Success`.
    @Test(.timeLimit(.minutes(1))) func aCancelledLegacyGCMBackoffNeverReportsSuccess() async throws {
        let transport = InMemoryPushTransport { _ in
            // The first token is delivered; the second is told to try again later.
            let body =
                #"{"multicast_id":1,"success":1,"failure":1,"canonical_ids":0,"results":[{"message_id":"0:1"},{"error":"Unavailable"}]}"#
            return .success(PushHTTPResponse(status: 200, headers: [], body: Array(body.utf8)))
        }
        let clock = BackoffParkingClock()
        let provider = GCMProvider(
            endpoint: "https://fcm.example/fcm/send", serverKey: "key", transport: transport,
            policy: RetryPolicy(maximumAttempts: 4, initialBackoffSeconds: 30, maximumBackoffSeconds: 30, jitter: 0), clock: clock)
        let targets = try [1, 2].map {
            DispatchTarget(
                registrationID: try RegistrationID(String(format: "%032x", $0)),
                handle: DeviceHandle(uncheckedPlatform: .gcm, value: "token-\($0)-" + String(repeating: "x", count: 30)))
        }
        let notification = try Payloads.notify(.gcm)
        let delivery = Task { await provider.deliver(notification, to: targets) }
        // The first answer is in and the provider backs off before retrying the second token:
        // cancel the delivery during that wait.
        var waits = clock.waits.makeAsyncIterator()
        let wait = await waits.next()
        #expect(wait == 30)
        delivery.cancel()
        let reports = await delivery.value

        #expect(transport.requests.count == 1)
        #expect(reports.count == 2)
        #expect(reports[0].verdict.outcome == .success)
        #expect(reports[0].verdict.serviceMessageID == "0:1")
        #expect(reports[1].verdict.outcome != .success, "\(reports[1].verdict)")
        #expect(reports[1].verdict.outcome == .abandoned)
        #expect(reports[1].verdict.serviceMessageID == nil)
        #expect(reports[1].verdict.reason == "cancelled while waiting to retry after Unavailable")
        #expect(reports[1].attempts == 1)
    }
}

/// Counts calls of a fake token endpoint.
actor FetchCounter {
    private(set) var count = 0

    /// Counts one call; returns its number, from 1.
    func next() -> Int {
        count += 1
        return count
    }
}

/// A clock whose `sleep` announces the wait in `waits` and then ends only when the sleeping task
/// is cancelled, so a test can cancel exactly during a backoff without racing the wall clock.
/// Its time is a ``ManualClock`` that does not move.
final class BackoffParkingClock: PushgateClock {
    /// Every wait requested, in seconds, as it starts.
    let waits: AsyncStream<Double>
    private let announce: AsyncStream<Double>.Continuation
    private let time = ManualClock()

    init() { (waits, announce) = AsyncStream.makeStream() }

    var now: Timestamp { time.now }

    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: Timestamp, tolerance: Duration? = nil) async throws {
        announce.yield(now.duration(to: deadline).seconds)
        // Parked until cancelled (the test's time limit ends it otherwise).
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
