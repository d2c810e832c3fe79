import Pushgate

/// A store whose outbox is the SQL outbox on its own database: its ``OutboxStore`` operations are
/// the outbox's, forwarded here once for every SQL store.
package protocol SQLOutboxStore: OutboxStore, WebhookEventStore {
    associatedtype OutboxDatabase: SQLDatabase
    /// The outbox on this store's database.
    var outbox: SQLOutbox<OutboxDatabase> { get }
}

extension SQLOutboxStore {
    @discardableResult
    public func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) -> OutboxEnqueued {
        try await outbox.enqueue(notification, lease: lease)
    }

    public func enqueue(
        _ notification: OutboxNotification, lease: OutboxLease, claimingFirstPageOf pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxSynchronousStart {
        try await outbox.enqueue(notification, lease: lease, claimingFirstPageOf: pageSize, now: now)
    }

    public func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) async throws(StoreError) -> OutboxKeyHolder? {
        try await outbox.idempotentNotification(key: key, app: app, sender: sender)
    }

    public func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover? {
        try await outbox.takeDueNotification(app: app, lease: lease, now: now)
    }

    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError) -> OutboxClaim {
        try await outbox.claimPage(notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now, helping: helping)
    }

    public func takeRunningNotification(app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> OutboxNotification? {
        try await outbox.takeRunningNotification(app: app, owner: owner, now: now)
    }

    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?, rows: [OutboxRecordRow]
    ) async throws(StoreError) -> Bool {
        try await outbox.completePage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: retry, rows: rows)
    }

    public func recordedRows(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [StoredOutboxRow] {
        try await outbox.recordedRows(app: app, after: sequence, limit: limit)
    }

    @discardableResult
    public func removeRecordedRows(app: AppID, through sequence: Int64) async throws(StoreError) -> Int {
        try await outbox.removeRecordedRows(app: app, through: sequence)
    }

    public func appendRows(_ rows: [OutboxRecordRow], notificationID: String, page: Int, app: AppID) async throws(StoreError) {
        try await outbox.appendRows(rows, notificationID: notificationID, page: page, app: app)
    }

    public func completeLastPage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], owner: String,
        now: Timestamp, rows: [OutboxRecordRow], completion: CompletionEvents
    ) async throws(StoreError) -> OutboxLastPageRecord {
        try await outbox.completeLastPage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, owner: owner, now: now,
            rows: rows, completion: completion)
    }

    public func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) async throws(StoreError) {
        try await outbox.recordAnswers(notificationID: notificationID, app: app, answers: answers)
    }

    public func finish(
        notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents
    ) async throws(StoreError) -> NotificationRecord? {
        try await outbox.finish(notificationID: notificationID, app: app, owner: owner, now: now, completion: completion)
    }

    public func parkNotification(
        notificationID: String, app: AppID, owner: String, now: Timestamp
    ) async throws(StoreError) -> Timestamp? {
        try await outbox.parkNotification(notificationID: notificationID, app: app, owner: owner, now: now)
    }

    public func renewLeases(owner: String, until: Timestamp) async throws(StoreError) {
        try await outbox.renewLeases(owner: owner, until: until)
    }

    public func releaseLeases(owner: String, notificationID: String?) async throws(StoreError) {
        try await outbox.releaseLeases(owner: owner, notificationID: notificationID)
    }

    public func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        try await outbox.requestCancel(notificationID: notificationID, app: app, now: now)
    }

    public func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord? {
        try await outbox.notificationRecord(id: id, app: app)
    }

    public func failedTargets(
        notificationID: String, app: AppID, after: RegistrationID?, limit: Int
    ) async throws(StoreError) -> [TargetResult] {
        try await outbox.failedTargets(notificationID: notificationID, app: app, after: after, limit: limit)
    }

    public func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord] {
        try await outbox.notificationRecords(app: app, sender: sender, limit: limit)
    }

    public func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int {
        try await outbox.pruneNotifications(endedBefore: endedBefore)
    }

    public func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth {
        try await outbox.outboxDepth(now: now)
    }
}
