import Logging
import Pushgate
import PushgateDispatch
import PushgateXML
import Synchronization

/// What the outbox tells the gateway's metrics.
public protocol OutboxMetrics: Sendable {
    func outboxPageClaimed(reclaimed: Bool)
    func outboxTargetsDeferred(_ count: Int)
    /// Targets' final answers recorded ahead of their page.
    func outboxAnswersRecorded(_ count: Int)
    /// A page claimed of a notification another instance holds.
    func outboxPageHelped()
    func outboxRecordFailed()
    func handleUpdatesFailed(_ count: Int)
    func outboxNotificationTakenOver()
    func outboxDepth(_ depth: OutboxDepth, now: Timestamp)
    func outboxPruned(_ count: Int)
    func sent(_ result: NotificationResult)
    func sendFinished(duration: Duration)
}

/// Drives notifications through an outbox: performs what ``OutboxDrive`` decides. It owns the
/// loop of a send: it claims pages from `queue`, asks its hooks which targets are superseded,
/// resolves each target's payload (``PagePayloads``), hands the page to the dispatcher's wire,
/// records each finished page (with the rows its hooks write), tells the hooks, applies the
/// handle changes the services asked for to `registrations`, and finishes, parks or stops. The
/// dispatcher only delivers: it never calls back into the driver.
///
/// The same driver runs over the durable store (the outbox on) and over an ``EphemeralOutbox``
/// (the outbox off): one send path.
public struct OutboxDriver: Sendable {
    public let app: AppID
    /// Where the notification's pages and counts are kept.
    public let queue: any OutboxQueue
    /// Where handle changes go.
    public let registrations: any RegistrationStore
    public let dispatcher: Dispatcher
    public let control: OutboxControl
    public let clock: any PushgateClock
    public let drives: ActiveDrives
    public let metrics: any OutboxMetrics
    public let settings: OutboxDrive.Settings
    /// Registration templates compiled once per text (the server's), for the hub's template sends.
    public let templates: CompiledTemplates
    /// What features add to the loop (``OutboxHooks``).
    public let hooks: any OutboxHooks
    /// Handle changes are applied in chunks of this many while the send goes on.
    public var handleUpdateChunk = 500
    /// Pages on the wire at once: while the push services answer one, the next is claimed. Memory
    /// follows this × the page size, not the audience.
    public var pagesInFlight = 3

    /// (Eleven parameters: the composition root hands a driver every part it performs a drive
    /// with; the app's gateway builds it once, ``ephemeral()`` derives the outbox-off driver from it.)
    public init(
        app: AppID, queue: any OutboxQueue, registrations: any RegistrationStore, dispatcher: Dispatcher, control: OutboxControl,
        clock: any PushgateClock, drives: ActiveDrives, metrics: any OutboxMetrics, settings: OutboxDrive.Settings,
        templates: CompiledTemplates, hooks: any OutboxHooks = NoOutboxHooks()
    ) {
        self.app = app
        self.queue = queue
        self.registrations = registrations
        self.dispatcher = dispatcher
        self.control = control
        self.clock = clock
        self.drives = drives
        self.metrics = metrics
        self.settings = settings
        self.templates = templates
        self.hooks = hooks
    }

    /// The settings of the durable outbox's drives.
    public static func settings(_ configuration: OutboxConfiguration) -> OutboxDrive.Settings {
        OutboxDrive.Settings(
            throttledRetries: configuration.throttledRetries, throttledBackoffSeconds: Double(configuration.throttledBackoffSeconds),
            maximumRetryDelaySeconds: Double(configuration.maximumScheduleAheadSeconds), durable: true, answers: AnswerFlush())
    }

    /// This driver over one send's own ``EphemeralOutbox`` (the outbox off): no retry pages
    /// (`Throttled` is final), draining does not stop it, and the outbox's own metrics are not
    /// counted (the send's and the handle updates' are).
    public func ephemeral() -> OutboxDriver {
        OutboxDriver(
            app: app, queue: EphemeralOutbox(registrations: registrations, rowLog: queue as? any OutboxRowLog),
            registrations: registrations,
            dispatcher: dispatcher,
            control: control, clock: clock, drives: drives, metrics: SendMetricsOnly(metrics),
            settings: OutboxDrive.Settings(
                throttledRetries: 0, throttledBackoffSeconds: 0, maximumRetryDelaySeconds: 0, durable: false,
                maximumReportedTargets: settings.maximumReportedTargets),
            templates: templates, hooks: hooks)
    }

