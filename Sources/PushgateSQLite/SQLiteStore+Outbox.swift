import Pushgate
import PushgateSQL

/// The outbox in the same SQLite file as the registrations: the SQL stores' one outbox
/// (``SQLOutbox``) on this connection. A transaction (or a group of them, ``TransactionGroup``)
/// holds the store's gate from its `BEGIN` to its end, so that its statements take turns with no
/// other operation's; it runs on the store's thread, its statements called there directly.
extension SQLiteStore: SQLOutboxStore {
    package var outbox: SQLOutbox<SQLiteOutboxDatabase> { SQLOutbox(SQLiteOutboxDatabase(store: self)) }
}

/// The SQLite connection as the SQL outbox's database.
package struct SQLiteOutboxDatabase: SQLDatabase {
    let store: SQLiteStore

    package var dialect: SQLDialect { .sqlite }

    /// Concurrent transactions share one commit and one fsync (``TransactionGroup``).
    package func transaction<T: Sendable>(_ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T) async throws(StoreError) -> T
    {
        try await store.transactionGroup.perform(on: store, body)
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T) async throws(StoreError) -> T {
        try await run(writing: false, body)
    }

    /// On the store's thread from the gate to the end: no hop per statement.
    private func run<T: Sendable>(
        writing: Bool, _ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T
    ) async throws(StoreError) -> T {
        try await withTaskExecutorPreference(store.thread) { () async throws(StoreError) -> T in
            try await runHere(writing: writing, body)
        }
    }

    private func runHere<T: Sendable>(
        writing: Bool, _ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T
    ) async throws(StoreError) -> T {
        await store.gate.acquire()
        defer { store.gate.release() }
        try await store.onThread(endsOperation: false) { connection throws(StoreError) in
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
            try await store.onThread { connection throws(StoreError) in try connection.endTransaction(commit: true) }
            return value
        case .failure(let error):
            _ = try? await store.onThread { connection throws(StoreError) in try connection.endTransaction(commit: false) }
            throw error
        }
    }
}

/// A statement at a time on the store's thread, inside a transaction.
package struct SQLiteOutboxSession: SQLSession {
    let store: SQLiteStore

    package func rows(_ sql: String, _ values: [SQLValue]) async throws -> [SQLValuesRow] {
        try await store.onThread(endsOperation: false) { connection throws(StoreError) in
            let statement = try connection.prepare(sql).bind(values)
            var rows: [SQLValuesRow] = []
            while try statement.step() { rows.append(statement.values()) }
            return rows
        }
    }

    package func plan(_ selector: RegistrationSelector, selection: PlatformSelection, app: AppID, now: Timestamp) async throws -> TagQuery {
        try await store.onThread(endsOperation: false) { connection throws(StoreError) in
            try TagQuery(selector: selector, platforms: selection, app: app, now: now, connection: connection)
        }
    }

    package func targets(_ query: TagQuery, after: RegistrationID?, limit: Int) async throws -> [DispatchTarget] {
        try await store.onThread(endsOperation: false) { connection throws(StoreError) in
            try query.targets(after: after?.rawValue ?? "", limit: limit, connection: connection)
        }
    }

    /// One instance per file: nobody else to tell.
    package func announceOutboxWork(_ event: String) async throws {}
}
