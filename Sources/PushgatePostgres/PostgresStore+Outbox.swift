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
extension PostgresStore: SQLOutboxStore, DatabaseStore {
    package var outbox: SQLOutbox<PostgresOutboxDatabase> { SQLOutbox(PostgresOutboxDatabase(store: self)) }

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
package struct PostgresOutboxDatabase: SQLDatabase {
    let store: PostgresStore

    package var dialect: SQLDialect { .postgres }

    package func transaction<T: Sendable>(
        _ body: @escaping @Sendable (PostgresOutboxSession) async throws -> T
    ) async throws(StoreError) -> T {
        let (logger, prepared) = (store.logger, store.preparedNames)
        return try await store.transaction { connection in
            try await body(PostgresOutboxSession(connection: connection, logger: logger, prepared: prepared))
        }
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (PostgresOutboxSession) async throws -> T) async throws(StoreError) -> T {
        try await statementByStatement(body)
    }

    /// On one connection, without `BEGIN`: each statement commits by itself.
    package func statementByStatement<T: Sendable>(
        _ body: @escaping @Sendable (PostgresOutboxSession) async throws -> T
    ) async throws(StoreError) -> T {
        let (logger, prepared) = (store.logger, store.preparedNames)
        return try await store.perform { connection in
            try await body(PostgresOutboxSession(connection: connection, logger: logger, prepared: prepared))
        }
    }
}

/// Statements on one connection, inside a transaction.
package struct PostgresOutboxSession: SQLSession {
    let connection: PostgresConnection
    let logger: Logger
    /// Statements as named prepared statements under these names (``PreparedSQL``); nil: unnamed.
    let prepared: PreparedSQLNames?

    package func rows(_ sql: String, _ values: [SQLValue]) async throws -> [PostgresRowReader] {
        try await connection.rows(sql, values, prepared: prepared, logger: logger).map(PostgresRowReader.init)
    }

    package func plan(_ selector: RegistrationSelector, selection: PlatformSelection, app: AppID, now: Timestamp) async throws -> TagQuery {
        try await PostgresStore.plan(selector, platforms: selection, app: app, now: now, connection: connection, logger: logger)
    }

    package func targets(_ query: TagQuery, after: RegistrationID?, limit: Int) async throws -> [DispatchTarget] {
        try await PostgresStore.targets(
            query, after: after?.rawValue ?? "", limit: limit, prepared: prepared, connection: connection, logger: logger)
    }

    package func announceOutboxWork(_ event: String) async throws {
        try await connection.query("SELECT pg_notify(\(PostgresStore.outboxChannel), \(event))", logger: logger)
    }
}
