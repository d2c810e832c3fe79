/// The outbox: notifications accepted for delivery, stored before the caller hears back, then
/// delivered in pages under leases by whichever gateway instance holds them.
///
/// Lifecycle of a notification (``NotificationState``):
/// `Scheduled` (a `deliverAt` in the future) or `Enqueued` → `Processing` (a driver holds its
/// lease and claims pages) → `Completed`, `Abandoned`, `NoTargetFound` or `Cancelled`.
///
/// - A driver holds the notification's lease (renewed while it works) and claims pages of its
///   audience, each under a page lease. A page is a range of registration ids `(after, last]` of
///   the audience's keyset walk, so the walk resumes after a crash without materialising the
///   audience.
/// - A page's outcomes are recorded once, with the page marked done, in one transaction
///   (``completePage(notificationID:app:number:counts:failures:)`` answers false for a page done
///   already): a page delivered twice — its lease expired while it was on the wire — is counted
///   once.
/// - A page whose lease expired (its driver died or was stopped) is claimed again; the devices
///   of the pages in flight at a crash are the only ones that can receive the message twice.
/// - A cancelled notification's remaining pages are still claimed, and counted `Cancelled`
///   without being sent.
public protocol OutboxQueue: Sendable {
    /// Stores `notification` (durable when the call returns). With a `lease`, the caller drives it
    /// at once (a synchronous send) and it starts `Processing`.
    ///
    /// With an idempotency key, in the same transaction: when a notification of the same app and
    /// sender stored since the key's `storedSince` holds the key, nothing is stored and that one is
    /// answered (concurrent enqueues with one key store one notification); an older holder gives
    /// the key up.
    @discardableResult
    func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) -> OutboxEnqueued
    /// Stores `notification` for its caller to drive at once (a synchronous send, under `lease`)
    /// and, when it is stored, claims its first page of `pageSize` in the same transaction: the
    /// send's first page pays no claim of its own. A page claimed here is the caller's as any
    /// claimed page is (a crash leaves it to be claimed again when its lease expires).
    func enqueue(
        _ notification: OutboxNotification, lease: OutboxLease, claimingFirstPageOf pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxSynchronousStart
    /// The notification of `app` and `sender` that holds `key` (stored since its `storedSince`); nil when none does.
    func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) async throws(StoreError) -> OutboxKeyHolder?
    /// Takes the lease of one notification of `app` that is due (`deliverAt` passed or a cancel
    /// asked for, not final, and not leased or its lease expired), oldest first; nil when none is.
    /// A stored notification that can no longer be read is ended `Abandoned` instead (it would
    /// otherwise block the ones behind it).
    func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover?
    /// The next page of `notificationID` for the lease holder (or, `helping`, for another
    /// instance while a live holder has it and it is shared): an expired page first, else the
    /// audience after the cursor.
    func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError)
        -> OutboxClaim
    /// A shared notification (an asynchronous send) that another instance holds and is still
    /// paging (its audience not exhausted, its lease alive): pages of it are there for `owner` to
    /// claim and deliver too (``claimPage(notificationID:app:lease:pageSize:now:helping:)``), so
    /// that one broadcast uses every instance. Its holder alone finishes it. nil when none is.
    func takeRunningNotification(app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> OutboxNotification?
    /// Records a page's outcomes and marks it done; false (nothing recorded) when it was done already.
    /// With a `retry`, its targets (which a service throttled; they are not in `counts`) become a
    /// page of their own, due at `retry.due`, in the same transaction. `rows` (other features'
    /// rows, ``OutboxRecordRow``) are written in that transaction too, only when the page is
    /// recorded now: they commit or fail with it.
    func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?, rows: [OutboxRecordRow]
    ) async throws(StoreError) -> Bool
    /// Records the last page of a notification (its claim said ``OutboxPage/last``) and, in the
    /// same transaction, finishes the notification as ``finish(notificationID:app:owner:now:completion:)``
    /// does: one commit where a send of one page would pay two. Answers what each part did.
    func completeLastPage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], owner: String,
        now: Timestamp, rows: [OutboxRecordRow], completion: CompletionEvents
    ) async throws(StoreError) -> OutboxLastPageRecord
    /// Records the final answers of targets of pages still on the wire, as they arrive (a driver
    /// flushes them every few tens of milliseconds): a page claimed again after its driver died
    /// skips the targets answered here and counts them as answered (``OutboxPage/answered``), so
    /// that a crash sends again only what was on the wire and not yet flushed. Answers for a page
    /// that is done already are ignored; the failures among them are listed at once.
    func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) async throws(StoreError)
    /// When the audience is exhausted and the only pages left are retries not yet due: gives up
    /// `owner`'s lease on the notification until the first of them is due (so that no driver holds
    /// it meanwhile) and answers that time. nil, with nothing changed, otherwise.
    func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> Timestamp?
    /// Ends the notification when its audience is exhausted and every page is done: the final
    /// state follows its counts (or `Cancelled`). nil while pages are left. The rows `completion`
    /// makes of the ended record are written in the same transaction, only when it ends now.
    func finish(
        notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents
    ) async throws(StoreError) -> NotificationRecord?
    /// Extends every lease `owner` holds on unfinished work to `until`.
    func renewLeases(owner: String, until: Timestamp) async throws(StoreError)
    /// Gives up the leases `owner` holds on unfinished work (of one notification, or all), so that
    /// the next claim takes it at once.
    func releaseLeases(owner: String, notificationID: String?) async throws(StoreError)
    /// Whether several gateway instances run on this store (PostgreSQL): only then is there
    /// another instance's broadcast to help with. False unless stated.
    var servesSeveralInstances: Bool { get }
    /// Wakes `wake` whenever another instance has outbox work (PostgreSQL's LISTEN/NOTIFY); runs
    /// until cancelled. Stores with only one instance return at once.
    func listenForOutboxWork(_ wake: @escaping @Sendable () -> Void) async
}

