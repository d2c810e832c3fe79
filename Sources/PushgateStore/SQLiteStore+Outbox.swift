import Pushgate
import PushgateSQL

/// The outbox in the same SQLite file as the registrations: the SQL stores' one outbox
/// (``SQLOutbox``) on this connection. A transaction holds the store's gate from its `BEGIN` to
/// its end, so that its statements, each a turn on the connection's queue, take turns with no
/// other operation's.
extension SQLiteStore: OutboxStore {
    var outbox: SQLOutbox<SQLiteOutboxDatabase> { SQLOutbox(SQLiteOutboxDatabase(store: self)) }

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
}

/// The SQLite connection as the SQL outbox's database.
struct SQLiteOutboxDatabase: SQLDatabase {
    let store: SQLiteStore

    var dialect: SQLDialect { .sqlite }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T) async throws(StoreError) -> T {
        try await run(writing: true, body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T) async throws(StoreError) -> T {
        try await run(writing: false, body)
    }

    private func run<T: Sendable>(
        writing: Bool, _ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T
    ) async throws(StoreError) -> T {
        await store.gate.acquire()
        defer { store.gate.release() }
        try await store.onQueue(endsOperation: false) { connection throws(StoreError) in
            if writing { try connection.beginTransaction() } else { try connection.beginReading() }
        }
        let result: Result<T, StoreError>
        do {
            result = .success(try await body(SQLiteOutboxSession(store: store)))
        } catch let error as StoreError {
            result = .failure(error)
        } catch {
            result = .failure(StoreError(.storage, String(describing: error)))
        }
        switch result {
        case .success(let value):
            try await store.onQueue { connection throws(StoreError) in try connection.endTransaction(commit: true) }
            return value
        case .failure(let error):
            _ = try? await store.onQueue { connection throws(StoreError) in try connection.endTransaction(commit: false) }
            throw error
        }
    }
}

/// A statement at a time on the connection's queue, inside a transaction.
struct SQLiteOutboxSession: SQLSession {
    let store: SQLiteStore

    func rows(_ sql: String, _ values: [SQLValue]) async throws -> [SQLValuesRow] {
        try await store.onQueue(endsOperation: false) { connection throws(StoreError) in
            let statement = try connection.prepare(sql).bind(values)
            var rows: [SQLValuesRow] = []
            while try statement.step() { rows.append(statement.values()) }
            return rows
        }
    }

    func plan(_ audience: Audience, selection: PlatformSelection, app: AppID, now: Timestamp) async throws -> TagQuery {
        try await store.onQueue(endsOperation: false) { connection throws(StoreError) in
            try TagQuery(expression: audience.expression, platforms: selection, app: app, now: now, connection: connection)
        }
    }

    func targets(_ query: TagQuery, after: RegistrationID?, limit: Int) async throws -> [DispatchTarget] {
        try await store.onQueue(endsOperation: false) { connection throws(StoreError) in
            try query.targets(after: after?.rawValue ?? "", limit: limit, connection: connection)
        }
    }

    /// One instance per file: nobody else to tell.
    func announceOutboxWork(_ event: String) async throws {}
}
