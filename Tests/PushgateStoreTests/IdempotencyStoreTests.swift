import Foundation
import Pushgate
import PushgateSQLite
import Testing

/// Idempotency keys in the outbox, the same in every store: held with their notification, in the
/// same transaction; one notification per key, sender and app within the window.
@Suite struct IdempotencyStoreTests {
    func notification(
        sender: String = "bob", key: String?, fingerprint: String = "f1", at time: Timestamp = start
    ) throws
        -> OutboxNotification
    {
        OutboxNotification(
            id: UUID().uuidString.lowercased(), app: .default, sender: sender, selection: PlatformSelection([.apns]),
            audience: .tags(.tag(try Tag("news"))),
            payloads: [
                .apns: RenderedNotification(platform: .apns, body: Array(#"{"aps":{}}"#.utf8), headers: [], contentType: "application/json")
            ],
            enqueuedAt: time,
            idempotencyKey: key.map { IdempotencyKey(key: $0, fingerprint: fingerprint, storedSince: time.adding(seconds: -86400)) })
    }

    @Test(arguments: StoreKind.allCases)
    func aKeyIsHeldByOneNotificationPerSenderWithinTheWindow(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let first = try notification(key: "order-1")
        #expect(try await store.enqueue(first, lease: nil) == .stored)
        let holder = OutboxKeyHolder(notificationID: first.id, fingerprint: "f1")
        // A repeat stores nothing and is answered the holder, with the first request's fingerprint.
        let again = try notification(key: "order-1", fingerprint: "f2", at: start.adding(seconds: 60))
        #expect(try await store.enqueue(again, lease: OutboxLease(owner: "a", until: start.adding(seconds: 90))) == .existing(holder))
        #expect(try await store.notificationRecord(id: again.id, app: .default) == nil)
        let key = try #require(again.idempotencyKey)
        #expect(try await store.idempotentNotification(key: key, app: .default, sender: "bob") == holder)
        // Another sender's key, and no key at all, are not the same send.
        #expect(try await store.enqueue(try notification(sender: "carol", key: "order-1"), lease: nil) == .stored)
        #expect(try await store.enqueue(try notification(key: nil), lease: nil) == .stored)
        #expect(try await store.enqueue(try notification(key: nil), lease: nil) == .stored)
        // Past the window the key is free again: the old notification gives it up.
        let later = try notification(key: "order-1", fingerprint: "f3", at: start.adding(seconds: 86401))
        #expect(try await store.enqueue(later, lease: nil) == .stored)
        let laterKey = try #require(later.idempotencyKey)
        #expect(
            try await store.idempotentNotification(key: laterKey, app: .default, sender: "bob")
                == OutboxKeyHolder(notificationID: later.id, fingerprint: "f3"))
        #expect(try await store.notificationRecord(id: first.id, app: .default) != nil)
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentEnqueuesOfOneKeyStoreOneNotification(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        // A second connection to the same database where there is one (another instance).
        let other: any GatewayStore = if let path { try await SQLiteStore.open(path: path) } else { store }
        let attempts = try (0..<16).map { _ in try notification(key: "same") }
        let answers = try await withThrowingTaskGroup(of: (String, OutboxEnqueued).self) { group in
            for (index, attempt) in attempts.enumerated() {
                let target = index.isMultiple(of: 2) ? store : other
                group.addTask { (attempt.id, try await target.enqueue(attempt, lease: nil)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let stored = answers.filter { $0.1 == .stored }.map(\.0)
        #expect(stored.count == 1, "\(answers)")
        let winner = try #require(stored.first)
        for (id, answer) in answers where id != winner {
            #expect(answer == .existing(OutboxKeyHolder(notificationID: winner, fingerprint: "f1")))
        }
        #expect(try await store.outboxDepth(now: start).pending == 1)
    }

    /// The key is in the notification's own row: a store opened afresh (a restarted or another
    /// instance) finds it.
    @Test func theKeyIsDurableWithItsNotification() async throws {
        let path = NSTemporaryDirectory() + "pushgate-idempotency-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let sent = try notification(key: "k")
        do {
            let store = try await SQLiteStore.open(path: path)
            try await store.enqueue(sent, lease: OutboxLease(owner: "dead", until: start.adding(seconds: 30)))
        }
        let reopened = try await SQLiteStore.open(path: path)
        let key = try #require(sent.idempotencyKey)
        #expect(
            try await reopened.idempotentNotification(key: key, app: .default, sender: "bob")
                == OutboxKeyHolder(notificationID: sent.id, fingerprint: "f1"))
        #expect(try await reopened.schemaVersion() == 11)
    }
}