    /// Delivers the pages of a notification this driver holds the lease of, until its audience is
    /// exhausted and every page recorded, then ends it; or stops, and says why.
    ///
    /// `helping`: the notification is another instance's (``OutboxStore/takeRunningNotification(app:owner:now:)``);
    /// this driver delivers the pages it can claim of it until none is left, and stops with
    /// ``OutboxDrive/Stop/helped`` (the holder finishes it).
    ///
    /// What the drive reached is counted in the send metrics here, once for every kind of send
    /// (a request's own, the background's, a helper's pages).
    ///
    /// `firstClaim`: the first page, claimed with the enqueue
    /// (``OutboxQueue/enqueue(_:lease:claimingFirstPageOf:now:)``), delivered before any other is claimed.
    public func drive(
        _ notification: OutboxNotification, firstClaim: OutboxClaim? = nil, helping: Bool = false,
        progress: (@Sendable (DispatchProgress) -> Void)? = nil, logger: Logger
    ) async -> OutboxDrive.Result {
        let result = await driveUncounted(notification, firstClaim: firstClaim, helping: helping, progress: progress, logger: logger)
        metrics.sent(
            NotificationResult(
                notificationID: notification.id, selection: notification.selection, counts: result.counts, targets: result.targets))
        return result
    }

    private func driveUncounted(
        _ notification: OutboxNotification, firstClaim: OutboxClaim?, helping: Bool,
        progress: (@Sendable (DispatchProgress) -> Void)?, logger: Logger
    ) async -> OutboxDrive.Result {
        var machine = OutboxDrive(notification, settings: settings, helping: helping)
        var firstClaim = firstClaim
        let drive = drives.start(notification.id)
        defer { drives.end(notification.id, drive) }
        while true {
            let payloads = machine.startRound(now: clock.now)
            // On this task: the caller's cancellation (the shutdown deadline) cancels the round,
            // a user's cancel reaches the round's batches through `drive`.
            machine = await round(machine, payloads: payloads, firstClaim: firstClaim, drive: drive, progress: progress, logger: logger)
            firstClaim = nil
            let end = machine.roundEnded(cancelled: Task.isCancelled, draining: control.isDraining, cancelledByUser: drive.cancelledByUser)
            var release = false
            switch end {
            case .stop(_, let releaseLeases):
                release = releaseLeases
            case .finish:
                // Its last page's record finished it.
                if machine.finishedWithLastPage != nil { return machine.result }
                let time = clock.now
                let answer = await Result(storeCall: { () throws(StoreError) in
                    try await queue.finish(
                        notificationID: notification.id, app: notification.app, owner: control.owner, now: time,
                        completion: hooks.completionEvents(of: notification))
                })
                switch machine.finished(answer) {
                case .done:
                    return machine.result
                case .stop(_, let releaseLeases):
                    release = releaseLeases
                case .park:
                    // Only retries of throttled targets left, not yet due: nobody holds the
                    // notification until they are (the delivery service takes it then).
                    let due = try? await queue.parkNotification(
                        notificationID: notification.id, app: notification.app, owner: control.owner, now: clock.now)
                    switch machine.parked(until: due) {
                    case .stop:
                        return machine.result
                    case .newRound(let pause):
                        // Pages are left: a former driver's, whose lease has not expired yet. Claim them when it has.
                        try? await Task.sleep(for: pause)
                        continue
                    }
                }
            }
            if release { try? await queue.releaseLeases(owner: control.owner, notificationID: notification.id) }
            return machine.result
        }
    }

