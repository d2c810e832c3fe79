import PostgresNIO
import Pushgate
import PushgateSQL

/// The outbox in PostgreSQL: the SQL stores' one outbox (``SQLOutbox``) on this database's
/// transactions. Several instances share it:
/// - a due notification is taken with `FOR UPDATE SKIP LOCKED` (instances never queue behind
///   each other's row locks, and two never take the same one);
/// - every transaction that changes a notification's pages locks its notification's row first,
///   so claims of one notification are serialised while those of different notifications run
///   side by side, and no two transactions deadlock;
/// - an enqueue, a release and a cancel notify `pushgate_outbox` when they commit, waking idle
///   instances.
extension PostgresStore: OutboxStore, DatabaseStore {
    var outbox: SQLOutbox<PostgresOutboxDatabase> { SQLOutbox(PostgresOutboxDatabase(store: self)) }

    public func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) {
        try await outbox.enqueue(notification, lease: lease)
    }

    public func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover? {
        try await outbox.takeDueNotification(app: app, lease: lease, now: now)
    }

    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxClaim {
        try await outbox.claimPage(notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now)
    }

    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?
    ) async throws(StoreError) -> Bool {
        try await outbox.completePage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: retry)
    }

    public func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        try await outbox.finish(notificationID: notificationID, app: app, owner: owner, now: now)
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

    /// How many pages are claimed and not yet recorded (each at most a page size of targets): a
    /// dead driver's in-flight window, for tests.
    package func unfinishedPages(notificationID: String, app: AppID) async throws(StoreError) -> Int {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                "SELECT count(*) FROM outbox_pages WHERE app = \(app.rawValue) AND notification_id = \(notificationID) AND NOT done",
                logger: logger
            ).all(Int.self).first ?? 0
        }
    }
}

/// PostgreSQL as the SQL outbox's database: its transactions (retried after a serialization failure or a deadlock).
struct PostgresOutboxDatabase: SQLDatabase {
    let store: PostgresStore

    var dialect: SQLDialect { .postgres }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresOutboxSession) async throws -> T) async throws(StoreError) -> T {
        let logger = store.logger
        return try await store.transaction { connection in try await body(PostgresOutboxSession(connection: connection, logger: logger)) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresOutboxSession) async throws -> T) async throws(StoreError) -> T {
        let logger = store.logger
        return try await store.perform { connection in try await body(PostgresOutboxSession(connection: connection, logger: logger)) }
    }
}

/// Statements on one connection, inside a transaction.
struct PostgresOutboxSession: SQLSession {
    let connection: PostgresConnection
    let logger: Logger

    func rows(_ sql: String, _ values: [SQLValue]) async throws -> [PostgresRowReader] {
        try await connection.query(dynamicQuery(sql, values), logger: logger).rows()
    }

    func plan(_ audience: Audience, selection: PlatformSelection, app: AppID, now: Timestamp) async throws -> TagQuery {
        try await PostgresStore.plan(audience.expression, platforms: selection, app: app, now: now, connection: connection, logger: logger)
    }

    func targets(_ query: TagQuery, after: RegistrationID?, limit: Int) async throws -> [DispatchTarget] {
        try await PostgresStore.targets(query, after: after?.rawValue ?? "", limit: limit, connection: connection, logger: logger)
    }

    func announceOutboxWork(_ event: String) async throws {
        try await connection.query("SELECT pg_notify(\(PostgresStore.outboxChannel), \(event))", logger: logger)
    }
}
