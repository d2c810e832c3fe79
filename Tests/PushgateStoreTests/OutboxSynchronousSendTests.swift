import Foundation
import Pushgate
import PushgateSQLite
import Testing

/// A synchronous send's two transactions, the same in every store: the enqueue that claims the
/// first page (``OutboxQueue/enqueue(_:lease:claimingFirstPageOf:now:)``) and the record of the
/// last page that finishes the notification
/// (``OutboxQueue/completeLastPage(notificationID:app:number:counts:failures:owner:now:)``). The
/// SQL stores answer a send of one page without reading back what they wrote: these tests hold
/// them to what separate claims, records and finishes leave.
extension OutboxStoreTests {
    /// Seeds 3 registrations and starts a one-page send held by `owner` until `seconds`: the
    /// notification, and the first page its enqueue claimed.
    func startOnePageSend(
        _ store: any GatewayStore, owner: String = "a", until seconds: Double = 30
    ) async throws -> (OutboxNotification, OutboxPage) {
        _ = try await seed(store, count: 3)
        let sent = try notification()
        let started = try await store.enqueue(sent, lease: lease(owner, until: seconds), claimingFirstPageOf: 100, now: start)
        guard case .page(let page) = started.firstClaim else {
            throw StoreError(.storage, "no first page: \(String(describing: started.firstClaim))")
        }
        return (sent, page)
    }

