import Foundation
import Logging
import Pushgate
import PushgateDispatch
import Synchronization

/// The outbox's settings and this instance's part in it: the owner name its leases carry, whether
/// it is draining (shutting down: no new page is claimed), and the signal that wakes the delivery
/// service when a notification is enqueued.
public final class OutboxControl: Sendable {
    public let configuration: OutboxConfiguration
    /// This process's name on leases: unique per start, so that a restarted instance takes over
    /// its own former work only once those leases expire or were released.
    public let owner: String
    package let signal = WakeSignal()

    package init(configuration: OutboxConfiguration) {
        self.configuration = configuration
        owner = "pushgate-" + UUID().uuidString.lowercased()
    }

    /// Whether sends go through the outbox (`outbox.enabled`): asked here, and only here.
    public var isEnabled: Bool { configuration.enabled }

    /// Refuses, naming `what`, unless the outbox is on: what cannot be done without it
    /// (asynchronous, scheduled and hub sends) is refused before anything is stored.
    package func require(for what: String) throws(GatewayError) {
        guard isEnabled else { throw GatewayError(.notImplemented, "\(what) need the outbox, which is turned off (outbox.enabled)") }
    }

    /// When draining began; nil while the gateway runs.
    private let drainingSince = Mutex<ContinuousClock.Instant?>(nil)

    public var isDraining: Bool { drainingSince.withLock { $0 != nil } }

    /// Stops claiming pages, here and in every send in flight.
    public func beginDraining() {
        drainingSince.withLock { $0 = $0 ?? .now }
        signal.signal()
    }

    /// What is left of a shutdown `deadline` counted from when draining began: the listener and
    /// the delivery service share one deadline, whichever stops first.
    package func remaining(of deadline: Duration) -> Duration {
        guard let since = drainingSince.withLock({ $0 }) else { return deadline }
        return max(.zero, deadline - (ContinuousClock.now - since))
    }

    /// Tells the delivery service that work may be due.
    package func wake() { signal.signal() }

    package func lease(from now: Timestamp) -> OutboxLease {
        OutboxLease(owner: owner, until: now.adding(seconds: Double(configuration.leaseSeconds)))
    }
}

/// The notifications this process is driving, so that a cancel can stop the pages already on
/// the wire (not only the pages not yet claimed).
public final class ActiveDrives: Sendable {
    package final class Drive: Sendable {
        private let cancelled = Atomic<Bool>(false)
        private let task = Mutex<Task<DispatchSummary, Never>?>(nil)

        /// Whether a user cancelled it: targets abandoned by the cancellation count `Cancelled`.
        var cancelledByUser: Bool { cancelled.load(ordering: .acquiring) }

        /// A later round (after a cancel) is not cancelled: the pages it claims come marked
        /// cancelled by the store and are counted without being sent.
        func running(_ dispatch: Task<DispatchSummary, Never>) { task.withLock { $0 = dispatch } }

        func cancel() {
            cancelled.store(true, ordering: .releasing)
            task.withLock { $0 }?.cancel()
        }
    }

    private let drives = Mutex<[String: Drive]>([:])

    package func start(_ id: String) -> Drive {
        let drive = Drive()
        drives.withLock { $0[id] = drive }
        return drive
    }

    /// Forgets `drive` (not a later drive of the same notification).
    package func end(_ id: String, _ drive: Drive) {
        drives.withLock { drives in if drives[id] === drive { drives[id] = nil } }
    }

    /// Stops the pages of `id` in flight here, if it is driven here.
    package func cancel(_ id: String) { drives.withLock { $0[id] }?.cancel() }
}

