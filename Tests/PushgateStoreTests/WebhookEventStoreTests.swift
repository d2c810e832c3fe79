import Foundation
import Pushgate
import Testing

/// Outcome webhooks' events on every store: a pruned registration's event is written with its
/// removal (and refused with it), events are claimed once under a lease, oldest first, per
/// receiver; a failed post is retried at its time or parked, a parked event holds back no later
/// one, `retry` makes parked events due again, and posted events are deleted after their keep time.
@Suite struct WebhookEventStoreTests {
    static let subscriptions = WebhookSubscriptions([
        .init(name: "backend", events: [.registrationPruned, .handleUpdated, .deliveryFailed]),
        .init(name: "audit", events: [.registrationPruned], fullHandles: true),
    ])

    @Test(arguments: StoreKind.allCases)
    func aPrunedRegistrationsEventIsWrittenWithItsRemoval(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let gone = try RegistrationID("gone-1")
        let renamed = try RegistrationID("renamed-1")
        try await store.restore(
            [
                try registration(gone, handle: "a1b2c3d4e5f60718293a4b5c6d7e8f90", tags: ["username:alice", "news"]),
                try registration(renamed, .gcm, handle: "old-gcm-token-0123456789", tags: ["username:bob"], owner: "bob"),
            ], now: start)
        let events = HandleChangeEvents(subscriptions: Self.subscriptions, notificationID: "n-1")
        try await store.apply(
            [
                StoredHandleChange(
                    registrationID: gone, change: .remove, outcome: Outcome(rawValue: "ExpiredChannel"), reason: "Unregistered"),
                StoredHandleChange(
                    registrationID: renamed, change: .replace(with: "new-gcm-token-9876543210"), outcome: .success, reason: nil),
            ], app: .default, now: start, events: events)
        #expect(try await store.registration(id: gone, app: .default) == nil)

        let backend = try await store.claimWebhookEvents(
            app: .default, receiver: "backend", owner: "a", until: start.adding(seconds: 60), now: start, limit: 10)
        #expect(backend.map(\.row.notificationID) == ["n-1", "n-1"])
        #expect(backend.map(\.receiver) == ["backend", "backend"])
        let pruned = try #require(backend.first { $0.row.row.body.contains("\"registration.pruned\"") })
        for fragment in [
            #""registration":"gone-1""#, #""owner":"alice""#, #""tags":["news","username:alice"]"#, #""platform":"apns""#,
            #""outcome":"ExpiredChannel""#, #""reason":"Unregistered""#, #""notification":"n-1""#,
        ] {
            #expect(pruned.row.row.body.contains(fragment), "\(fragment) in \(pruned.row.row.body)")
        }
        #expect(!pruned.row.row.body.contains("a1b2c3d4e5f60718293a4b5c6d7e8f90"), "masked by default: \(pruned.row.row.body)")
        let updated = try #require(backend.first { $0.row.row.body.contains("\"handle.updated\"") })
        #expect(updated.row.row.body.contains(#""owner":"bob""#))
        // The audit receiver asked for pruned registrations only, with full handles.
        let audit = try await store.claimWebhookEvents(
            app: .default, receiver: "audit", owner: "a", until: start.adding(seconds: 60), now: start, limit: 10)
        #expect(audit.count == 1)
        #expect(audit.first?.row.row.body.contains(#""handle":"a1b2c3d4e5f60718293a4b5c6d7e8f90""#) == true)
        // The same event, one id for every receiver.
        #expect(audit.first.map { Self.id(of: $0) } == Self.id(of: pruned))
    }