    @Test(arguments: StoreKind.allCases)
    func aOnePageSendIsStoredWithItsPageAndFinishedWithItsRecord(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let ids = try await seed(store, count: 3)
        let sent = try notification()
        let started = try await store.enqueue(sent, lease: lease("a", until: 30), claimingFirstPageOf: 100, now: start)
        #expect(started.enqueued == .stored)
        guard case .page(let page) = started.firstClaim else {
            Issue.record("no first page: \(String(describing: started.firstClaim))"); return
        }
        #expect(page.number == 0 && page.targets.map(\.registrationID) == ids && page.last)
        #expect(!page.reclaimed && !page.cancelled && page.attempt == 0)
        let stored = try #require(try await store.notificationRecord(id: sent.id, app: .default))
        #expect(stored.state == .processing && stored.targetsClaimed == 3 && stored.audienceExhausted && stored.startedAt == start)
        // The row is as a claim leaves it: nothing more to claim, nobody else may take it.
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 100, now: start)
                == .exhausted)
        #expect(try await store.takeDueNotification(app: .default, lease: lease("b", until: 60), now: start.adding(seconds: 5)) == nil)

        var counts = successCounts(page)
        counts[.fcm] = [.badChannel: 1]
        let failure = TargetResult(
            registrationID: ids[1], platform: .fcm, maskedHandle: "h…", outcome: .badChannel, statusCode: 404, reason: "UNREGISTERED")
        let ended = start.adding(seconds: 2)
        let record = try await store.completeLastPage(
            notificationID: sent.id, app: .default, number: 0, counts: counts, failures: [failure], owner: "a", now: ended)
        guard case .finished(let finished) = record else { Issue.record("not finished: \(record)"); return }
        #expect(finished.state == .completed && finished.endedAt == ended && finished.processed == 3)
        #expect(finished.counts == [.apns: [.success: 2], .fcm: [.badChannel: 1]])
        #expect(finished.targetsClaimed == 3 && finished.audienceExhausted && !finished.cancelRequested)
        // What the caller was answered is what is stored.
        #expect(try await store.notificationRecord(id: sent.id, app: .default) == finished)
        #expect(try await store.failedTargets(notificationID: sent.id, app: .default, after: nil, limit: 10) == [failure])

        // The same send through separate transactions (enqueue, claim, record, finish) ends the same.
        let general = try notification()
        #expect(try await store.enqueue(general, lease: lease("a", until: 30)) == .stored)
        guard
            case .page(let generalPage) = try await store.claimPage(
                notificationID: general.id, app: .default, lease: lease("a", until: 30), pageSize: 100, now: start)
        else { Issue.record("no page"); return }
        #expect(generalPage.targets == page.targets)
        #expect(try await store.completePage(notificationID: general.id, app: .default, number: 0, counts: counts, failures: [failure]))
        var expected = try #require(try await store.finish(notificationID: general.id, app: .default, owner: "a", now: ended))
        expected.id = sent.id
        #expect(finished == expected)
        #expect(try await store.failedTargets(notificationID: general.id, app: .default, after: nil, limit: 10) == [failure])
        // Recorded once; ended, so never taken again.
        #expect(
            try await store.completeLastPage(
                notificationID: sent.id, app: .default, number: 0, counts: counts, failures: [], owner: "a", now: ended) == .recordedBefore)
        #expect(try await store.notificationRecord(id: sent.id, app: .default) == finished)
        #expect(try await store.takeDueNotification(app: .default, lease: lease("b", until: 600), now: start.adding(seconds: 500)) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func aSendLongerThanAPageGoesOnFromWhereItsFirstPageEnded(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let ids = try await seed(store, count: 5)
        let sent = try notification()
        let started = try await store.enqueue(sent, lease: lease("a", until: 30), claimingFirstPageOf: 2, now: start)
        guard case .page(let first) = started.firstClaim else { Issue.record("no first page"); return }
        #expect(first.number == 0 && first.targets.map(\.registrationID) == Array(ids[0..<2]) && !first.last)
        var pages = [first]
        while case .page(let page) = try await store.claimPage(
            notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 2, now: start)
        {
            pages.append(page)
        }
        #expect(pages.map(\.number) == [0, 1, 2])
        #expect(pages.flatMap(\.targets).map(\.registrationID) == ids)
        for page in pages.dropLast() {
            #expect(
                try await store.completePage(
                    notificationID: sent.id, app: .default, number: page.number, counts: successCounts(page), failures: []))
        }
        let last = try #require(pages.last)
        let record = try await store.completeLastPage(
            notificationID: sent.id, app: .default, number: last.number, counts: successCounts(last), failures: [], owner: "a", now: start)
        guard case .finished(let finished) = record else { Issue.record("not finished: \(record)"); return }
        #expect(finished.counts == [.apns: [.success: 3], .fcm: [.success: 2]] && finished.state == .completed)
        #expect(try await store.notificationRecord(id: sent.id, app: .default) == finished)
    }

    @Test(arguments: StoreKind.allCases)
    func aOnePageSendToNobodyIsExhaustedAtOnce(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let sent = try notification()
        let started = try await store.enqueue(sent, lease: lease("a", until: 30), claimingFirstPageOf: 100, now: start)
        #expect(started.enqueued == .stored && started.firstClaim == .exhausted)
        #expect(try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start)?.state == .noTargetFound)
    }

    /// The sender's lease expired on the wire and another instance took the notification over:
    /// the late record counts, and the new holder finishes it.
    @Test(arguments: StoreKind.allCases)
    func aLateRecordOfAOnePageSendCountsAndItsNewHolderFinishesIt(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let (sent, page) = try await startOnePageSend(store, until: 10)
        let later = start.adding(seconds: 11)
        let takeover = try #require(try await store.takeDueNotification(app: .default, lease: lease("b", until: 60), now: later))
        #expect(takeover.leaseExpired && takeover.notification.id == sent.id)
        #expect(
            try await store.completeLastPage(
                notificationID: sent.id, app: .default, number: 0, counts: successCounts(page), failures: [], owner: "a", now: later)
                == .recorded)
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("b", until: 60), pageSize: 100, now: later)
                == .exhausted)
        let finished = try #require(try await store.finish(notificationID: sent.id, app: .default, owner: "b", now: later))
        #expect(finished.state == .completed && finished.counts == [.apns: [.success: 2], .fcm: [.success: 1]])
    }

    @Test(arguments: StoreKind.allCases)
    func aRepeatedKeyStoresNoSecondSendAndClaimsNothing(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 3)
        var sent = try notification()
        sent.idempotencyKey = IdempotencyKey(key: "k1", fingerprint: "f1", storedSince: start.adding(seconds: -60))
        var again = try notification()
        again.idempotencyKey = sent.idempotencyKey
        let first = try await store.enqueue(sent, lease: lease("a", until: 30), claimingFirstPageOf: 100, now: start)
        guard case .page = first.firstClaim else { Issue.record("no first page"); return }
        let second = try await store.enqueue(again, lease: lease("a", until: 30), claimingFirstPageOf: 100, now: start)
        #expect(second.enqueued == .existing(OutboxKeyHolder(notificationID: sent.id, fingerprint: "f1")) && second.firstClaim == nil)
        #expect(try await store.notificationRecord(id: again.id, app: .default) == nil)
    }

    /// The page was recorded already (by a record of its own): the last page's record changes
    /// nothing, and the notification is finished as usual.
    @Test(arguments: StoreKind.allCases)
    func aOnePageSendsRecordOfAPageRecordedBeforeChangesNothing(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let (sent, page) = try await startOnePageSend(store)
        let counts = successCounts(page)
        #expect(try await store.completePage(notificationID: sent.id, app: .default, number: 0, counts: counts, failures: []))
        #expect(
            try await store.completeLastPage(
                notificationID: sent.id, app: .default, number: 0, counts: counts, failures: [], owner: "a", now: start) == .recordedBefore)
        let record = try #require(try await store.notificationRecord(id: sent.id, app: .default))
        #expect(record.state == .processing && record.endedAt == nil && record.counts == counts)
        let finished = try #require(try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start))
        #expect(finished.state == .completed && finished.counts == counts)
    }

    /// The sender died after the enqueue committed: once the lease expires, another instance
    /// takes the notification and gets the same first page again, and finishes it with one record.
    @Test(arguments: StoreKind.allCases)
    func aOnePageSendWhoseSenderDiedIsClaimedAgainAndFinishedByItsTaker(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let (sent, page) = try await startOnePageSend(store, owner: "dead", until: 10)
        #expect(try await store.takeDueNotification(app: .default, lease: lease("b", until: 60), now: start.adding(seconds: 5)) == nil)
        let later = start.adding(seconds: 11)
        let takeover = try #require(try await store.takeDueNotification(app: .default, lease: lease("b", until: 60), now: later))
        #expect(takeover.leaseExpired && takeover.notification.id == sent.id)
        guard
            case .page(let again) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("b", until: 60), pageSize: 100, now: later)
        else { Issue.record("the first page was not claimed again"); return }
        #expect(again.number == 0 && again.reclaimed && again.targets == page.targets)
        let record = try await store.completeLastPage(
            notificationID: sent.id, app: .default, number: 0, counts: successCounts(again), failures: [], owner: "b", now: later)
        guard case .finished(let finished) = record else { Issue.record("not finished: \(record)"); return }
        #expect(finished.state == .completed && finished.counts == successCounts(page))
        #expect(try await store.notificationRecord(id: sent.id, app: .default) == finished)
    }

    @Test(arguments: StoreKind.allCases)
    func aOnePageSendCancelledOnTheWireEndsCancelled(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let (sent, page) = try await startOnePageSend(store)
        #expect(try await store.requestCancel(notificationID: sent.id, app: .default, now: start) != nil)
        var counts: [Platform: [Outcome: Int]] = [:]
        for target in page.targets { counts[target.handle.platform, default: [:]][.cancelled, default: 0] += 1 }
        let record = try await store.completeLastPage(
            notificationID: sent.id, app: .default, number: 0, counts: counts, failures: [], owner: "a", now: start)
        guard case .finished(let finished) = record else { Issue.record("not finished: \(record)"); return }
        #expect(finished.state == .cancelled && finished.cancelRequested && finished.counts == counts)
        #expect(try await store.notificationRecord(id: sent.id, app: .default) == finished)
    }
}
