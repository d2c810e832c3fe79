import Pushgate

/// The outbox of a gateway whose outbox is off (`outbox.enabled: false`): the same pages, leases
/// and records as the durable one (``InMemoryOutbox``), in memory, for the sends of this process
/// while their requests wait. Nothing survives a restart, and nothing needs to: a send whose
/// request is gone is not resumed.
///
/// The audience is walked page by page from the registration store, as a durable store walks it.
/// One is made per send. A page's failures are not kept (the send's answer lists them): memory follows the pages (a
/// range and a lease each), not the audience's targets. Leases never expire: only this process drives these notifications.
public actor EphemeralOutbox: OutboxQueue {
    private let registrations: any RegistrationStore
    /// Where rows written with pages' records go (the durable store's).
    private let rowLog: (any OutboxRowLog)?
    private var outbox = InMemoryOutbox()
    /// The audience's pages as the store reads them (one notification per ephemeral outbox).
    private var pages: AsyncThrowingStream<[DispatchTarget], any Error>.Iterator?

    public init(registrations: any RegistrationStore, rowLog: (any OutboxRowLog)? = nil) {
        self.registrations = registrations
        self.rowLog = rowLog
    }

    /// A lease that outlives any send.
    private static func forever(_ lease: OutboxLease) -> OutboxLease {
        OutboxLease(owner: lease.owner, until: Timestamp(secondsSinceEpoch: 1e15))
    }

    @discardableResult
    public func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) throws(StoreError) -> OutboxEnqueued {
        try outbox.enqueue(notification, lease: lease.map(Self.forever))
    }

    /// One send's outbox: no other notification holds a key.
    public func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) -> OutboxKeyHolder? { nil }

    public func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) -> OutboxTakeover? {
        outbox.takeDueNotification(app: app, lease: Self.forever(lease), now: now)
    }

    /// Nobody else sees an ephemeral notification.
    public func takeRunningNotification(app: AppID, owner: String, now: Timestamp) -> OutboxNotification? { nil }

    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError) -> OutboxClaim {
        guard !helping else { return .lost }
        guard let walk = outbox.walk(of: notificationID, app: app) else { return .lost }
        let size = max(1, pageSize)
        // The next page of the audience, read before the claim (one driver per notification:
        // nothing moves the cursor meanwhile).
        let next = walk.exhausted ? [] : try await page(of: walk.notification, after: walk.cursor, limit: size, now: now)
        return outbox.claimPage(
            notificationID: notificationID, app: app, lease: Self.forever(lease), pageSize: size, now: now, current: { $0 },
            audience: { _, after, _ in after == walk.cursor ? next : [] })
    }

    private func page(
        of notification: OutboxNotification, after: RegistrationID?, limit: Int, now: Timestamp
    ) async throws(StoreError) -> [DispatchTarget] {
        // The store's page sequence, read one page per claim (pages are read only when asked for);
        // an audience the sender gave (a topic, direct handles) is its own.
        try await notification.audience.targets(after: after, limit: limit) {
            selector, _, limit async throws(StoreError) -> [DispatchTarget] in
            var iterator =
                pages
                ?? registrations.deliveryTargets(
                    selecting: selector, platforms: notification.selection, app: notification.app, pageSize: limit, now: now
                ).makeAsyncIterator()
            defer { pages = iterator }
            do {
                return try await iterator.next(isolation: self) ?? []
            } catch let error as StoreError {
                throw error
            } catch {
                throw StoreError(.storage, String(describing: error))
            }
        }
    }

    /// Records the page in memory; its rows go to the durable store's log (``OutboxRowLog``) in a
    /// transaction of their own, after the page (no page of this outbox is stored to write them
    /// with). Without a log they are dropped.
    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?, rows: [OutboxRecordRow]
    ) async throws(StoreError) -> Bool {
        guard outbox.completePage(notificationID: notificationID, app: app, number: number, counts: counts, failures: [], retry: retry)
        else { return false }
        if !rows.isEmpty, let rowLog { try await rowLog.appendRows(rows, notificationID: notificationID, page: number, app: app) }
        return true
    }

    /// Nothing to keep: only this process drives the notification, and its pages are never
    /// claimed again.
    public func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) {}

    public func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) -> Timestamp? {
        outbox.parkNotification(notificationID: notificationID, app: app, owner: owner, now: now)
    }

    /// Ends the notification and forgets it: its answer is the send's.
    /// With the outbox off the end is not stored: its events are written in a transaction of their own.
    public func finish(
        notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents
    ) async throws(StoreError) -> NotificationRecord? {
        let record = outbox.finish(notificationID: notificationID, app: app, owner: owner, now: now)
        if let record {
            outbox.remove(id: notificationID, app: app)
            let rows = completion.rows(for: record, now: now)
            if !rows.isEmpty, let rowLog { try await rowLog.appendRows(rows, notificationID: notificationID, page: 0, app: app) }
        }
        return record
    }

    public func renewLeases(owner: String, until: Timestamp) {}

    public func releaseLeases(owner: String, notificationID: String?) {
        outbox.releaseLeases(owner: owner, notificationID: notificationID)
    }

    /// The record of a send still running here (nil once it ended: nothing is kept).
    public func notificationRecord(id: String, app: AppID) -> NotificationRecord? { outbox.record(id: id, app: app) }
}