    @Test(arguments: StoreKind.allCases)
    func eventsAreClaimedOnceRetriedParkedAndKept(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let rows = (1...5).map { OutboxRecordRow(kind: WebhookSubscriptions.rowKind(receiver: "backend"), body: #"{"n":\#($0)}"#) }
        try await store.appendRows(rows, notificationID: "n-1", page: 1, app: .default)
        try await store.appendRows(
            [OutboxRecordRow(kind: WebhookSubscriptions.rowKind(receiver: "other"), body: "{}")], notificationID: "n-1", page: 1,
            app: .default)
        #expect(try await store.webhookEventCounts(app: .default) == WebhookEventCounts(pending: 6, parked: 0))

        // Two posters: the first claim leases two, the second gets the next ones.
        let first = try await store.claimWebhookEvents(
            app: .default, receiver: "backend", owner: "a", until: start.adding(seconds: 30), now: start, limit: 2)
        let second = try await store.claimWebhookEvents(
            app: .default, receiver: "backend", owner: "b", until: start.adding(seconds: 30), now: start, limit: 2)
        #expect(first.map(\.row.row.body) == [#"{"n":1}"#, #"{"n":2}"#])
        #expect(second.map(\.row.row.body) == [#"{"n":3}"#, #"{"n":4}"#])
        #expect(first[0].row.sequence < first[1].row.sequence && first[1].row.sequence < second[0].row.sequence)

        // Posted: never claimed again. Failed with a retry time: due again then. Parked: never, until retried.
        try await store.webhookEventsPosted(app: .default, sequences: [first[0].row.sequence], now: start)
        try await store.webhookEventsFailed(
            app: .default, sequences: [first[1].row.sequence], error: "HTTP 500", retryAt: start.adding(seconds: 10), now: start)
        try await store.webhookEventsFailed(
            app: .default, sequences: second.map(\.row.sequence), error: "HTTP 503", retryAt: nil, now: start)
        // The parked and the retrying ones hold back no later event.
        let later = try await store.claimWebhookEvents(
            app: .default, receiver: "backend", owner: "a", until: start.adding(seconds: 30), now: start, limit: 10)
        #expect(later.map(\.row.row.body) == [#"{"n":5}"#])
        let retried = try await store.claimWebhookEvents(
            app: .default, receiver: "backend", owner: "a", until: start.adding(seconds: 60), now: start.adding(seconds: 10), limit: 10)
        #expect(retried.map(\.row.sequence) == [first[1].row.sequence])
        #expect(retried.first?.attempts == 1)
        #expect(retried.first?.firstFailedAt == start)
        #expect(try await store.webhookEventCounts(app: .default) == WebhookEventCounts(pending: 3, parked: 2))

        let parked = try await store.parkedWebhookEvents(app: .default, after: 0, limit: 10)
        #expect(parked.map(\.row.sequence) == second.map(\.row.sequence))
        #expect(parked.first?.lastError == "HTTP 503")
        #expect(
            try await store.retryParkedWebhookEvents(app: .default, sequences: [second[0].row.sequence], now: start.adding(seconds: 20))
                == 1)
        let again = try await store.claimWebhookEvents(
            app: .default, receiver: "backend", owner: "a", until: start.adding(seconds: 80), now: start.adding(seconds: 20), limit: 10)
        #expect(again.map(\.row.sequence) == [second[0].row.sequence])
        #expect(again.first?.attempts == 0, "a retried parked event starts its retries afresh")
        #expect(try await store.retryParkedWebhookEvents(app: .default, sequences: nil, now: start.adding(seconds: 20)) == 1)

        // Posted events are deleted once older than the keep time, not before.
        try await store.webhookEventsPosted(app: .default, sequences: later.map(\.row.sequence), now: start.adding(seconds: 100))
        #expect(try await store.pruneWebhookEvents(postedBefore: start.adding(seconds: 50), limit: 100) == 1)
        #expect(try await store.pruneWebhookEvents(postedBefore: start.adding(seconds: 50), limit: 100) == 0)
        #expect(try await store.pruneWebhookEvents(postedBefore: start.adding(seconds: 101), limit: 100) == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func anExpiredLeaseLetsAnotherPosterClaim(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        try await store.appendRows(
            [OutboxRecordRow(kind: WebhookSubscriptions.rowKind(receiver: "backend"), body: "{}")], notificationID: "n", page: 1,
            app: .default)
        let held = try await store.claimWebhookEvents(
            app: .default, receiver: "backend", owner: "a", until: start.adding(seconds: 30), now: start, limit: 10)
        #expect(held.count == 1)
        #expect(
            try await store.claimWebhookEvents(
                app: .default, receiver: "backend", owner: "b", until: start.adding(seconds: 60), now: start.adding(seconds: 29), limit: 10
            ).isEmpty)
        #expect(
            try await store.claimWebhookEvents(
                app: .default, receiver: "backend", owner: "b", until: start.adding(seconds: 90), now: start.adding(seconds: 30), limit: 10
            ).count == 1)
    }

    /// Posters claiming at once (instances on one PostgreSQL: `FOR UPDATE SKIP LOCKED`) take each
    /// event once between them.
    @Test(arguments: StoreKind.allCases)
    func concurrentClaimsTakeEachEventOnce(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let rows = (1...40).map { OutboxRecordRow(kind: WebhookSubscriptions.rowKind(receiver: "backend"), body: #"{"n":\#($0)}"#) }
        try await store.appendRows(rows, notificationID: "n", page: 1, app: .default)
        let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for poster in 0..<8 {
                group.addTask {
                    try await store.claimWebhookEvents(
                        app: .default, receiver: "backend", owner: "poster-\(poster)", until: start.adding(seconds: 60), now: start,
                        limit: 10
                    ).map(\.row.sequence)
                }
            }
            return try await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        #expect(claimed.count == 40, "every event claimed: \(claimed.sorted())")
        #expect(Set(claimed).count == claimed.count, "none twice: \(claimed.sorted())")
    }

    static func id(of delivery: WebhookDelivery) -> String? {
        let body = delivery.row.row.body
        guard let range = body.range(of: #""id":""#) else { return nil }
        return String(body[range.upperBound...].prefix { $0 != "\"" })
    }
}

/// `notification.completed` is written in the transaction that ends the notification (the last
/// page's record with its finish, or a finish of its own), once: a finish of an ended
/// notification writes nothing.
extension OutboxStoreTests {
    @Test(arguments: StoreKind.allCases)
    func aNotificationsEndWritesItsCompletedEventWithItOnce(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 10)
        let completion = CompletionEvents(subscriptions: WebhookSubscriptions([.init(name: "backend", events: [.notificationCompleted])]))
        for lastPageFinishes in [true, false] {
            let sent = try notification()
            try await store.enqueue(sent, lease: lease("a", until: 30))
            guard
                case .page(let page) = try await store.claimPage(
                    notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 100, now: start)
            else {
                Issue.record("no page to claim")
                return
            }
            if lastPageFinishes {
                let last = try await store.completeLastPage(
                    notificationID: sent.id, app: .default, number: page.number, counts: successCounts(page), failures: [], owner: "a",
                    now: start, rows: [], completion: completion)
                guard case .finished = last else {
                    Issue.record("the last page did not finish the notification: \(last)")
                    return
                }
            } else {
                #expect(
                    try await store.completePage(
                        notificationID: sent.id, app: .default, number: page.number, counts: successCounts(page), failures: []))
                #expect(
                    try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start, completion: completion) != nil)
            }
            // Finished already: nothing more.
            _ = try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start, completion: completion)
            let events = try await store.claimWebhookEvents(
                app: .default, receiver: "backend", owner: "p", until: start.adding(seconds: 60), now: start, limit: 10)
            #expect(events.count == 1, "\(events)")
            #expect(events.first?.row.notificationID == sent.id)
            for fragment in [
                #""type":"notification.completed""#, #""state":"Completed""#, #""counts":{"apns":{"Success":5},"fcm":{"Success":5}}"#,
            ] {
                #expect(events.first?.row.row.body.contains(fragment) == true, "\(fragment) in \(events)")
            }
        }
    }
}