    /// One round: pages claimed and delivered until none is left, each recorded as it finishes.
    ///
    /// The loop is this task's: it claims a page while fewer than ``pagesInFlight`` are on the
    /// wire, sends it, and otherwise waits for the wire's next event (a finished page to record,
    /// or early answers). A cancel stops the pages on the wire at once, also while this task
    /// records a page or applies handle changes: the caller's cancellation (a shutdown past its
    /// deadline) through the cancellation handler below, a user's cancel through `drive`, where
    /// the round registers its wire. Either claims no further page.
    private func round(
        _ start: OutboxDrive, payloads: [Platform: RenderedNotification], firstClaim: OutboxClaim?, drive: ActiveDrives.Drive,
        progress: (@Sendable (DispatchProgress) -> Void)?, logger: Logger
    ) async -> OutboxDrive {
        var machine = start
        let notification = machine.notification
        // nil unless tracing is on.
        let spans = OutboxPageSpans(tracing: dispatcher.tracing, notificationID: notification.id)
        let wire = dispatcher.wire(selection: notification.selection, answers: settings.answers, logger: logger)
        // A user's cancel stops this round's wire; a later round (after a cancel) is not
        // cancelled: the pages it claims come marked cancelled and are counted without being sent.
        drive.running(cancel: wire.cancellation)
        let resolver = PagePayloads(registrations: registrations, app: app, cache: templates)
        let hooked = !(hooks is NoOutboxHooks) && hooks.concerns(notification)
        var claimed = firstClaim
        var exhausted = false
        var pending: [HandleUpdate] = []
        await withTaskCancellationHandler {
            while true {
                while !exhausted, wire.inFlight < max(1, pagesInFlight) {
                    do {
                        guard
                            let targets = try await nextPage(
                                of: notification, machine: &machine, claimed: &claimed, cancelled: Task.isCancelled || wire.isCancelled,
                                drive: drive, spans: spans)
                        else {
                            exhausted = true
                            break
                        }
                        let superseded = hooked ? await hooks.superseded(targets, of: notification) : [:]
                        let answered =
                            superseded.isEmpty
                            ? []
                            : targets.compactMap { target in
                                superseded[target.registrationID].map {
                                    DeliveryReport(target: target, verdict: $0, attempts: 0, latencyMilliseconds: 0)
                                }
                            }
                        let page = await resolver.page(
                            superseded.isEmpty ? targets : targets.filter { superseded[$0.registrationID] == nil },
                            delivery: notification.delivery, payloads: payloads, answered: answered)
                        wire.send(page, context: spans?.nextContext())
                    } catch {
                        machine.targetsFailed(String(describing: error))
                        exhausted = true
                    }
                }
                guard let event = await wire.next() else { break }
                let batch: DispatchedBatch
                switch event {
                case .answered(let early):
                    let answers = machine.answers(early)
                    if await !record(answers, of: notification, logger: logger) {
                        machine.answersNotRecorded(answers)
                    }
                    continue
                case .finished(let finished):
                    batch = finished
                }
                var page = machine.batchFinished(
                    batch, now: clock.now, cancelledByUser: drive.cancelledByUser, shuttingDown: Task.isCancelled)
                var recorded = false
                if var record = page {
                    // Each target's final report, for the hooks (none by default: not made then).
                    let outcomes = hooked ? machine.outcomes(ofPage: record.number) : []
                    if hooked { record.rows = hooks.rows(for: outcomes, page: record.number, of: notification) }
                    page = record
                    // The last page finishes the notification in its record's transaction,
                    // unless handle changes are to be stored first (the order the contract keeps).
                    let finishing = pending.isEmpty && machine.storedHandleChanges(batch).isEmpty && machine.finishes(with: record)
                    recorded = await self.record(record, of: notification, machine: &machine, finishing: finishing, logger: logger)
                    if recorded, hooked { await hooks.recorded(outcomes, page: record.number, of: notification) }
                }
                spans?.finished(batch, record: page, recorded: recorded)
                pending += machine.storedHandleChanges(batch)
                if pending.count >= handleUpdateChunk {
                    // The other pages stay on the wire meanwhile.
                    await apply(pending, of: notification, logger: logger)
                    pending.removeAll(keepingCapacity: true)
                }
                if let progress { progress(machine.progress) }
            }
        } onCancel: {
            wire.cancel()
        }
        await wire.close()
        spans?.endAll()
        await apply(pending, of: notification, logger: logger)
        return machine
    }

    /// The next page to deliver; pages the drive records without sending (a cancelled
    /// notification's) are recorded here. `cancelled`: whether the round was cancelled.
    /// `claimed`: a page claimed already (with the enqueue), taken instead of claiming one.
    private func nextPage(
        of notification: OutboxNotification, machine: inout OutboxDrive, claimed: inout OutboxClaim?, cancelled: Bool,
        drive: ActiveDrives.Drive, spans: OutboxPageSpans?
    ) async throws(StoreError) -> [DispatchTarget]? {
        while true {
            let step = machine.nextPage(draining: control.isDraining, cancelled: cancelled, cancelledByUser: drive.cancelledByUser)
            guard step == .claim else { return nil }
            let time = clock.now
            let helping = machine.helping
            let claim: OutboxClaim
            if let first = claimed {
                claimed = nil
                claim = first
            } else {
                claim = try await queue.claimPage(
                    notificationID: notification.id, app: notification.app, lease: control.lease(from: time),
                    pageSize: control.configuration.pageSize, now: time, helping: helping)
            }
            if case .page(let page) = claim {
                metrics.outboxPageClaimed(reclaimed: page.reclaimed)
                if helping { metrics.outboxPageHelped() }
            }
            switch machine.claimed(claim) {
            case .end:
                return nil
            case .deliver(let targets):
                if let spans, case .page(let page) = claim { spans.claimed(page) }
                return targets
            case .record(let page):
                _ = try await queue.completePage(
                    notificationID: notification.id, app: notification.app, number: page.number, counts: page.counts,
                    failures: page.failures, retry: page.retry, rows: page.rows)
            }
        }
    }

