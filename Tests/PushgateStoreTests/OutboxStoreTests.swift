import Foundation
import Pushgate
import PushgateSQLite
import Testing

/// The outbox's transitions, the same in both stores: enqueue, take, claim in leased pages,
/// record once, finish; lease expiry and takeover, release, cancel, schedule, prune.
@Suite struct OutboxStoreTests {
    func make(_ kind: StoreKind) async throws -> (any GatewayStore, String?) {
        try await kind.make()
    }

    /// `count` registrations tagged `news` (APNs and FCM alternately), plus one without the tag.
    func seed(_ store: any GatewayStore, count: Int) async throws -> [RegistrationID] {
        let ids = (0..<count).map { try! RegistrationID(String(format: "r%05d", $0)) }
        var registrations = try ids.enumerated().map { index, id in
            try registration(id, index.isMultiple(of: 2) ? .apns : .fcm, tags: ["news"])
        }
        registrations.append(try registration(try RegistrationID("zz-other"), tags: ["sports"]))
        try await store.restore(registrations, now: start)
        return ids
    }

    func notification(_ id: String = UUID().uuidString.lowercased(), deliverAt: Timestamp? = nil) throws -> OutboxNotification {
        OutboxNotification(
            id: id, app: .default, sender: "bob", selection: PlatformSelection([.apns, .fcm]), audience: .tags(.tag(try Tag("news"))),
            payloads: [
                .apns: RenderedNotification(
                    platform: .apns, body: Array(#"{"aps":{"alert":"hé \"x\""}}"#.utf8),
                    headers: [HTTPHeader(name: "apns-push-type", value: "alert")], contentType: "application/json")
            ], secureID: nil, enqueuedAt: start, deliverAt: deliverAt)
    }

    func lease(_ owner: String, until seconds: Double) -> OutboxLease {
        OutboxLease(owner: owner, until: start.adding(seconds: seconds))
    }

    func successCounts(_ page: OutboxPage) -> [Platform: [Outcome: Int]] {
        var counts: [Platform: [Outcome: Int]] = [:]
        for target in page.targets { counts[target.handle.platform, default: [:]][.success, default: 0] += 1 }
        return counts
    }

    @Test(arguments: StoreKind.allCases)
    func aNotificationIsDeliveredInPagesAndEachPageIsCountedOnce(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let ids = try await seed(store, count: 250)
        let sent = try notification()
        try await store.enqueue(sent, lease: nil)
        #expect(try await store.notificationRecord(id: sent.id, app: .default)?.state == .enqueued)
        let takeover = try #require(try await store.takeDueNotification(app: .default, lease: lease("a", until: 30), now: start))
        #expect(takeover.notification == sent)
        #expect(!takeover.leaseExpired)
        #expect(try await store.takeDueNotification(app: .default, lease: lease("b", until: 30), now: start) == nil)

        var seen: [RegistrationID] = []
        while case .page(let page) = try await store.claimPage(
            notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 100, now: start)
        {
            #expect(!page.reclaimed && !page.cancelled)
            seen += page.targets.map(\.registrationID)
            // Not finished while a page is open.
            #expect(try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start) == nil)
            #expect(
                try await store.completePage(
                    notificationID: sent.id, app: .default, number: page.number, counts: successCounts(page), failures: []))
            // Recording the same page again counts nothing.
            #expect(
                !(try await store.completePage(
                    notificationID: sent.id, app: .default, number: page.number, counts: successCounts(page), failures: [])))
        }
        #expect(seen == ids)
        let finished = try #require(
            try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start.adding(seconds: 2)))
        #expect(finished.state == .completed)
        #expect(finished.processed == 250)
        #expect(finished.counts[.apns]?[.success] == 125)
        #expect(finished.targetsClaimed == 250 && finished.audienceExhausted)
        #expect(finished.endedAt == start.adding(seconds: 2))
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 100, now: start)
                == .lost)
        // The payloads survive the store byte for byte.
        let reread = try #require(try await store.notificationRecord(id: sent.id, app: .default))
        #expect(reread.state == .completed && reread.audience == "news" && reread.selection == PlatformSelection([.apns, .fcm]))
    }

    @Test(arguments: StoreKind.allCases)
    func anEmptyAudienceEndsNoTargetFound(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let sent = try notification()
        try await store.enqueue(sent, lease: lease("a", until: 30))
        #expect(try await store.notificationRecord(id: sent.id, app: .default)?.state == .processing)
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
                == .exhausted)
        #expect(try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start)?.state == .noTargetFound)
    }

    /// A driver dies with two pages out: once its leases expire another takes the notification,
    /// gets those pages again (same targets), and the one page the dead driver had recorded is
    /// not counted twice.
    @Test(arguments: StoreKind.allCases)
    func expiredLeasesAreTakenOverAndPagesAreClaimedAgain(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 30)
        let sent = try notification()
        try await store.enqueue(sent, lease: lease("dead", until: 10))
        guard
            case .page(let first) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("dead", until: 10), pageSize: 10, now: start),
            case .page(let second) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("dead", until: 10), pageSize: 10, now: start)
        else { Issue.record("no pages"); return }
        #expect(
            try await store.completePage(
                notificationID: sent.id, app: .default, number: first.number, counts: successCounts(first), failures: []))
        // Before expiry nobody else may take it.
        #expect(try await store.takeDueNotification(app: .default, lease: lease("next", until: 40), now: start.adding(seconds: 5)) == nil)
        let later = start.adding(seconds: 11)
        let takeover = try #require(try await store.takeDueNotification(app: .default, lease: lease("next", until: 40), now: later))
        #expect(takeover.leaseExpired)
        // The dead driver's claims are refused now.
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("dead", until: 50), pageSize: 10, now: later)
                == .lost)
        guard
            case .page(let again) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("next", until: 40), pageSize: 10, now: later)
        else {
            Issue.record("the expired page was not claimed again"); return
        }
        #expect(again.reclaimed && again.number == second.number && again.targets == second.targets)
        #expect(
            try await store.completePage(
                notificationID: sent.id, app: .default, number: again.number, counts: successCounts(again), failures: []))
        guard
            case .page(let third) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("next", until: 40), pageSize: 10, now: later)
        else {
            Issue.record("no third page"); return
        }
        #expect(!third.reclaimed)
        let failure = TargetResult(
            registrationID: third.targets[0].registrationID, platform: third.targets[0].handle.platform, maskedHandle: "h…",
            outcome: .badChannel,
            statusCode: 400, reason: "BadDeviceToken")
        var counts = successCounts(third)
        counts[third.targets[0].handle.platform]?[.success]! -= 1
        counts[third.targets[0].handle.platform, default: [:]][.badChannel] = 1
        #expect(
            try await store.completePage(notificationID: sent.id, app: .default, number: third.number, counts: counts, failures: [failure]))
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("next", until: 40), pageSize: 10, now: later)
                == .exhausted)
        let finished = try #require(try await store.finish(notificationID: sent.id, app: .default, owner: "next", now: later))
        #expect(finished.processed == 30 && finished.succeeded == 29 && finished.state == .completed)
        #expect(try await store.failedTargets(notificationID: sent.id, app: .default, after: nil, limit: 10) == [failure])
        #expect(try await store.failedTargets(notificationID: sent.id, app: .default, after: failure.registrationID, limit: 10).isEmpty)
    }

    /// A driver flushes the answers of a page on the wire, then dies: the page claimed again
    /// leaves out the targets answered (they are not sent twice) and hands their counts over, so
    /// that its record counts every target once; a failure among them is listed at once. Answers
    /// for a page already done are ignored, and the answers go with the page's record.
    @Test(arguments: StoreKind.allCases)
    func answersRecordedAheadOfAPageAreNotSentAgainWhenItIsClaimedAgain(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 20)
        let sent = try notification()
        try await store.enqueue(sent, lease: lease("dead", until: 10))
        guard
            case .page(let first) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("dead", until: 10), pageSize: 10, now: start),
            case .page(let second) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("dead", until: 10), pageSize: 10, now: start)
        else { Issue.record("no pages"); return }
        func result(_ target: DispatchTarget, _ outcome: Outcome) -> TargetResult {
            TargetResult(
                registrationID: target.registrationID, platform: target.handle.platform, maskedHandle: target.handle.masked,
                outcome: outcome, statusCode: outcome == .success ? 200 : 400, reason: outcome == .success ? nil : "BadDeviceToken")
        }
        // Two flushes for the second page (the same target twice: counted once), one for the first.
        let bad = result(second.targets[3], .badChannel)
        try await store.recordAnswers(
            notificationID: sent.id, app: .default,
            answers: [
                OutboxAnswers(page: second.number, targets: second.targets[0..<3].map { result($0, .success) } + [bad]),
                OutboxAnswers(page: first.number, targets: [result(first.targets[0], .success)]),
            ])
        try await store.recordAnswers(
            notificationID: sent.id, app: .default,
            answers: [
                OutboxAnswers(page: second.number, targets: [result(second.targets[2], .success), result(second.targets[4], .success)])
            ])
        #expect(try await store.failedTargets(notificationID: sent.id, app: .default, after: nil, limit: 10) == [bad])
        // The first page is recorded whole; a late flush for it changes nothing.
        #expect(
            try await store.completePage(
                notificationID: sent.id, app: .default, number: first.number, counts: successCounts(first), failures: []))
        try await store.recordAnswers(
            notificationID: sent.id, app: .default,
            answers: [OutboxAnswers(page: first.number, targets: [result(first.targets[1], .success)])])

        let later = start.adding(seconds: 11)
        _ = try #require(try await store.takeDueNotification(app: .default, lease: lease("next", until: 40), now: later))
        guard
            case .page(let again) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("next", until: 40), pageSize: 10, now: later)
        else { Issue.record("the expired page was not claimed again"); return }
        #expect(again.reclaimed && again.number == second.number)
        #expect(again.targets == Array(second.targets[5...]), "the five answered targets are not sent again")
        var answered: [Platform: [Outcome: Int]] = [:]
        for target in second.targets[0..<5] {
            answered[target.handle.platform, default: [:]][target == second.targets[3] ? .badChannel : .success, default: 0] += 1
        }
        #expect(again.answered == answered)
        var counts = answered
        for target in again.targets { counts[target.handle.platform, default: [:]][.success, default: 0] += 1 }
        #expect(try await store.completePage(notificationID: sent.id, app: .default, number: again.number, counts: counts, failures: []))
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("next", until: 40), pageSize: 10, now: later)
                == .exhausted)
        let finished = try #require(try await store.finish(notificationID: sent.id, app: .default, owner: "next", now: later))
        #expect(finished.processed == 20 && finished.succeeded == 19 && finished.state == .completed)
        #expect(try await store.failedTargets(notificationID: sent.id, app: .default, after: nil, limit: 10) == [bad])
    }

    /// Released leases (a graceful shutdown) are taken at once, without waiting for expiry.
    @Test(arguments: StoreKind.allCases)
    func releasedWorkIsTakenAtOnce(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 5)
        let sent = try notification()
        try await store.enqueue(sent, lease: lease("old", until: 600))
        guard
            case .page(let page) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("old", until: 600), pageSize: 10, now: start)
        else {
            Issue.record("no page"); return
        }
        try await store.renewLeases(owner: "old", until: start.adding(seconds: 900))
        #expect(try await store.takeDueNotification(app: .default, lease: lease("new", until: 60), now: start.adding(seconds: 700)) == nil)
        try await store.releaseLeases(owner: "old", notificationID: nil)
        let takeover = try #require(
            try await store.takeDueNotification(app: .default, lease: lease("new", until: 60), now: start.adding(seconds: 1)))
        #expect(takeover.notification.id == sent.id)
        guard
            case .page(let again) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("new", until: 60), pageSize: 10, now: start.adding(seconds: 1))
        else {
            Issue.record("the released page was not claimed"); return
        }
        #expect(again.reclaimed && again.targets == page.targets)
    }

    @Test(arguments: StoreKind.allCases)
    func aScheduledNotificationIsDueAtItsTimeAndACancelledOneCountsItsTargetsCancelled(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 25)
        let scheduled = try notification(deliverAt: start.adding(seconds: 3600))
        try await store.enqueue(scheduled, lease: nil)
        #expect(try await store.notificationRecord(id: scheduled.id, app: .default)?.state == .scheduled)
        #expect(try await store.takeDueNotification(app: .default, lease: lease("a", until: 30), now: start.adding(seconds: 3599)) == nil)
        #expect(try await store.outboxDepth(now: start) == OutboxDepth(pending: 1, due: 0, oldestDue: nil))
        // Cancelling makes it due at once; its pages come back marked cancelled.
        let before = try #require(try await store.requestCancel(notificationID: scheduled.id, app: .default, now: start))
        #expect(!before.cancelRequested && before.state == .scheduled)
        // Asked twice: the second call sees the first's request.
        #expect(try await store.requestCancel(notificationID: scheduled.id, app: .default, now: start)?.cancelRequested == true)
        let cancelling = try #require(try await store.notificationRecord(id: scheduled.id, app: .default))
        #expect(cancelling.cancelRequested && cancelling.deliverAt == scheduled.deliverAt)
        #expect(try await store.outboxDepth(now: start) == OutboxDepth(pending: 1, due: 1, oldestDue: nil))
        _ = try #require(try await store.takeDueNotification(app: .default, lease: lease("a", until: 30), now: start))
        var cancelled = 0
        while case .page(let page) = try await store.claimPage(
            notificationID: scheduled.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
        {
            #expect(page.cancelled)
            cancelled += page.targets.count
            var counts: [Platform: [Outcome: Int]] = [:]
            for target in page.targets { counts[target.handle.platform, default: [:]][.cancelled, default: 0] += 1 }
            _ = try await store.completePage(notificationID: scheduled.id, app: .default, number: page.number, counts: counts, failures: [])
        }
        #expect(cancelled == 25)
        let finished = try #require(try await store.finish(notificationID: scheduled.id, app: .default, owner: "a", now: start))
        #expect(finished.state == .cancelled && finished.counts[.fcm]?[.cancelled] == 12)
        // A final notification is left as it is.
        #expect(try await store.requestCancel(notificationID: scheduled.id, app: .default, now: start)?.state == .cancelled)
        #expect(try await store.requestCancel(notificationID: "unknown", app: .default, now: start) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func finishedNotificationsArePrunedAfterRetentionAndListedNewestFirst(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        var ids: [String] = []
        for index in 0..<3 {
            var sent = try notification()
            sent.enqueuedAt = start.adding(seconds: Double(index))
            sent.deliverAt = sent.enqueuedAt
            if index == 2 { sent.sender = "carol" }
            try await store.enqueue(sent, lease: lease("a", until: 30))
            ids.append(sent.id)
        }
        #expect(try await store.notificationRecords(app: .default, sender: nil, limit: 10).map(\.id) == ids.reversed())
        #expect(try await store.notificationRecords(app: .default, sender: "bob", limit: 1).map(\.id) == [ids[1]])
        for (index, id) in ids.prefix(2).enumerated() {
            #expect(
                try await store.claimPage(notificationID: id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
                    == .exhausted)
            _ = try await store.finish(notificationID: id, app: .default, owner: "a", now: start.adding(seconds: Double(index * 100)))
        }
        #expect(try await store.pruneNotifications(endedBefore: start.adding(seconds: 50)) == 1)
        #expect(try await store.notificationRecord(id: ids[0], app: .default) == nil)
        #expect(try await store.notificationRecord(id: ids[1], app: .default) != nil)
        // Unfinished ones are never pruned.
        #expect(try await store.pruneNotifications(endedBefore: start.adding(seconds: 1e9)) == 1)
        #expect(try await store.notificationRecords(app: .default, sender: nil, limit: 10).map(\.id) == [ids[2]])
    }

    /// Enqueues a notification held by "a" and claims its first page (of at most 10).
    func enqueueAndClaim(_ store: any GatewayStore) async throws -> (OutboxNotification, OutboxPage) {
        let sent = try notification()
        try await store.enqueue(sent, lease: lease("a", until: 30))
        let claim = try await store.claimPage(
            notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
        guard case .page(let page) = claim else { throw StoreError(.storage, "no page: \(claim)") }
        return (sent, page)
    }

    /// Throttled targets become a retry page of their own, due later: the notification is parked
    /// (nobody's, not taken) until then, taken again when due, and its retry page carries those
    /// targets and its attempt number; only then does it finish, with every target counted once.
    @Test(arguments: StoreKind.allCases)
    func throttledTargetsAreRetriedOnAPageOfTheirOwnWhenDue(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 6)
        let (sent, page) = try await enqueueAndClaim(store)
        #expect(page.attempt == 0)
        let throttled = Array(page.targets.suffix(2))
        var counts: [Platform: [Outcome: Int]] = [:]
        for target in page.targets.dropLast(2) { counts[target.handle.platform, default: [:]][.success, default: 0] += 1 }
        let due = start.adding(seconds: 60)
        #expect(
            try await store.completePage(
                notificationID: sent.id, app: .default, number: page.number, counts: counts, failures: [],
                retry: OutboxRetry(targets: throttled, attempt: 1, due: due)))
        // The retry page is not due yet: nothing to claim, not finished, parked until it is.
        #expect(
            try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start.adding(seconds: 1))
                == .exhausted)
        #expect(try await store.finish(notificationID: sent.id, app: .default, owner: "a", now: start) == nil)
        #expect(try await store.parkNotification(notificationID: sent.id, app: .default, owner: "b", now: start) == nil)
        #expect(try await store.parkNotification(notificationID: sent.id, app: .default, owner: "a", now: start) == due)
        #expect(try await store.notificationRecord(id: sent.id, app: .default)?.state == .processing)
        // Parked is pending, not due (the outbox-lag gauges do not count the wait the service asked for).
        #expect(try await store.outboxDepth(now: start.adding(seconds: 1)) == OutboxDepth(pending: 1, due: 0, oldestDue: nil))
        #expect(try await store.outboxDepth(now: due) == OutboxDepth(pending: 1, due: 1, oldestDue: start))
        #expect(try await store.takeDueNotification(app: .default, lease: lease("b", until: 90), now: start.adding(seconds: 59)) == nil)
        let takeover = try #require(
            try await store.takeDueNotification(app: .default, lease: lease("b", until: 90), now: start.adding(seconds: 60)))
        #expect(!takeover.leaseExpired)
        #expect(takeover.notification.id == sent.id)
        guard
            case .page(let retry) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("b", until: 90), pageSize: 10, now: start.adding(seconds: 60))
        else { Issue.record("the retry page was not claimed"); return }
        #expect(retry.targets == throttled && retry.attempt == 1 && !retry.reclaimed && retry.number != page.number)
        #expect(
            try await store.completePage(
                notificationID: sent.id, app: .default, number: retry.number, counts: successCounts(retry), failures: []))
        let finished = try #require(
            try await store.finish(notificationID: sent.id, app: .default, owner: "b", now: start.adding(seconds: 61)))
        #expect(finished.state == .completed && finished.processed == 6 && finished.succeeded == 6)
    }

    /// A cancel makes parked retries due at once: they are claimed marked cancelled.
    @Test(arguments: StoreKind.allCases)
    func aCancelEndsParkedRetriesAtOnce(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 2)
        let (sent, page) = try await enqueueAndClaim(store)
        _ = try await store.completePage(
            notificationID: sent.id, app: .default, number: page.number, counts: [:], failures: [],
            retry: OutboxRetry(targets: page.targets, attempt: 1, due: start.adding(seconds: 3600)))
        _ = try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
        #expect(try await store.parkNotification(notificationID: sent.id, app: .default, owner: "a", now: start) != nil)
        _ = try await store.requestCancel(notificationID: sent.id, app: .default, now: start.adding(seconds: 1))
        _ = try #require(try await store.takeDueNotification(app: .default, lease: lease("c", until: 60), now: start.adding(seconds: 1)))
        guard
            case .page(let retry) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("c", until: 60), pageSize: 10, now: start.adding(seconds: 1))
        else { Issue.record("the retry page was not claimed"); return }
        #expect(retry.cancelled && retry.targets == page.targets)
        var cancelled: [Platform: [Outcome: Int]] = [:]
        for target in retry.targets { cancelled[target.handle.platform, default: [:]][.cancelled, default: 0] += 1 }
        #expect(
            try await store.completePage(notificationID: sent.id, app: .default, number: retry.number, counts: cancelled, failures: []))
        let finished = try await store.finish(notificationID: sent.id, app: .default, owner: "c", now: start.adding(seconds: 2))
        #expect(finished?.state == .cancelled && finished?.cancelled == 2)
    }

    /// A cancel that lands while a page is on the wire (asked elsewhere): the page's retry is due
    /// at once, and nothing is parked.
    @Test(arguments: StoreKind.allCases)
    func aRetryRecordedAfterACancelIsDueAtOnce(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 2)
        let (sent, page) = try await enqueueAndClaim(store)
        _ = try await store.requestCancel(notificationID: sent.id, app: .default, now: start)
        _ = try await store.completePage(
            notificationID: sent.id, app: .default, number: page.number, counts: [:], failures: [],
            retry: OutboxRetry(targets: page.targets, attempt: 1, due: start.adding(seconds: 3600)))
        #expect(try await store.parkNotification(notificationID: sent.id, app: .default, owner: "a", now: start) == nil)
        guard
            case .page(let retry) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start.adding(seconds: 1))
        else { Issue.record("the retry page was not due at once"); return }
        #expect(retry.cancelled && retry.attempt == 1)
    }

    /// A retry page re-reads its registrations: a deleted one is dropped, a changed handle used.
    @Test(arguments: StoreKind.allCases)
    func aRetryPageReadsTheRegistrationsAsTheyAreNow(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 3)
        let (sent, page) = try await enqueueAndClaim(store)
        _ = try await store.completePage(
            notificationID: sent.id, app: .default, number: page.number, counts: [:], failures: [],
            retry: OutboxRetry(targets: page.targets, attempt: 1, due: start.adding(seconds: 60)))
        #expect(try await store.delete(id: page.targets[0].registrationID, app: .default))
        var moved = try #require(try await store.registration(id: page.targets[1].registrationID, app: .default))
        moved.handle = try HandlePolicy().validate(String(repeating: "ab", count: 32), for: .apns)
        try await store.restore([moved], now: start)
        guard
            case .page(let retry) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("a", until: 90), pageSize: 10, now: start.adding(seconds: 60))
        else { Issue.record("no retry page"); return }
        #expect(retry.targets.map(\.registrationID) == Array(page.targets.dropFirst().map(\.registrationID)))
        #expect(retry.targets.first?.handle == moved.handle)
    }

    /// A direct send's handles are no registrations: its retry page keeps them as they were sent
    /// (read again as registrations, every one was dropped and never retried), even beside a
    /// registration whose id looks like a direct target's.
    @Test(arguments: StoreKind.allCases)
    func aDirectSendsRetryPageKeepsItsHandles(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 3)
        try await store.restore([try registration(try RegistrationID("direct-0001"), tags: ["news"])], now: start)
        let handles = try ["01", "02"].map { try HandlePolicy().validate(String(repeating: $0, count: 32), for: .apns) }
        var sent = try notification()
        sent.audience = .direct(handles: handles)
        try await store.enqueue(sent, lease: lease("a", until: 30))
        guard
            case .page(let page) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
        else { Issue.record("no page"); return }
        #expect(page.targets.map(\.handle) == handles)
        _ = try await store.completePage(
            notificationID: sent.id, app: .default, number: page.number, counts: [:], failures: [],
            retry: OutboxRetry(targets: page.targets, attempt: 1, due: start.adding(seconds: 60)))
        guard
            case .page(let retry) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("a", until: 90), pageSize: 10, now: start.adding(seconds: 60))
        else { Issue.record("no retry page"); return }
        #expect(retry.targets == page.targets)
        #expect(retry.attempt == 1)
    }

    /// An FCM topic audience is one target, whatever the registrations, and survives the store.
    @Test(arguments: StoreKind.allCases)
    func aTopicAudienceIsOneTarget(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 20)
        var sent = try notification()
        let recipient = try FCMRecipient(condition: "'news' in topics && !('eu' in topics)")
        sent.audience = .fcm(recipient)
        sent.selection = PlatformSelection([.fcm])
        try await store.enqueue(sent, lease: nil)
        let takeover = try #require(try await store.takeDueNotification(app: .default, lease: lease("a", until: 30), now: start))
        #expect(takeover.notification.audience == .fcm(recipient))
        guard
            case .page(let page) = try await store.claimPage(
                notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
        else { Issue.record("no page"); return }
        #expect(page.targets == [recipient.target])
        #expect(
            try await store.claimPage(notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
                == .exhausted)
        #expect(
            try await store.notificationRecord(id: sent.id, app: .default)?.audience == "condition 'news' in topics && !('eu' in topics)")
    }

}