extension OutboxQueue {
    public var servesSeveralInstances: Bool { false }
    public func listenForOutboxWork(_ wake: @escaping @Sendable () -> Void) async {}
}

/// The notifications' telemetry and cancelling: what a sender reads and asks of its sends.
public protocol NotificationLog: Sendable {
    /// Asks for a notification to stop: it becomes due at once (its `deliverAt` is kept), and its
    /// driver counts the targets not yet sent as `Cancelled`. Answers the record as it was before
    /// (`cancelRequested` false for the one call that asked first; final ones are left unchanged).
    func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord?
    func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord?
    /// The failed targets of a notification, ordered by registration id, after `after`.
    func failedTargets(notificationID: String, app: AppID, after: RegistrationID?, limit: Int) async throws(StoreError) -> [TargetResult]
    /// Notifications newest first; only `sender`'s when given.
    func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord]
}

/// The outbox's housekeeping: pruning what ended long ago, and how much is waiting.
public protocol OutboxMaintenance: Sendable {
    /// Deletes notifications that ended before `endedBefore`, with their outcomes, at most 100 per
    /// call (a short transaction); how many. Call again while it answers 100.
    func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int
    /// How much is waiting.
    func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth
}

/// The rows other features write with pages' records (``OutboxRecordRow``), as their feature reads
/// and removes them: in the order they were recorded, per app.
public protocol OutboxRowLog: Sendable {
    /// Rows recorded after `sequence` (0: from the first), oldest first, at most `limit`.
    func recordedRows(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [StoredOutboxRow]
    /// Removes the rows up to and including `sequence` (their feature is done with them); how many.
    @discardableResult
    func removeRecordedRows(app: AppID, through sequence: Int64) async throws(StoreError) -> Int
    /// Writes rows in a transaction of their own: a send whose pages are not stored (the outbox
    /// off) has no page record to write them with.
    func appendRows(_ rows: [OutboxRecordRow], notificationID: String, page: Int, app: AppID) async throws(StoreError)
}

/// The outbox as a store keeps it: the queue drivers work, the senders' telemetry, the
/// housekeeping, the rows written with records.
public typealias OutboxStore = OutboxQueue & NotificationLog & OutboxMaintenance & OutboxRowLog

/// What a send uses: its audience (registrations), secure messages, the outbox's queue and its
/// log; not the outbox's housekeeping.
public typealias SendStore = RegistrationStore & SecureMessageStore & OutboxQueue & NotificationLog & LiveActivityStore

/// Everything a gateway keeps: registrations, secure messages and the outbox.
public typealias GatewayStore = RegistrationStore & SecureMessageStore & OutboxStore & LiveActivityStore & WebhookEventStore

/// A store on a database the gateway opened itself (SQLite, PostgreSQL): what the server and the
/// CLI need beyond the stores' operations.
public protocol DatabaseStore: GatewayStore {
    /// What and where it is (`SQLite /var/lib/pushgate.sqlite`, `PostgreSQL postgres://…`), no secret.
    var summary: String { get }
    func schemaVersion() async throws(StoreError) -> Int
    /// The database's health as its monitor last found it (`/healthz` answers 503 with the
    /// reason while it is down): probed at most once per interval, and at once after a call failed.
    var health: HealthMonitor { get }
    func close() async
}