    /// Records a delivered page's outcomes once; whether the store has them. `finishing`: the
    /// notification's last page, recorded with its finish in one transaction.
    private func record(
        _ page: OutboxDrive.PageRecord, of notification: OutboxNotification, machine: inout OutboxDrive, finishing: Bool,
        logger: Logger
    ) async -> Bool {
        let step: OutboxDrive.RecordStep
        if finishing {
            let time = clock.now
            let answer = await Result(storeCall: { () throws(StoreError) in
                try await queue.completeLastPage(
                    notificationID: notification.id, app: notification.app, number: page.number, counts: page.counts,
                    failures: page.failures, owner: control.owner, now: time, rows: page.rows,
                    completion: hooks.completionEvents(of: notification))
            })
            step = machine.recordedLast(page, answer)
        } else {
            let answer = await Result(storeCall: { () throws(StoreError) in
                try await queue.completePage(
                    notificationID: notification.id, app: notification.app, number: page.number, counts: page.counts,
                    failures: page.failures, retry: page.retry, rows: page.rows)
            })
            step = machine.recorded(page, answer)
        }
        switch step {
        case .recorded, .recordedBefore:
            return true
        case .deferred(let retry):
            metrics.outboxTargetsDeferred(retry.targets.count)
            logger.notice(
                "throttled targets put off to a retry page",
                metadata: [
                    "page": "\(page.number)", "targets": "\(retry.targets.count)", "attempt": "\(retry.attempt)",
                    "due": "\(RFC3339.format(retry.due))",
                ])
            return true
        case .failed(let error):
            metrics.outboxRecordFailed()
            logger.error(
                "could not record a page's outcomes; it will be delivered again", metadata: ["page": "\(page.number)", "error": "\(error)"])
            return false
        }
    }

    /// Records early answers ahead of their pages. A failure loses no delivery: the page's record
    /// still counts them; only a crash before it would send them again.
    /// Whether the store recorded them.
    private func record(_ answers: [OutboxAnswers], of notification: OutboxNotification, logger: Logger) async -> Bool {
        guard !answers.isEmpty else { return true }
        do {
            try await queue.recordAnswers(notificationID: notification.id, app: notification.app, answers: answers)
            metrics.outboxAnswersRecorded(answers.reduce(0) { $0 + $1.targets.count })
            return true
        } catch {
            logger.warning(
                "could not record answers ahead of their page", metadata: ["pages": "\(answers.count)", "error": "\(error)"])
            return false
        }
    }

    /// Removes gone handles and replaces canonical ones. A store failure here loses no delivery:
    /// it is logged and counted (`pushgate_handle_updates_failed_total`), and the devices are
    /// pruned on a later send instead.
    private func apply(_ updates: [HandleUpdate], of notification: OutboxNotification, logger: Logger) async {
        guard !updates.isEmpty else { return }
        let changes = updates.map {
            StoredHandleChange(registrationID: $0.target.registrationID, change: $0.change, outcome: $0.outcome, reason: $0.reason)
        }
        do {
            try await registrations.apply(changes, app: app, now: clock.now, events: hooks.handleChangeEvents(of: notification))
        } catch {
            metrics.handleUpdatesFailed(changes.count)
            logger.error(
                "could not apply handle changes the push services asked for",
                metadata: ["changes": "\(changes.count)", "error": "\(error)"])
        }
    }
}

/// The metrics of sends and handle updates, without the outbox's own (an ephemeral outbox is none).
struct SendMetricsOnly: OutboxMetrics {
    let base: any OutboxMetrics

    init(_ base: any OutboxMetrics) { self.base = base }

    func outboxPageClaimed(reclaimed: Bool) {}
    func outboxTargetsDeferred(_ count: Int) {}
    func outboxAnswersRecorded(_ count: Int) {}
    func outboxPageHelped() {}
    func outboxRecordFailed() {}
    func handleUpdatesFailed(_ count: Int) { base.handleUpdatesFailed(count) }
    func outboxNotificationTakenOver() {}
    func outboxDepth(_ depth: OutboxDepth, now: Timestamp) {}
    func outboxPruned(_ count: Int) {}
    func sent(_ result: NotificationResult) { base.sent(result) }
    func sendFinished(duration: Duration) { base.sendFinished(duration: duration) }
}

extension Result where Failure == StoreError {
    /// The answer of a store call.
    init(storeCall body: () async throws(StoreError) -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
