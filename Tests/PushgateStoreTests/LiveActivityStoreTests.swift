import Foundation
import Pushgate
import PushgateSQLite
import Testing

/// Live Activity tokens are registrations of their own kind, on every store: no ordinary send
/// reaches them, an activity's sends reach its owner's update tokens only, its stamps increase,
/// and `end` retires its tokens.
@Suite struct LiveActivityStoreTests {
    let order = try! ActivityName("order-4711")
    let deliveryType = try! ActivityAttributesType("DeliveryAttributes")

    func token(_ n: Int) -> DeviceHandle { DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", n)) }

    /// alice's device, her push-to-start token, her update token of order-4711; bob's update token
    /// of his own order-4711.
    func seed(
        _ store: any GatewayStore
    ) async throws -> (device: RegistrationID, start: RegistrationID, alice: RegistrationID, bob: RegistrationID) {
        let ids = (try RegistrationID("r1"), try RegistrationID("r2"), try RegistrationID("r3"), try RegistrationID("r4"))
        try await store.restore(
            [
                try Registration(id: ids.0, handle: token(1), tags: [try Tag("username:alice")], owner: "alice"),
                try Registration(
                    id: ids.1, handle: token(2), tags: [try Tag("username:alice")], owner: "alice",
                    kind: .pushToStart(attributesType: deliveryType)),
                try Registration(
                    id: ids.2, handle: token(3), tags: [try Tag("username:alice")], owner: "alice", kind: .liveActivity(name: order)),
                try Registration(
                    id: ids.3, handle: token(4), tags: [try Tag("username:bob")], owner: "bob", kind: .liveActivity(name: order)),
            ], now: start)
        return ids
    }

    func targets(_ store: any GatewayStore, _ selector: RegistrationSelector) async throws -> [RegistrationID] {
        var ids: [RegistrationID] = []
        for try await page in store.deliveryTargets(selecting: selector, platforms: .all, app: .default, pageSize: 2, now: start) {
            ids += page.map(\.registrationID)
        }
        return ids
    }

    @Test(arguments: StoreKind.allCases)
    func anOrdinarySendReachesDevicesOnlyAndAnActivityItsOwnersTokens(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let ids = try await seed(store)
        let alice = TagExpression.tag(try Tag("username:alice"))
        #expect(try await targets(store, .devices(alice)) == [ids.device], "pns=apns&to_tag=alice reaches her device token only")
        #expect(try await targets(store, .devices(nil)) == [ids.device], "a broadcast reaches devices only")
        #expect(
            try await targets(store, RegistrationSelector(kind: .pushToStart(attributesType: deliveryType), expression: alice)) == [
                ids.start
            ])
        let alicesOrder = LiveActivityKey(app: .default, owner: .user("alice"), name: order)
        #expect(try await targets(store, alicesOrder.updateTokens) == [ids.alice], "bob's order-4711 is another activity")
        #expect(
            try await targets(store, LiveActivityKey(app: .default, owner: .user("bob"), name: order).updateTokens) == [ids.bob])
        // Read back with their kinds; a listing shows every kind.
        #expect(try await store.registration(id: ids.start, app: .default)?.kind == .pushToStart(attributesType: deliveryType))
        #expect(try await store.registration(id: ids.alice, app: .default)?.kind == .liveActivity(name: order))
        var listed = 0
        for try await batch in store.registrations(matching: alice, platforms: .all, app: .default, batchSize: 10, now: start) {
            listed += batch.count
        }
        #expect(listed == 3)
        // The outbox walks a Live Activity audience with the same selector.
        let sent = OutboxNotification(
            id: UUID().uuidString.lowercased(), app: .default, sender: "alice", selection: PlatformSelection([.apns]),
            audience: .tokens(alicesOrder.updateTokens),
            payloads: [
                .apns: RenderedNotification(
                    platform: .apns, body: Array(#"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#.utf8), headers: [],
                    contentType: "application/json")
            ], secureID: nil, enqueuedAt: start, deliverAt: start)
        try await store.enqueue(sent, lease: nil)
        _ = try #require(
            try await store.takeDueNotification(app: .default, lease: OutboxLease(owner: "a", until: start.adding(seconds: 30)), now: start)
        )
        guard
            case .page(let page) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: OutboxLease(owner: "a", until: start.adding(seconds: 30)), pageSize: 10,
                now: start)
        else {
            Issue.record("no page")
            return
        }
        #expect(page.targets.map(\.registrationID) == [ids.alice])
        // Retiring the activity's tokens removes alice's only.
        // Only the ids given that are this activity's tokens: not bob's, not a device.
        #expect(try await store.retireTokens(of: alicesOrder, ids: [ids.device, ids.alice, ids.bob]) == 1)
        #expect(try await store.registration(id: ids.alice, app: .default) == nil)
        #expect(try await store.registration(id: ids.bob, app: .default) != nil)
        #expect(try await store.registration(id: ids.device, app: .default) != nil)
    }

    @Test(arguments: StoreKind.allCases)
    func anActivitysStampsStrictlyIncreaseAndAnOlderOneIsRefused(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let key = LiveActivityKey(app: .default, owner: .user("alice"), name: order)
        func stamp(
            _ event: LiveActivityEvent, _ requested: Int64? = nil, priority: Int = 10, at seconds: Double = 0
        ) async throws(StoreError) -> Int64 {
            try await store.stamp(
                key,
                LiveActivityStamping(
                    event: event, requested: requested, priority: priority, contentState: #"{"eta":\#(seconds)}"#,
                    now: start.adding(seconds: seconds))
            ).stamp
        }
        let first = try await stamp(.start)
        #expect(first == 1_800_000_000)
        // Within the same second: still strictly newer.
        #expect(try await stamp(.update, priority: 5) == first + 1)
        #expect(try await stamp(.update) == first + 2)
        // The caller's own timestamp, newer: taken as it is; older or equal: refused.
        #expect(try await stamp(.update, first + 10) == first + 10)
        await #expect(throws: StoreError.self) { _ = try await stamp(.update, first + 10) }
        await #expect(throws: StoreError.self) { _ = try await stamp(.update, first) }
        #expect(try await stamp(.end, at: 60) == first + 60)
        let record = try #require(try await store.activity(key))
        #expect(record.stamp == first + 60)
        #expect(record.event == .end)
        #expect(record.sends == 5)
        #expect(record.immediateSends == 4, "one send at priority 5")
        #expect(record.contentState == #"{"eta":60.0}"#)
        #expect(record.endedAt == start.adding(seconds: 60))
        #expect(try await store.activities(app: .default, owner: .user("alice"), limit: 10).map(\.key) == [key])
        #expect(try await store.activities(app: .default, owner: .user("bob"), limit: 10).isEmpty)
        // Another owner's activity of the same name is its own.
        #expect(
            try await store.stamp(
                LiveActivityKey(app: .default, owner: .user("bob"), name: order),
                LiveActivityStamping(event: .start, requested: 5, priority: 10, contentState: nil, now: start)
            ).stamp == 5)
    }

    @Test(arguments: StoreKind.allCases)
    func activitiesPastTheRetentionArePrunedWithTheNotifications(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        func stamp(_ name: String, at seconds: Double) async throws {
            _ = try await store.stamp(
                LiveActivityKey(app: .default, owner: .user("alice"), name: try ActivityName(name)),
                LiveActivityStamping(event: .update, requested: nil, priority: 10, contentState: nil, now: start.adding(seconds: seconds)))
        }
        try await stamp("old", at: 0)
        try await stamp("recent", at: 7200)
        #expect(try await store.pruneNotifications(endedBefore: start.adding(seconds: 3600)) == 1)
        #expect(try await store.activities(app: .default, owner: nil, limit: 10).map(\.key.name.rawValue) == ["recent"])
    }

    @Test(arguments: StoreKind.allCases)
    func channelsAreKeptByNameUpToTheLimit(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        func channel(_ name: String) -> APNSChannel {
            APNSChannel(app: .default, name: name, channelID: Data(name.utf8).base64EncodedString(), storagePolicy: 1, createdAt: start)
        }
        try await store.addChannel(channel("scores"), maximum: 2)
        await #expect(throws: StoreError.self) { try await store.addChannel(channel("scores"), maximum: 2) }
        try await store.addChannel(channel("news"), maximum: 2)
        do {
            try await store.addChannel(channel("weather"), maximum: 2)
            Issue.record("a third channel past a limit of 2")
        } catch {
            #expect(error.kind == .limitReached)
        }
        #expect(try await store.channels(app: .default).map(\.name) == ["news", "scores"])
        #expect(try await store.channel(app: .default, name: "scores")?.channelID == Data("scores".utf8).base64EncodedString())
        #expect(try await store.removeChannel(app: .default, name: "news"))
        #expect(try await !store.removeChannel(app: .default, name: "news"))
        #expect(try await store.channels(app: .default).map(\.name) == ["scores"])
    }
}