/// Wakes one waiter (the delivery service's loop), or the next wait when nobody waits.
package final class WakeSignal: Sendable {
    private struct State: Sendable {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    package func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns when signalled, or after `timeout`. One waiter at a time.
    package func wait(timeout: Duration) async {
        if state.withLock({ state in
            defer { state.pending = false }
            return state.pending
        }) {
            return
        }
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.signal()
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }
}

extension Gateway {
    /// How a drive of a notification ended.
    package enum DriveStop: Sendable, Equatable {
        /// The gateway is shutting down: the rest is delivered after the next start.
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
    }

    /// What driving a notification did: its final record when it finished, and what this process
    /// delivered (counts of every target, targets listed up to the reporting limit).
    package struct DriveResult: Sendable {
        var record: NotificationRecord?
        var counts: [Platform: [Outcome: Int]] = [:]
        var targets: [TargetResult] = []
        var stop: DriveStop?
    }

    /// Pages handed to the dispatcher, by the order it read them, and the throttled targets put
    /// off to retry pages (not final: left out of what the drive reports).
    package final class PageLedger: Sendable {
        private let pages = Mutex<[(number: Int, attempt: Int)]>([])
        private let stopped = Mutex<DriveStop?>(nil)
        private let deferred = Mutex<[DispatchTarget]>([])

        func append(_ page: OutboxPage) { pages.withLock { $0.append((page.number, page.attempt)) } }
        func page(at index: Int) -> (number: Int, attempt: Int)? { pages.withLock { $0.indices.contains(index) ? $0[index] : nil } }
        func deferring(_ targets: [DispatchTarget]) { deferred.withLock { $0 += targets } }
        var deferredTargets: [DispatchTarget] { deferred.withLock { $0 } }
        func stop(_ reason: DriveStop) { stopped.withLock { $0 = $0 ?? reason } }
        var stop: DriveStop? { stopped.withLock { $0 } }
    }

    /// Delivers the pages of a notification this process holds the lease of, until its audience
    /// is exhausted and every page recorded, then ends it. Stops claiming when the gateway drains;
    /// pages not recorded by then are released and delivered again after the next start.
    package func drive(
        _ notification: OutboxNotification, progress: (@Sendable (DispatchProgress) -> Void)? = nil, logger: Logger
    ) async -> DriveResult {
        var result = DriveResult()
        let drive = activeDrives.start(notification.id)
        defer { activeDrives.end(notification.id, drive) }
        while true {
            let ledger = PageLedger()
            // A time-to-live counts from the send, not from this round (a retry, a redelivery
            // after a crash): what is left of it goes out.
            let sentAt = notification.deliverAt.secondsSinceEpoch
            let roundStart = now().secondsSinceEpoch
            let payloads = notification.payloads.mapValues { $0.remainingTimeToLive(at: roundStart, sentAt: sentAt) }
            let targets = AsyncThrowingStream<[DispatchTarget], any Error>(unfolding: { [self] in
                try await self.nextPage(of: notification, ledger: ledger)
            })
            let reported = max(0, 10_000 - result.targets.count)
            // Its own task, so that a cancel stops the pages on the wire without cancelling the caller.
            let dispatch = Task { [self] in
                await dispatcher.dispatch(
                    notificationID: notification.id, selection: notification.selection, payloads: payloads,
                    targets: targets, maximumReportedTargets: reported,
                    applyHandleUpdates: { [logger] updates in await self.applyHandleUpdates(updates, logger: logger) },
                    batchFinished: { [self] index, reports in
                        await self.record(
                            reports, page: ledger.page(at: index), of: notification, cancelledByUser: drive.cancelledByUser,
                            ledger: ledger, logger: logger)
                    }, progress: progress, payloadGroups: payloadGrouping(for: notification.delivery, payloads: payloads),
                    logger: logger)
            }
            drive.running(dispatch)
            let summary = await withTaskCancellationHandler {
                await dispatch.value
            } onCancel: {
                dispatch.cancel()
            }
            // Throttled targets put off to a retry page have no final outcome yet.
            let deferred = ledger.deferredTargets
            let deferredCounts = Dictionary(grouping: deferred, by: \.handle.platform).mapValues(\.count)
            for platform in summary.result.platforms {
                for (outcome, count) in platform.counts {
                    let final = count - (outcome == .throttled ? deferredCounts[platform.platform] ?? 0 : 0)
                    if final > 0 { result.counts[platform.platform, default: [:]][outcome, default: 0] += final }
                }
            }
            var unreported = Dictionary(deferred.map { ($0.registrationID, 1) }, uniquingKeysWith: +)
            result.targets += summary.result.targets.filter { target in
                // One throttled result per deferral (a retry claimed in the same round reports again).
                guard target.outcome == .throttled, let left = unreported[target.registrationID], left > 0 else { return true }
                unreported[target.registrationID] = left - 1
                return false
            }
            if let failure = summary.targetsFailure {
                result.stop = .storeFailed(failure)
                return result
            }
            if Task.isCancelled || (outbox.isDraining && !drive.cancelledByUser) {
                result.stop = .draining
                return result
            }
            if let stop = ledger.stop {
                result.stop = stop
                if case .recordFailed = stop {
                    // Give the unrecorded page up: whoever takes the notification next delivers it again.
                    try? await store.releaseLeases(owner: outbox.owner, notificationID: notification.id)
                }
                return result
            }
            do {
                if let record = try await store.finish(
                    notificationID: notification.id, app: notification.app, owner: outbox.owner, now: now())
                {
                    result.record = record
                    return result
                }
            } catch {
                result.stop = .recordFailed(error.description)
                try? await store.releaseLeases(owner: outbox.owner, notificationID: notification.id)
                return result
            }
            // Only retries of throttled targets left, not yet due: nobody holds the notification
            // until they are (the delivery service takes it then).
            if let due = try? await store.parkNotification(
                notificationID: notification.id, app: notification.app, owner: outbox.owner, now: now())
            {
                result.stop = .deferred(until: due)
                return result
            }
            // Pages are left: a former driver's, whose lease has not expired yet. Claim them when it has.
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    /// The next page to deliver; pages of a cancelled notification are counted `Cancelled` here
    /// and not sent.
    private func nextPage(of notification: OutboxNotification, ledger: PageLedger) async throws(StoreError) -> [DispatchTarget]? {
        while true {
            if outbox.isDraining || Task.isCancelled {
                ledger.stop(.draining)
                return nil
            }
            let time = now()
            let claim = try await store.claimPage(
                notificationID: notification.id, app: notification.app, lease: outbox.lease(from: time),
                pageSize: outbox.configuration.pageSize, now: time)
            switch claim {
            case .lost:
                ledger.stop(.lost)
                return nil
            case .exhausted:
                return nil
            case .page(let page):
                metrics.outboxPageClaimed(reclaimed: page.reclaimed)
                if page.cancelled || page.targets.isEmpty {
                    var counts: [Platform: [Outcome: Int]] = [:]
                    for target in page.targets { counts[target.handle.platform, default: [:]][.cancelled, default: 0] += 1 }
                    _ = try await store.completePage(
                        notificationID: notification.id, app: notification.app, number: page.number, counts: counts, failures: [])
                    continue
                }
                ledger.append(page)
                return page.targets
            }
        }
    }

    /// Records a delivered page's outcomes once. A page cut short by shutdown is not recorded:
    /// its lease is released and it is delivered again after the next start. A page cut short by
    /// a cancel is recorded, its abandoned targets as `Cancelled`.
    ///
    /// Targets a service throttled past what the in-place retry waits (it asked for a minute or
    /// more) go to a retry page due after the backoff, up to `outbox.throttledRetries` times; the
    /// last time, or when the notification's time-to-live ends before the retry would be due,
    /// `Throttled` is final.
    private func record(
        _ reports: [DeliveryReport], page: (number: Int, attempt: Int)?, of notification: OutboxNotification, cancelledByUser: Bool,
        ledger: PageLedger, logger: Logger
    ) async {
        guard let (page, attempt) = page else { return }
        // Cut short by shutdown: recorded only when every target got its final answer anyway.
        if Task.isCancelled, !cancelledByUser, reports.contains(where: { $0.verdict.outcome == .abandoned }) { return }
        var counts: [Platform: [Outcome: Int]] = [:]
        var failures: [TargetResult] = []
        var retried: [DispatchTarget] = []
        var retryDelay = 0.0
        let configuration = outbox.configuration
        let time = now()
        // Each platform's expiry, read from its payload once per page, when a target is throttled.
        var expiries: [Platform: Double?] = [:]
        func expiry(_ platform: Platform) -> Double? {
            if let known = expiries[platform] { return known }
            let expiry = notification.payloads[platform]?.expiry(sentAt: notification.deliverAt.secondsSinceEpoch)
            expiries[platform] = .some(expiry)
            return expiry
        }
        for report in reports {
            var outcome = report.verdict.outcome
            if cancelledByUser && outcome == .abandoned { outcome = .cancelled }
            if outcome == .throttled, !cancelledByUser, attempt < configuration.throttledRetries,
                case .afterBackoff(let retryAfter) = report.verdict.retry
            {
                let delay = OutboxRetry.delay(
                    attempt: attempt + 1, base: Double(configuration.throttledBackoffSeconds), retryAfter: retryAfter,
                    limit: Double(configuration.maximumScheduleAheadSeconds))
                if expiry(report.target.handle.platform).map({ time.secondsSinceEpoch + delay < $0 }) ?? true {
                    retried.append(report.target)
                    retryDelay = max(retryDelay, delay)
                    continue
                }
            }
            counts[report.target.handle.platform, default: [:]][outcome, default: 0] += 1
            if !outcome.isSuccess && outcome != .cancelled { failures.append(report.targetResult) }
        }
        let retry = retried.isEmpty ? nil : OutboxRetry(targets: retried, attempt: attempt + 1, due: time.adding(seconds: retryDelay))
        do {
            let recorded = try await store.completePage(
                notificationID: notification.id, app: notification.app, number: page, counts: counts, failures: failures, retry: retry)
            if recorded, let retry {
                ledger.deferring(retry.targets)
                metrics.outboxTargetsDeferred(retry.targets.count)
                logger.notice(
                    "throttled targets put off to a retry page",
                    metadata: [
                        "page": "\(page)", "targets": "\(retry.targets.count)", "attempt": "\(retry.attempt)",
                        "due": "\(RFC3339.format(retry.due))",
                    ])
            }
        } catch {
            metrics.outboxRecordFailed()
            ledger.stop(.recordFailed(error.description))
            logger.error(
                "could not record a page's outcomes; it will be delivered again", metadata: ["page": "\(page)", "error": "\(error)"])
        }
    }

    // MARK: Sends through the outbox

    /// Sends synchronously through the outbox: the notification is stored first (so that a crash
    /// resumes it), then this request drives it and answers with the result.
    ///
    /// A send cut short still reports every target it reached, with the result's `error` saying
    /// why: a store failure ends it `interrupted`; a shutdown `continuing` (accepted: the rest is delivered
    /// after the next start, and `GET /api/notifications/{id}/outcome` tells how it went).
    public func deliver(
        _ prepared: PreparedSend, progress: (@Sendable (DispatchProgress) -> Void)? = nil, logger requestLogger: Logger? = nil
    ) async -> SendOutcome {
        guard outbox.isEnabled else { return await deliverDirectly(prepared, progress: progress, logger: requestLogger) }
        let started = ContinuousClock.now
        let notification = outboxNotification(prepared, enqueuedAt: now(), deliverAt: nil)
        var logger = requestLogger ?? self.logger
        logger[metadataKey: "notification"] = "\(notification.id)"
        do {
            try await store.enqueue(notification, lease: outbox.lease(from: notification.enqueuedAt))
        } catch {
            logger.error("could not store a notification", metadata: ["error": "\(error)"])
            var result = NotificationResult(notificationID: notification.id, selection: prepared.selection, targets: [])
            result.state = .abandoned
            result.error = "the registration store is unavailable: the notification was not accepted"
            return SendOutcome(result: result, ending: .interrupted, secureID: nil)
        }
        let run = await drive(notification, progress: progress, logger: logger)
        var result = NotificationResult(
            notificationID: notification.id, selection: prepared.selection, counts: run.record?.counts ?? run.counts,
            targets: run.targets)
        var ending: SendOutcome.Ending
        let reached = result.platforms.reduce(0) { $0 + $1.total }
        switch run.stop {
        case .storeFailed(let failure), .recordFailed(let failure):
            let what = if case .storeFailed = run.stop { "listing targets" } else { "recording outcomes" }
            logger.error(
                "send stopped: the registration store failed while \(what)", metadata: ["reached": "\(reached)", "error": "\(failure)"])
            // The notification is stored: released, it is retried in the background.
            try? await store.releaseLeases(owner: outbox.owner, notificationID: notification.id)
            result.error =
                "the registration store failed while \(what); \(reached) targets were reached, the rest is retried in the background"
                + " (GET /api/notifications/\(notification.id)/outcome)"
            ending = .interrupted
        case .lost, .draining, .deferred:
            // Accepted, not finished: the rest goes out elsewhere, later, or after the next start.
            let why =
                switch run.stop {
                case .lost: "another gateway instance took the send over; \(reached) targets were reached here"
                case .deferred(let due):
                    "the push services throttled some targets; \(reached) targets have their outcome, the throttled ones are sent again"
                        + " from \(RFC3339.format(due))"
                default:
                    "the gateway is shutting down; \(reached) targets were reached, the rest will be delivered after it starts again"
                }
            logger.warning("send interrupted: \(why)")
            result.state = .processing
            result.error = why + " (GET /api/notifications/\(notification.id)/outcome)"
            ending = .continuing
        case nil:
            if let record = run.record { result.state = record.state }
            ending = .finished
        }
        return finished(result, ending: ending, secureID: prepared.secureID, started: started, logger: logger)
    }

    package func outboxNotification(_ prepared: PreparedSend, enqueuedAt: Timestamp, deliverAt: Timestamp?) -> OutboxNotification {
        OutboxNotification(
            id: UUID().uuidString.lowercased(), app: appID, sender: prepared.sender, selection: prepared.selection,
            audience: prepared.audience, payloads: prepared.payloads, secureID: prepared.secureID, enqueuedAt: enqueuedAt,
            deliverAt: deliverAt, delivery: prepared.delivery)
    }

    /// Accepts a send for background delivery (`Prefer: respond-async`, `?async=true`, or a
    /// `deliverAt`): answers once it is stored.
    public func enqueue(_ prepared: PreparedSend, deliverAt: Timestamp?) async throws(GatewayError) -> NotificationRecord {
        try outbox.require(for: "asynchronous, scheduled and hub sends")
        let notification = outboxNotification(prepared, enqueuedAt: now(), deliverAt: deliverAt)
        try await stored { () throws(StoreError) in try await store.enqueue(notification, lease: nil) }
        outbox.wake()
        logger.info(
            "notification accepted",
            metadata: [
                "notification": "\(notification.id)", "state": "\(notification.initialState)",
                "deliverAt": "\(RFC3339.format(notification.deliverAt))",
            ])
        return NotificationRecord(
            id: notification.id, app: appID, sender: notification.sender, state: notification.initialState,
            selection: notification.selection, audience: notification.audience.description, secureID: notification.secureID,
            enqueuedAt: notification.enqueuedAt, deliverAt: notification.deliverAt, startedAt: nil, endedAt: nil, counts: [:],
            cancelRequested: false)
    }

    /// The delivery time of a scheduled send: RFC 3339, not further in the past than the allowed
    /// skew (a time just past is sent at once), nor further ahead than the horizon.
    public func scheduleTime(_ text: String?) throws(GatewayError) -> Timestamp? {
        guard let text else { return nil }
        let time: Timestamp
        do { time = try RFC3339.parse(text) } catch { throw .badRequest("deliverAt: \(error.description)") }
        let current = now()
        let skew = Double(outbox.configuration.scheduleSkewSeconds)
        let horizon = Double(outbox.configuration.maximumScheduleAheadSeconds)
        if time.secondsSinceEpoch < current.secondsSinceEpoch - skew {
            throw .badRequest(
                "deliverAt: \(text) is in the past (now is \(RFC3339.format(current)); at most \(Int(skew)) s of clock skew is allowed)")
        }
        if time.secondsSinceEpoch > current.secondsSinceEpoch + horizon {
            throw .badRequest("deliverAt: \(text) is more than \(Int(horizon)) s ahead (outbox.maxScheduleAheadSeconds)")
        }
        return max(time, current)
    }

    // MARK: Telemetry and cancelling

    /// A notification the user may see: their own, or any for an admin. A stranger's is "not
    /// found", as an unknown id.
    public func notificationRecord(id: String, user: AuthenticatedUser) async throws(GatewayError) -> NotificationRecord {
        guard !id.isEmpty, id.utf8.count <= 64 else { throw .notFound("no notification '\(id.prefix(64))'") }
        let record = try await stored { () throws(StoreError) in try await store.notificationRecord(id: id, app: appID) }
        guard let record, record.sender == user.name || user.isAdmin else { throw .notFound("no notification \(id)") }
        return record
    }

    /// The failed targets of a notification, a page at a time.
    public func failedTargets(
        of record: NotificationRecord, after: String?, limit: Int
    ) async throws(GatewayError) -> [TargetResult] {
        var cursor: RegistrationID?
        if let after, !after.isEmpty {
            do { cursor = try RegistrationID(after) } catch { throw .badRequest("failedAfter: \(error.description)") }
        }
        guard (1...1000).contains(limit) else { throw .badRequest("failedLimit must be 1…1000, not \(limit)") }
        return try await stored { () throws(StoreError) in
            try await store.failedTargets(notificationID: record.id, app: appID, after: cursor, limit: limit)
        }
    }

    /// Notifications newest first: the user's own, or everyone's for an admin (or one sender's).
    public func notificationRecords(user: AuthenticatedUser, sender: String?, limit: Int) async throws(GatewayError) -> [NotificationRecord]
    {
        guard (1...1000).contains(limit) else { throw .badRequest("limit must be 1…1000, not \(limit)") }
        let sender = sender.flatMap { $0.isEmpty ? nil : $0 }
        if let sender, sender != user.name, !user.isAdmin {
            throw GatewayError(.forbidden, "sender: only admins may list another sender's notifications")
        }
        let filter = user.isAdmin ? sender : user.name
        return try await stored { () throws(StoreError) in try await store.notificationRecords(app: appID, sender: filter, limit: limit) }
    }

    /// `DELETE /api/notifications/{id}`: stops a scheduled or running send; its targets not yet
    /// sent are counted `Cancelled`. Waits up to `wait` for the send to stop, and answers its record.
    public func cancelNotification(
        id: String, user: AuthenticatedUser, wait: Duration = .seconds(10)
    ) async throws(GatewayError)
        -> NotificationRecord
    {
        let record = try await notificationRecord(id: id, user: user)
        guard !record.state.isFinal else {
            throw GatewayError(.conflict, "notification \(id) has already finished (\(record.state)); there is nothing to cancel")
        }
        let time = now()
        let before = try await stored { () throws(StoreError) in try await store.requestCancel(notificationID: id, app: appID, now: time) }
        if let before, before.cancelRequested || before.state.isFinal {
            throw GatewayError(
                .conflict, "notification \(id) is already \(before.state.isFinal ? "finished (\(before.state))" : "being cancelled")")
        }
        activeDrives.cancel(id)
        outbox.wake()
        logger.info("notification cancel requested", metadata: ["notification": "\(id)", "by": "\(user.name)"])
        var latest = before
        let deadline = ContinuousClock.now + wait
        while let current = latest, !current.state.isFinal, ContinuousClock.now < deadline {
            guard (try? await Task.sleep(for: .milliseconds(50))) != nil else { break }
            latest = try await stored { () throws(StoreError) in try await store.notificationRecord(id: id, app: appID) }
        }
        guard let latest else { throw .notFound("no notification \(id)") }
        return latest
    }
}
