import Pushgate
import PushgateDispatch

/// The decisions of driving one notification through the outbox, as a value: claim pages until
/// the audience is exhausted, record each delivered page's outcomes once, put throttled targets
/// off to retry pages, and end, park or stop. Every method takes what happened (a claim, a
/// finished batch, a store's answer, the time) and answers what to do next; ``OutboxDriver``
/// performs it. Nothing here waits, reads a clock or touches a store.
///
/// A drive runs in rounds. A round claims pages and delivers them until none is left to claim;
/// then the notification is finished when every page is recorded, parked when only retries
/// not yet due are left, or tried again shortly when another driver still holds pages.
///
/// (About 30 members: one state machine, one method per event it takes; a state machine split in
/// two would be two machines sharing state.)
public struct OutboxDrive: Sendable {
    /// What shapes the decisions.
    public struct Settings: Sendable, Hashable {
        /// How often throttled targets are put off to a retry page before `Throttled` is final.
        public var throttledRetries: Int
        public var throttledBackoffSeconds: Double
        /// The furthest a retry is put off.
        public var maximumRetryDelaySeconds: Double
        /// Whether the outbox outlives this process. A durable outbox stops claiming when the
        /// gateway drains (the rest resumes after the next start) and leaves a page cut short by
        /// shutdown unrecorded (it is delivered again). An ephemeral one has no next start: it
        /// delivers on while draining, and counts what a page cut short reached.
        public var durable: Bool
        /// Targets listed in the result (failures first once full); every target is counted.
        public var maximumReportedTargets: Int
        /// How long to wait before a new round when another driver still holds pages.
        public var otherDriverPause: Duration
        /// When the final answers of targets on the wire are recorded, ahead of their page (a page
        /// claimed again after a crash skips them); nil records nothing before the page.
        public var answers: AnswerFlush?

        public init(
            throttledRetries: Int, throttledBackoffSeconds: Double, maximumRetryDelaySeconds: Double, durable: Bool,
            maximumReportedTargets: Int = 10_000, otherDriverPause: Duration = .milliseconds(250), answers: AnswerFlush? = nil
        ) {
            self.answers = answers
            self.throttledRetries = throttledRetries
            self.throttledBackoffSeconds = throttledBackoffSeconds
            self.maximumRetryDelaySeconds = maximumRetryDelaySeconds
            self.durable = durable
            self.maximumReportedTargets = maximumReportedTargets
            self.otherDriverPause = otherDriverPause
        }
    }

    /// Why a drive stopped before the notification finished.
    public enum Stop: Sendable, Hashable {
        /// The gateway is shutting down: the rest is delivered after the next start (or, without
        /// a durable outbox, not at all).
        case draining
        /// The store failed while reading the audience; the rest is retried.
        case storeFailed(String)
        /// The store could not record a page's outcomes; that page is delivered again.
        case recordFailed(String)
        /// Another driver holds the notification now.
        case lost
        /// Only targets a service throttled are left; they are retried from this time, by
        /// whichever driver takes the notification then.
        case deferred(until: Timestamp)
        /// Helping another instance's drive: no page is left to claim (its holder finishes it).
        case helped
    }

    /// What a drive did: the notification's final record when it finished, what this drive
    /// delivered (every final outcome counted once, targets listed up to the limit), and why
    /// it stopped otherwise.
    public struct Result: Sendable {
        public var record: NotificationRecord?
        public var counts: [Platform: [Outcome: Int]]
        public var targets: [TargetResult]
        public var stop: Stop?
    }

    /// A page's outcomes to record (``OutboxStore/completePage(notificationID:app:number:counts:failures:retry:rows:)``).
    public struct PageRecord: Sendable, Hashable {
        public var number: Int
        public var counts: [Platform: [Outcome: Int]]
        public var failures: [TargetResult]
        public var retry: OutboxRetry?
        /// Rows other features write with the record (``OutboxHooks/rows(for:page:of:)``), in its transaction.
        public var rows: [OutboxRecordRow]

