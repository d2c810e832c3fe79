import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateTesting
import PushgateWebhooks
import Testing

/// The poster against the test kit's receiver (a real HTTP server on loopback, checking
/// signatures), over the in-memory store, time stepped by hand: each `postNext` is one worker's
/// step.
@Suite struct WebhookPosterTests {
    static let secret = "whsec_poster"

    /// Names mapped to addresses: what the tests' DNS says.
    struct MappedResolver: HostResolver {
        let names: [String: String]

        func addresses(of host: String) async throws(OutboundRefusal) -> [IPAddress] {
            guard let text = names[host], let address = IPAddress(text) else {
                throw OutboundRefusal(.unresolved(host: host, detail: "not mapped"))
            }
            return [address]
        }
    }

    func poster(
        _ store: InMemoryRegistrationStore, _ receiver: WebhookTestReceiver, clock: ManualClock, retryFor: Int = 3600, batch: Int = 2,
        secrets: [String] = [secret], url: String? = nil, allowed: [String]? = nil, names: [String: String] = [:]
    ) throws -> (WebhookPoster, WebhookEndpoint) {
        var settings = WebhooksConfiguration()
        settings.allowedHosts = allowed ?? [receiver.allowListEntry]
        settings.retryForSeconds = retryFor
        settings.batchMaximumEvents = batch
        settings.timeoutSeconds = 30
        let endpoint = WebhookEndpoint(app: .default, name: "backend", url: url ?? receiver.url, secrets: secrets.map { Array($0.utf8) })
        let transport = try CurlWebhookTransport(
            settings: settings, caFile: nil, outbound: OutboundGuard(resolver: MappedResolver(names: names), clock: clock))
        let poster = WebhookPoster(
            store: store, endpoints: [endpoint], settings: settings, transport: transport,
            clock: clock, owner: "test", logger: Logger(label: "test"))
        return (poster, endpoint)
    }

    func store(events count: Int, clock: ManualClock) async throws -> (InMemoryRegistrationStore, [Int64]) {
        let store = InMemoryRegistrationStore()
        let subscriptions = WebhookSubscriptions([.init(name: "backend", events: [.deliveryFailed])])
        let rows = try (0..<count).flatMap { index in
            subscriptions.rows(
                for: .deliveryFailed(
                    target: DispatchTarget(
                        registrationID: try RegistrationID("r\(index)"), handle: DeviceHandle(uncheckedPlatform: .apns, value: "t\(index)")),
                    verdict: DeliveryVerdict(outcome: .expiredChannel, statusCode: 410, reason: "Unregistered"), attempts: 1,
                    notificationID: "n-1", now: clock.now))
        }
        try await store.appendRows(rows, notificationID: "n-1", page: 1, app: .default)
        let stored = await store.recordedRows(app: .default, after: 0, limit: 100).map(\.sequence)
        return (store, stored)
    }

    /// Steps the poster until it finds nothing due.
    func drain(_ poster: WebhookPoster, _ endpoint: WebhookEndpoint) async {
        while await poster.postNext(endpoint) {}
    }

