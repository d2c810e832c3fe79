import Pushgate
import PushgateDispatch
import PushgateOutbox
import Testing

/// The drive's decisions, one at a time: what happened goes in, what to do comes out. Times
/// come from a ``ManualClock`` the test moves; nothing waits.
@Suite struct OutboxDriveTests {
    /// Each test's own clock.
    let clock = ManualClock(secondsSinceEpoch: 1_800_000_000)

    static func target(_ index: Int) -> DispatchTarget {
        DispatchTarget(
            registrationID: try! RegistrationID(String(format: "r%07d", index)),
            handle: DeviceHandle(uncheckedPlatform: .gcm, value: "token-\(index)"))
    }

    func notification(timeToLive: Int? = nil, sentAt: Timestamp? = nil) -> OutboxNotification {
        let sentAt = sentAt ?? clock.now
        var payload = RenderedNotification(
            platform: .gcm, body: Array(#"{"data":{"m":"hi"}}"#.utf8), headers: [], contentType: "application/json")
        if let timeToLive { payload = payload.withTimeToLive(timeToLive, now: sentAt.secondsSinceEpoch) }
        return OutboxNotification(
            id: "n1", app: .default, sender: "bob", selection: .all, audience: .everyone, payloads: [.gcm: payload], enqueuedAt: sentAt)
    }

    static let durable = OutboxDrive.Settings(
        throttledRetries: 2, throttledBackoffSeconds: 60, maximumRetryDelaySeconds: 3600, durable: true)

    static func page(_ number: Int, _ targets: [DispatchTarget], attempt: Int = 0, cancelled: Bool = false) -> OutboxClaim {
        .page(OutboxPage(number: number, targets: targets, reclaimed: false, cancelled: cancelled, attempt: attempt))
    }

    static func report(_ target: DispatchTarget, _ outcome: Outcome, retry: RetryAdvice = .never) -> DeliveryReport {
        DeliveryReport(target: target, verdict: DeliveryVerdict(outcome: outcome, retry: retry), attempts: 1, latencyMilliseconds: 1)
    }

    @Test func pagesAreClaimedUntilTheAudienceEndsOrTheNotificationIsLost() {
        var drive = OutboxDrive(notification(), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        #expect(drive.nextPage(draining: false, cancelled: false, cancelledByUser: false) == .claim)
        #expect(drive.claimed(Self.page(0, [Self.target(1)])) == .deliver([Self.target(1)]))
        #expect(drive.claimed(.exhausted) == .end)
        #expect(drive.result.stop == nil)
        #expect(drive.claimed(.lost) == .end)
        #expect(drive.result.stop == .lost)
        #expect(drive.roundEnded(cancelled: false, draining: false, cancelledByUser: false) == .stop(.lost, releaseLeases: false))
    }

    /// Early answers leave out what may still change (throttled, abandoned); the failures among
    /// them are listed by the store with the answers, so the page's record does not list them
    /// again, unless the store failed to record the answers. A page claimed again counts what
    /// was answered before it.
    @Test func earlyAnswersAreFinalOnesAndTheirFailuresAreListedOnce() {
        var drive = OutboxDrive(notification(), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        let targets = (1...5).map(Self.target)
        _ = drive.claimed(
            .page(OutboxPage(number: 7, targets: targets, reclaimed: true, cancelled: false, answered: [.gcm: [.success: 3]])))
        let early = drive.answers([
            0: [
                Self.report(targets[0], .success), Self.report(targets[1], .badChannel), Self.report(targets[2], .throttled),
                Self.report(targets[3], .abandoned),
            ]
        ])
        #expect(early.map(\.page) == [7])
        #expect(early.first?.targets.map(\.registrationID) == [targets[0].registrationID, targets[1].registrationID])
        #expect(early.first?.failures.map(\.registrationID) == [targets[1].registrationID])
        #expect(drive.answers([9: [Self.report(targets[4], .success)]]).isEmpty, "a batch this round did not hand out")
        let record = drive.batchFinished(
            DispatchedBatch(
                index: 0,
                reports: [
                    Self.report(targets[0], .success), Self.report(targets[1], .badChannel), Self.report(targets[2], .success),
                    Self.report(targets[3], .success), Self.report(targets[4], .expiredChannel),
                ]), now: clock.now, cancelledByUser: false, shuttingDown: false)
        #expect(
            record?.counts == [.gcm: [.success: 6, .badChannel: 1, .expiredChannel: 1]], "the 3 answered before are counted with the page")
        #expect(record?.failures.map(\.registrationID) == [targets[4].registrationID], "the early failure is listed already")

        // The store did not take the answers: the page's record lists their failures.
        var again = OutboxDrive(notification(), settings: Self.durable)
        _ = again.startRound(now: clock.now)
        _ = again.claimed(Self.page(8, [targets[1]]))
        let unrecorded = again.answers([0: [Self.report(targets[1], .badChannel)]])
        again.answersNotRecorded(unrecorded)
        let whole = again.batchFinished(
            DispatchedBatch(index: 0, reports: [Self.report(targets[1], .badChannel)]), now: clock.now, cancelledByUser: false,
            shuttingDown: false)
        #expect(whole?.failures.map(\.registrationID) == [targets[1].registrationID])
    }

    @Test func aCancelledNotificationsPagesAreRecordedCancelledWithoutBeingSent() {
        var drive = OutboxDrive(notification(), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        let step = drive.claimed(Self.page(3, [Self.target(1), Self.target(2)], cancelled: true))
        #expect(step == .record(OutboxDrive.PageRecord(number: 3, counts: [.gcm: [.cancelled: 2]], failures: [], retry: nil)))
        #expect(drive.result.counts.isEmpty, "what this drive did not send is the store's count, not the drive's")
    }

    @Test func throttledTargetsGoToARetryPageDueAfterTheBackoffAndAreNotCountedYet() {
        var drive = OutboxDrive(notification(), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        let targets = (1...3).map(Self.target)
        #expect(drive.claimed(Self.page(0, targets)) == .deliver(targets))
        clock.advance(seconds: 2)
        let batch = DispatchedBatch(
            index: 0,
            reports: [
                Self.report(targets[0], .throttled, retry: .afterBackoff(retryAfterSeconds: nil)),
                Self.report(targets[1], .throttled, retry: .afterBackoff(retryAfterSeconds: 300)),
                Self.report(targets[2], .success),
            ])
        let record = drive.batchFinished(batch, now: clock.now, cancelledByUser: false, shuttingDown: false)
        #expect(record?.number == 0)
        #expect(record?.counts == [.gcm: [.success: 1]])
        #expect(record?.retry?.targets == [targets[0], targets[1]])
        #expect(record?.retry?.attempt == 1)
        // The longer of the backoff (60 s) and the service's Retry-After (300 s).
        #expect(record?.retry?.due == clock.now.adding(seconds: 300))
        #expect(drive.result.counts.isEmpty, "counted once the store records the page")
        #expect(drive.recorded(record!, .success(true)) == .deferred(record!.retry!))
        #expect(drive.result.counts == [.gcm: [.success: 1]], "a deferred target has no outcome yet")
    }

    @Test func theLastAttemptOrAnExpiringTimeToLiveMakesThrottledFinal() {
        var drive = OutboxDrive(notification(timeToLive: 100), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        let throttled = Self.report(Self.target(1), .throttled, retry: .afterBackoff(retryAfterSeconds: nil))
        // Retry 2 of 2: final.
        _ = drive.claimed(Self.page(5, [Self.target(1)], attempt: 2))
        let last = drive.batchFinished(
            DispatchedBatch(index: 0, reports: [throttled]), now: clock.now, cancelledByUser: false, shuttingDown: false)
        #expect(last?.retry == nil)
        #expect(last?.counts == [.gcm: [.throttled: 1]])
        #expect(last?.failures.map(\.outcome) == [.throttled])
        // Attempt 1 would be due 120 s from now (60 × 2), after the 100 s time-to-live ends: final.
        _ = drive.claimed(Self.page(6, [Self.target(1)], attempt: 1))
        let expiring = drive.batchFinished(
            DispatchedBatch(index: 1, reports: [throttled]), now: clock.now, cancelledByUser: false, shuttingDown: false)
        #expect(expiring?.retry == nil)
        #expect(drive.recorded(last!, .success(true)) == .recorded)
        #expect(drive.recorded(expiring!, .success(true)) == .recorded)
        #expect(drive.result.counts == [.gcm: [.throttled: 2]])
    }

    @Test func aPageCutShortByShutdownIsNotRecordedAndAUsersCancelCountsCancelled() {
        var drive = OutboxDrive(notification(), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        let abandoned = DispatchedBatch(
            index: 0, reports: [Self.report(Self.target(1), .abandoned), Self.report(Self.target(2), .success)])
        _ = drive.claimed(Self.page(0, [Self.target(1), Self.target(2)]))
        #expect(drive.batchFinished(abandoned, now: clock.now, cancelledByUser: false, shuttingDown: true) == nil)
        _ = drive.claimed(Self.page(1, [Self.target(1), Self.target(2)]))
        let cancelled = drive.batchFinished(
            DispatchedBatch(index: 1, reports: abandoned.reports), now: clock.now, cancelledByUser: true, shuttingDown: true)
        #expect(cancelled?.number == 1)
        #expect(cancelled?.counts == [.gcm: [.cancelled: 1, .success: 1]])
        #expect(cancelled?.failures.isEmpty == true, "a cancelled target is no failure")
        // A user's cancel ends the round without stopping the drive: the next round counts the
        // rest, draining or not.
        #expect(drive.nextPage(draining: true, cancelled: true, cancelledByUser: true) == .end)
        #expect(drive.roundEnded(cancelled: false, draining: true, cancelledByUser: true) == .finish)
        _ = drive.startRound(now: clock.now)
        #expect(drive.nextPage(draining: true, cancelled: false, cancelledByUser: true) == .claim)
    }

    /// Without a durable outbox nothing delivers a page again: what a page cut short reached is
    /// recorded, its unsent targets `Abandoned`.
    @Test func anEphemeralDriveRecordsAPageCutShortByShutdown() {
        var settings = Self.durable
        settings.durable = false
        var drive = OutboxDrive(notification(), settings: settings)
        _ = drive.startRound(now: clock.now)
        _ = drive.claimed(Self.page(0, [Self.target(1), Self.target(2)]))
        let record = drive.batchFinished(
            DispatchedBatch(index: 0, reports: [Self.report(Self.target(1), .abandoned), Self.report(Self.target(2), .success)]),
            now: clock.now, cancelledByUser: false, shuttingDown: true)
        #expect(record?.counts == [.gcm: [.abandoned: 1, .success: 1]])
        #expect(drive.recorded(record!, .success(true)) == .recorded)
        #expect(drive.result.counts == [.gcm: [.abandoned: 1, .success: 1]])
    }

    /// Once a page could not be recorded, or another driver took the notification, no page is
    /// claimed again this round: nothing more is sent that cannot be recorded.
    @Test func noPageIsClaimedAfterARecordFailedOrTheNotificationWasLost() {
        var drive = OutboxDrive(notification(), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        _ = drive.claimed(Self.page(0, [Self.target(1)]))
        let record = drive.batchFinished(
            DispatchedBatch(index: 0, reports: [Self.report(Self.target(1), .success)]), now: clock.now, cancelledByUser: false,
            shuttingDown: false)!
        _ = drive.recorded(record, .failure(StoreError(.storage, "disk full")))
        #expect(drive.nextPage(draining: false, cancelled: false, cancelledByUser: false) == .end)
        #expect(drive.result.counts == [.gcm: [.success: 1]], "delivered, so reached, though not recorded")

        var lost = OutboxDrive(notification(), settings: Self.durable)
        _ = lost.startRound(now: clock.now)
        _ = lost.claimed(.lost)
        #expect(lost.nextPage(draining: false, cancelled: false, cancelledByUser: false) == .end)
    }

    @Test func drainingStopsADurableDriveAndNotAnEphemeralOne() {
        var durable = OutboxDrive(notification(), settings: Self.durable)
        _ = durable.startRound(now: clock.now)
        #expect(durable.nextPage(draining: true, cancelled: false, cancelledByUser: false) == .end)
        #expect(durable.roundEnded(cancelled: false, draining: true, cancelledByUser: false) == .stop(.draining, releaseLeases: false))

        var settings = Self.durable
        settings.durable = false
        var ephemeral = OutboxDrive(notification(), settings: settings)
        _ = ephemeral.startRound(now: clock.now)
        #expect(ephemeral.nextPage(draining: true, cancelled: false, cancelledByUser: false) == .claim)
        #expect(ephemeral.roundEnded(cancelled: false, draining: true, cancelledByUser: false) == .finish)
        // Only the caller's cancellation (shutdown past its deadline) stops it.
        #expect(ephemeral.nextPage(draining: true, cancelled: true, cancelledByUser: false) == .end)
        #expect(ephemeral.roundEnded(cancelled: true, draining: true, cancelledByUser: false) == .stop(.draining, releaseLeases: false))
    }

    @Test func storeFailuresStopTheDriveAndGiveItsLeasesUp() {
        var reading = OutboxDrive(notification(), settings: Self.durable)
        _ = reading.startRound(now: clock.now)
        reading.targetsFailed("disk I/O error")
        #expect(
            reading.roundEnded(cancelled: false, draining: true, cancelledByUser: false)
                == .stop(.storeFailed("disk I/O error"), releaseLeases: true), "the store's failure says more than the shutdown")

        var recording = OutboxDrive(notification(), settings: Self.durable)
        _ = recording.startRound(now: clock.now)
        _ = recording.claimed(Self.page(0, [Self.target(1)]))
        let record = recording.batchFinished(
            DispatchedBatch(index: 0, reports: [Self.report(Self.target(1), .success)]), now: clock.now, cancelledByUser: false,
            shuttingDown: false)!
        #expect(recording.recorded(record, .failure(StoreError(.storage, "locked"))) == .failed("locked"))
        #expect(
            recording.roundEnded(cancelled: false, draining: false, cancelledByUser: false)
                == .stop(.recordFailed("locked"), releaseLeases: true))

        var finishing = OutboxDrive(notification(), settings: Self.durable)
        #expect(finishing.finished(.failure(StoreError(.unavailable, "down"))) == .stop(.recordFailed("down"), releaseLeases: true))
    }

    @Test func anUnfinishedNotificationIsParkedUntilItsRetryOrTriedAgainShortly() {
        var drive = OutboxDrive(notification(), settings: Self.durable)
        _ = drive.startRound(now: clock.now)
        #expect(drive.roundEnded(cancelled: false, draining: false, cancelledByUser: false) == .finish)
        #expect(drive.finished(.success(nil)) == .park)
        #expect(
            drive.parked(until: nil) == .newRound(after: .milliseconds(250)), "another driver's pages: claimed when their lease expires")
        let due = clock.now.adding(seconds: 120)
        #expect(drive.parked(until: due) == .stop(.deferred(until: due)))
        #expect(drive.result.stop == .deferred(until: due))
    }

    @Test func aRoundSendsWhatIsLeftOfTheTimeToLive() {
        let sentAt = clock.now
        var drive = OutboxDrive(notification(timeToLive: 600, sentAt: sentAt), settings: Self.durable)
        let later = sentAt.adding(seconds: 250)
        let payloads = drive.startRound(now: later)
        #expect(payloads[.gcm]?.expiry(sentAt: later.secondsSinceEpoch) == later.secondsSinceEpoch + 350)
    }

    @Test func everyFinalOutcomeIsCountedOnceAndFailuresListedFirst() throws {
        var settings = Self.durable
        settings.maximumReportedTargets = 2
        var drive = OutboxDrive(notification(), settings: settings)
        _ = drive.startRound(now: clock.now)
        let targets = (1...4).map(Self.target)
        _ = drive.claimed(Self.page(0, targets))
        let page = drive.batchFinished(
            DispatchedBatch(
                index: 0,
                reports: [
                    Self.report(targets[0], .success), Self.report(targets[1], .success), Self.report(targets[2], .expiredChannel),
                    Self.report(targets[3], .success),
                ]), now: clock.now, cancelledByUser: false, shuttingDown: false)
        #expect(drive.recorded(try #require(page), .success(true)) == .recorded)
        #expect(drive.result.counts == [.gcm: [.success: 3, .expiredChannel: 1]])
        #expect(drive.result.targets.count == 2)
        #expect(drive.result.targets.contains { $0.outcome == .expiredChannel }, "a failure takes a listed success's place")
        #expect(drive.progress == DispatchProgress(processed: 4, succeeded: 3))
        // A batch the round does not know (its page was recorded already) is not counted again.
        #expect(
            drive.batchFinished(
                DispatchedBatch(index: 0, reports: [Self.report(targets[0], .success)]), now: clock.now, cancelledByUser: false,
                shuttingDown: false) == nil)
        #expect(drive.progress.processed == 4)
        // A page another driver recorded first (its lease expired while it was on the wire) is
        // not counted again.
        _ = drive.claimed(Self.page(0, [targets[0]]))
        let again = drive.batchFinished(
            DispatchedBatch(index: 1, reports: [Self.report(targets[0], .success)]), now: clock.now, cancelledByUser: false,
            shuttingDown: false)
        #expect(drive.recorded(try #require(again), .success(false)) == .recordedBefore)
        #expect(drive.progress.processed == 4)
    }
}