        public init(
            number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], retry: OutboxRetry?, rows: [OutboxRecordRow] = []
        ) {
            self.number = number
            self.counts = counts
            self.failures = failures
            self.retry = retry
            self.rows = rows
        }
    }

    public enum PageStep: Sendable, Hashable {
        /// Claim the next page.
        case claim
        /// No further page this round.
        case end
    }

    public enum ClaimStep: Sendable, Hashable {
        /// Deliver these targets.
        case deliver([DispatchTarget])
        /// Record this page without sending it (the notification is being cancelled, or the
        /// page's registrations are gone), then claim again.
        case record(PageRecord)
        /// No further page this round.
        case end
    }

    public enum RecordStep: Sendable, Hashable {
        case recorded
        /// Recorded, with these targets put off to a retry page.
        case deferred(OutboxRetry)
        /// Recorded before (the page was delivered twice): nothing counted again.
        case recordedBefore
        /// Not recorded: the drive stops and the page is delivered again.
        case failed(String)
    }

    public enum RoundEnd: Sendable, Hashable {
        /// Ask the store to finish the notification.
        case finish
        /// Stop; release this driver's leases on the notification first when asked to.
        case stop(Stop, releaseLeases: Bool)
    }

    public enum FinishStep: Sendable, Hashable {
        case done(NotificationRecord)
        /// Pages are left: park the notification when they are retries not yet due.
        case park
        case stop(Stop, releaseLeases: Bool)
    }

    public enum ParkStep: Sendable, Hashable {
        case stop(Stop)
        /// Another driver's pages are left: start a new round after this pause.
        case newRound(after: Duration)
    }

    public let notification: OutboxNotification
    public let settings: Settings
    private var tally: OutcomeTally
    /// The pages handed out this round, by the order the dispatcher read them, with the counts of
    /// what an earlier claim's driver answered.
    private var pages: [Int: (number: Int, attempt: Int, answered: [Platform: [Outcome: Int]])] = [:]
    private var pagesRead = 0
    private var stop: Stop?
    private var targetsFailure: String?
    private var record: NotificationRecord?
    /// Each platform's expiry (seconds since the epoch), read from its payload once.
    private var expiries: [Platform: Double?] = [:]
    /// The final outcomes of pages handed to the store and not yet recorded: counted once the
    /// store records the page (not when it was recorded before, by a driver that delivered it too).
    private var unrecorded: [Int: [(report: DeliveryReport, outcome: Outcome)]] = [:]
    /// Per page, the targets whose failure the store listed with their early answers.
    private var failuresListed: [Int: Set<RegistrationID>] = [:]
    /// The number of the page this round claimed that its claim said was the last
    /// (``OutboxPage/last``): nothing more is claimed, and its record finishes the notification.
    private var lastPage: Int?

    /// Delivering pages of a notification another instance holds: this drive claims and records
    /// pages, and never finishes or parks the notification.
    public let helping: Bool

    public init(_ notification: OutboxNotification, settings: Settings, helping: Bool = false) {
        self.notification = notification
        self.settings = settings
        self.helping = helping
        tally = OutcomeTally(maximumReportedTargets: settings.maximumReportedTargets)
    }

    public var progress: DispatchProgress { tally.progress }

    public var result: Result { Result(record: record, counts: tally.counts, targets: tally.results, stop: stop) }

    /// Starts a round at `now`: the payloads to send, with what is left of their time-to-live
    /// (it counts from the send, not from this round: a retry, a redelivery after a crash).
    public mutating func startRound(now: Timestamp) -> [Platform: RenderedNotification] {
        pages = [:]
        pagesRead = 0
        lastPage = nil
        stop = nil
        targetsFailure = nil
        let (time, sentAt) = (now.secondsSinceEpoch, notification.deliverAt.secondsSinceEpoch)
        return notification.payloads.mapValues { $0.remainingTimeToLive(at: time, sentAt: sentAt) }
    }

    /// Before each claim: a draining gateway (when the outbox is durable), a cancelled task, a
    /// page that could not be recorded or a notification another driver took claims nothing more.
    /// A user's cancel ends the round without stopping the drive, draining or not: the next round
    /// counts the rest `Cancelled` without sending it.
    public mutating func nextPage(draining: Bool, cancelled: Bool, cancelledByUser: Bool) -> PageStep {
        switch stop {
        case .recordFailed, .lost: return .end
        default: break
        }
        if cancelledByUser { return cancelled ? .end : .claim }
        if cancelled || (draining && settings.durable) {
            stopOnce(.draining)
            return .end
        }
        // The last page is out: a claim would only say so.
        return lastPage == nil ? .claim : .end
    }

    /// What a claim gave.
    public mutating func claimed(_ claim: OutboxClaim) -> ClaimStep {
        switch claim {
        case .lost:
            stopOnce(.lost)
            return .end
        case .exhausted:
            return .end
        case .page(let page):
            if page.last, !helping { lastPage = page.number }
            if page.cancelled || page.targets.isEmpty {
                var counts = page.answered
                for target in page.targets { counts[target.handle.platform, default: [:]][.cancelled, default: 0] += 1 }
                return .record(PageRecord(number: page.number, counts: counts, failures: [], retry: nil))
            }
            pages[pagesRead] = (page.number, page.attempt, page.answered)
            pagesRead += 1
            return .deliver(page.targets)
        }
    }

    /// A delivered batch: the page's record (each target's final outcome, counted once the store
    /// records it); nil when the page is not to be recorded (cut short by shutdown: a durable
    /// outbox delivers it again).
    ///
    /// Targets a service throttled past what the in-place retry waits (it asked for a minute or
    /// more) go to a retry page due after the backoff, up to `throttledRetries` times; the last
    /// time, or when the notification's time-to-live ends before the retry would be due,
    /// `Throttled` is final. Targets abandoned by a user's cancel are `Cancelled`.
    public mutating func batchFinished(
        _ batch: DispatchedBatch, now: Timestamp, cancelledByUser: Bool, shuttingDown: Bool
    ) -> PageRecord? {
        guard let (number, attempt, answered) = pages.removeValue(forKey: batch.index) else { return nil }
        // Cut short by shutdown: recorded only when every target got its final answer anyway.
        if settings.durable, shuttingDown, !cancelledByUser, batch.reports.contains(where: { $0.verdict.outcome == .abandoned }) {
            return nil
        }
        var final: [(report: DeliveryReport, outcome: Outcome)] = []
        var counts = answered
        // Listed already, with their early answers (the same outcome: a final answer is final).
        let listed = failuresListed.removeValue(forKey: number) ?? []
        var failures: [TargetResult] = []
        var retried: [DispatchTarget] = []
        var retryDelay = 0.0
        for report in batch.reports {
            var outcome = report.verdict.outcome
            if cancelledByUser && outcome == .abandoned { outcome = .cancelled }
            if outcome == .throttled, !cancelledByUser, attempt < settings.throttledRetries,
                case .afterBackoff(let retryAfter) = report.verdict.retry
            {
                let delay = OutboxRetry.delay(
                    attempt: attempt + 1, base: settings.throttledBackoffSeconds, retryAfter: retryAfter,
                    limit: settings.maximumRetryDelaySeconds)
                if expiry(report.target.handle.platform).map({ now.secondsSinceEpoch + delay < $0 }) ?? true {
                    retried.append(report.target)
                    retryDelay = max(retryDelay, delay)
                    continue
                }
            }
            final.append((report, outcome))
            counts[report.target.handle.platform, default: [:]][outcome, default: 0] += 1
            if !outcome.isSuccess && outcome != .cancelled, !listed.contains(report.target.registrationID) {
                var failure = report.targetResult
                failure.outcome = outcome
                failures.append(failure)
            }
        }
        let retry = retried.isEmpty ? nil : OutboxRetry(targets: retried, attempt: attempt + 1, due: now.adding(seconds: retryDelay))
        unrecorded[number] = final
        return PageRecord(number: number, counts: counts, failures: failures, retry: retry)
    }

    /// Early answers of batches on the wire, to record ahead of their pages: the targets whose
    /// outcome is final whatever happens next. Throttled targets (which may go to a retry page)
    /// and abandoned ones (not sent: shutdown, a cancel) are left out, so a page claimed again
    /// sends them.
    ///
    /// The failures among them are listed by the store as they are recorded: the page's record
    /// then leaves them out (``answersNotRecorded(_:)`` puts them back when the store failed).
    public mutating func answers(_ early: [Int: [DeliveryReport]]) -> [OutboxAnswers] {
        let answers = early.compactMap { index, reports -> OutboxAnswers? in
            guard let page = pages[index] else { return nil }
            let targets = reports.filter { $0.verdict.outcome != .abandoned && $0.verdict.outcome != .throttled }.map(\.targetResult)
            return targets.isEmpty ? nil : OutboxAnswers(page: page.number, targets: targets)
        }.sorted { $0.page < $1.page }
        for page in answers {
            for failure in page.failures { failuresListed[page.page, default: []].insert(failure.registrationID) }
        }
        return answers
    }

    /// The final reports of page `number` handed to the store and not recorded yet (between
    /// ``batchFinished(_:now:cancelledByUser:shuttingDown:)`` and its record), each with its final
    /// outcome: what the loop's hooks are given. Targets put off to a retry page are not among them.
    public func outcomes(ofPage number: Int) -> [DeliveryReport] {
        (unrecorded[number] ?? []).map { final in
            var report = final.report
            report.verdict.outcome = final.outcome
            return report
        }
    }

    /// The store did not record these answers: their failures go with their pages' records.
    public mutating func answersNotRecorded(_ answers: [OutboxAnswers]) {
        for page in answers {
            for failure in page.failures { failuresListed[page.page]?.remove(failure.registrationID) }
        }
    }

    /// The handle changes of a batch to store: the removals and replacements the services asked
    /// for, of its registrations. A direct send's handles and an FCM topic are no registrations
    /// (``DispatchTarget/Kind``): nothing is stored for them (a registration whose id looked like
    /// theirs must not be touched).
    public func storedHandleChanges(_ batch: DispatchedBatch) -> [HandleUpdate] {
        batch.handleUpdates.filter(\.target.isRegistration)
    }

    /// What the store said to a page's record. A page recorded before is not counted again; one
    /// the store failed to record was still delivered, and counts among what this drive reached.
    public mutating func recorded(_ page: PageRecord, _ answer: Swift.Result<Bool, StoreError>) -> RecordStep {
        let final = unrecorded.removeValue(forKey: page.number) ?? []
        switch answer {
        case .success(false):
            return .recordedBefore
        case .success(true):
            for (report, outcome) in final { tally.record(report, as: outcome) }
            return page.retry.map(RecordStep.deferred) ?? .recorded
        case .failure(let error):
            for (report, outcome) in final { tally.record(report, as: outcome) }
            stopOnce(.recordFailed(error.description))
            return .failed(error.description)
        }
    }

    /// Whether `page` is recorded with the notification's finish, in one transaction
    /// (``OutboxQueue/completeLastPage(notificationID:app:number:counts:failures:owner:now:)``):
    /// the page its claim said was the last, with nothing put off to a retry page. A helper never
    /// finishes.
    public func finishes(with page: PageRecord) -> Bool {
        !helping && page.number == lastPage && page.retry == nil
    }

    /// What the store said to a last page's record with the notification's finish: a page
    /// recorded as ``recorded(_:_:)`` says, and, when the store finished the notification, its
    /// record (the round then ends finished).
    public mutating func recordedLast(_ page: PageRecord, _ answer: Swift.Result<OutboxLastPageRecord, StoreError>) -> RecordStep {
        switch answer {
        case .success(.recordedBefore):
            return recorded(page, .success(false))
        case .success(.recorded):
            return recorded(page, .success(true))
        case .success(.finished(let record)):
            self.record = record
            return recorded(page, .success(true))
        case .failure(let error):
            return recorded(page, .failure(error))
        }
    }

    /// The notification's record when the store finished it with its last page: nothing is left to do.
    public var finishedWithLastPage: NotificationRecord? { record }

    /// Reading the audience failed: the batches already out are recorded, the rest waits.
    public mutating func targetsFailed(_ reason: String) { targetsFailure = targetsFailure ?? reason }

    /// Every batch of the round is recorded: finish, or stop and say why. `cancelled` is whether
    /// the drive's caller was cancelled (a shutdown past its deadline).
    public mutating func roundEnded(cancelled: Bool, draining: Bool, cancelledByUser: Bool) -> RoundEnd {
        // Finished with its last page's record: whatever came after (a shutdown) has nothing left to stop.
        if record != nil {
            stop = nil
            return .finish
        }
        if let targetsFailure {
            stop = .storeFailed(targetsFailure)
            return .stop(.storeFailed(targetsFailure), releaseLeases: true)
        }
        if cancelled || (draining && settings.durable && !cancelledByUser) {
            stop = .draining
            return .stop(.draining, releaseLeases: false)
        }
        if let stop {
            // An unrecorded page is given up: whoever takes the notification next delivers it again.
            if case .recordFailed = stop { return .stop(stop, releaseLeases: true) }
            return .stop(stop, releaseLeases: false)
        }
        if helping {
            stop = .helped
            return .stop(.helped, releaseLeases: false)
        }
        return .finish
    }

    /// What the store answered to finishing the notification.
    public mutating func finished(_ answer: Swift.Result<NotificationRecord?, StoreError>) -> FinishStep {
        switch answer {
        case .success(let record?):
            self.record = record
            return .done(record)
        case .success(nil):
            return .park
        case .failure(let error):
            stop = .recordFailed(error.description)
            return .stop(.recordFailed(error.description), releaseLeases: true)
        }
    }

    /// What parking answered: the time the first retry is due, or nil when pages are left that
    /// another driver holds (claimed when its lease expires).
    public mutating func parked(until due: Timestamp?) -> ParkStep {
        if let due {
            stop = .deferred(until: due)
            return .stop(.deferred(until: due))
        }
        return .newRound(after: settings.otherDriverPause)
    }

    private mutating func stopOnce(_ reason: Stop) { stop = stop ?? reason }

    private mutating func expiry(_ platform: Platform) -> Double? {
        if let known = expiries[platform] { return known }
        let expiry = notification.payloads[platform]?.expiry(sentAt: notification.deliverAt.secondsSinceEpoch)
        expiries[platform] = .some(expiry)
        return expiry
    }
}