    @Test func aReceiverAnswering500ForAWhileGetsEveryEventAfterwardsWithItsSequence() async throws {
        let clock = ManualClock()
        let receiver = try await WebhookTestReceiver.start(secret: Self.secret)
        defer { Task { await receiver.stop() } }
        let (store, sequences) = try await store(events: 5, clock: clock)
        let (poster, endpoint) = try poster(store, receiver, clock: clock)
        receiver.fail(next: 3)
        for _ in 0..<3 {
            await drain(poster, endpoint)
            // Backing off: nothing due until its time.
            #expect(await !poster.postNext(endpoint))
            clock.advance(seconds: 10)
        }
        await drain(poster, endpoint)
        #expect(receiver.answers == [500, 500, 500, 200, 200, 200])
        #expect(receiver.refused.isEmpty, "\(receiver.refused)")
        #expect(receiver.events.map(\.sequence) == sequences)
        #expect(Set(receiver.events.map(\.id)).count == 5)
        #expect(
            receiver.events.allSatisfy {
                $0.type == "delivery.failed" && $0.notification == "n-1" && $0.data["outcome"] == "ExpiredChannel"
            })
        #expect(await store.webhookEventCounts(app: .default) == WebhookEventCounts(pending: 0, parked: 0))
    }

    @Test func retryAfterIsHonoured() async throws {
        let clock = ManualClock()
        let receiver = try await WebhookTestReceiver.start(secret: Self.secret)
        defer { Task { await receiver.stop() } }
        let (store, _) = try await store(events: 1, clock: clock)
        let (poster, endpoint) = try poster(store, receiver, clock: clock)
        receiver.fail(next: 1, retryAfter: "30")
        await drain(poster, endpoint)
        clock.advance(seconds: 29)
        #expect(await !poster.postNext(endpoint), "not before the receiver's Retry-After")
        clock.advance(seconds: 1)
        await drain(poster, endpoint)
        #expect(receiver.answers == [500, 200])
    }

    @Test func eventsParkAfterTheRetryTimeHoldNothingBackAndGoOnceRetried() async throws {
        let clock = ManualClock()
        let receiver = try await WebhookTestReceiver.start(secret: Self.secret)
        defer { Task { await receiver.stop() } }
        let (store, sequences) = try await store(events: 2, clock: clock)
        let (poster, endpoint) = try poster(store, receiver, clock: clock, retryFor: 5)
        receiver.fail(next: 100)
        await drain(poster, endpoint)
        clock.advance(seconds: 10)
        await drain(poster, endpoint)
        #expect(await store.webhookEventCounts(app: .default) == WebhookEventCounts(pending: 0, parked: 2))

        // A later event goes while the parked ones wait.
        receiver.fail(next: 0)
        let later = WebhookSubscriptions([.init(name: "backend", events: [.ping])]).rows(
            for: .ping(app: .default, receiver: "backend", now: clock.now))
        try await store.appendRows(later, notificationID: "", page: 0, app: .default)
        await drain(poster, endpoint)
        #expect(receiver.events.map(\.type) == ["ping"])
        #expect(await store.retryParkedWebhookEvents(app: .default, sequences: nil, now: clock.now) == 2)
        await drain(poster, endpoint)
        #expect(receiver.events.map(\.sequence).sorted() == (sequences + [receiver.events[0].sequence]).sorted())
    }

    @Test func duringRotationAReceiverWithTheOldSecretStillVerifies() async throws {
        let clock = ManualClock()
        let receiver = try await WebhookTestReceiver.start(secret: "whsec_old")
        defer { Task { await receiver.stop() } }
        let (store, _) = try await store(events: 1, clock: clock)
        let (rotating, endpoint) = try poster(store, receiver, clock: clock, secrets: ["whsec_new", "whsec_old"])
        await drain(rotating, endpoint)
        #expect(receiver.events.count == 1)
        #expect(receiver.refused.isEmpty)
        // Signed with another secret only: refused.
        let (other, otherEndpoint) = try poster(store, receiver, clock: clock, secrets: ["whsec_new"])
        #expect(await other.ping(otherEndpoint).status == 400)
        #expect(receiver.refused.count == 1)
    }

    /// The push endpoints' SSRF rules: a name a wildcard allows that resolves to a loopback address
    /// is refused without a connection; an exact entry's name is reached at the address it was
    /// checked at (the connection pinned: the tests' name resolves nowhere else).
    @Test func aReceiverIsReachedOnlyAtACheckedAddress() async throws {
        let clock = ManualClock()
        let receiver = try await WebhookTestReceiver.start(secret: Self.secret)
        defer { Task { await receiver.stop() } }
        let (store, _) = try await store(events: 1, clock: clock)
        let port = receiver.allowListEntry.split(separator: ":").last.map(String.init) ?? ""
        let (refused, refusedEndpoint) = try poster(
            store, receiver, clock: clock, url: "https://hooks.example.com:\(port)/hooks", allowed: ["*.example.com"],
            names: ["hooks.example.com": "127.0.0.1"])
        let answer = await refused.ping(refusedEndpoint)
        #expect(answer.status == nil)
        #expect(answer.detail.contains("loopback"), "\(answer)")
        #expect(receiver.answers.isEmpty, "no connection was made")

        let (pinned, pinnedEndpoint) = try poster(
            store, receiver, clock: clock, url: "http://hooks.test:\(port)/hooks", allowed: ["http://hooks.test:\(port)"],
            names: ["hooks.test": "127.0.0.1"])
        #expect(await pinned.ping(pinnedEndpoint).status == 200)
        #expect(receiver.events.map(\.type) == ["ping"])
    }
}
