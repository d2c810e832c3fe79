internal import CSQLite
import Foundation
import Pushgate
import PushgateSQL

#if canImport(Glibc)
    import Glibc
#endif

/// One SQLite database connection with a prepared-statement cache.
///
/// Invariant (why `@unchecked Sendable`): it is used only on its owner's thread
/// (``SQLiteStore``); nothing else holds it.
final class SQLiteConnection: @unchecked Sendable {
    private let database: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]
    /// Cached statements handed out since the last ``releaseStatements()``.
    private var inUse: [SQLiteStatement] = []
    /// Frames in the write-ahead log after the last commit, as SQLite's WAL hook reports them.
    private var walFrames: Int32 = 0
    /// A checkpoint runs once the log holds this many frames (SQLite's own default).
    static let checkpointFrames: Int32 = 1000
    /// The page cache of a connection, in KiB: the registrations, their tag index and the
    /// outbox's hot pages stay in memory instead of being read again from the file (SQLite's
    /// default is 2 MiB; its pages are allocated as they are used, not up front).
    static let cacheKiB = 65_536

    /// SQLite's process-wide memory settings, made before the first connection opens.
    private static let configured: Void = pushgate_sqlite_configure()

    init(path: String) throws(StoreError) {
        // Registrations hold device handles and secure messages: readable by the owner only.
        // SQLite gives the -wal and -shm files the mode of the database file.
        let descriptor = Glibc.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if descriptor >= 0 { Glibc.close(descriptor) }
        // The outbox's statements use RETURNING (3.35) and aggregate FILTER clauses (3.30).
        guard sqlite3_libversion_number() >= 3_035_000 else {
            throw StoreError(.storage, "SQLite \(String(cString: sqlite3_libversion())) is too old: Pushgate needs 3.35 or later")
        }
        _ = Self.configured
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let handle { sqlite3_close_v2(handle) }
            throw StoreError(.storage, "cannot open SQLite database \(path): \(message)")
        }
        database = handle
        sqlite3_busy_timeout(database, 5000)
        sqlite3_exec(database, "PRAGMA cache_size = -\(Self.cacheKiB)", nil, nil, nil)
        // SQLite's automatic checkpoint runs inside the committing statement, and fails there
        // (SQLITE_LOCKED, silently) while another statement of this connection is still on a
        // row: the log then grows without bound. The hook only records the log's size; the
        // checkpoint runs in releaseStatements(), when no statement is active.
        sqlite3_wal_hook(
            database,
            { context, _, _, frames in
                // The hook runs inside sqlite3_step, on the store's thread (the invariant above).
                Unmanaged<SQLiteConnection>.fromOpaque(context!).takeUnretainedValue().walFrames = frames
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(database)
    }

    func error(_ what: String) -> StoreError {
        StoreError(.storage, "\(what): \(String(cString: sqlite3_errmsg(database)))")
    }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws(StoreError) {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(database, sql, nil, nil, &message) != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(message)
            throw StoreError(.storage, "SQL failed: \(text)")
        }
    }

    /// A prepared statement for `sql`, reset and cleared, from the cache.
    func prepare(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            inUse.append(cached)
            return cached
        }
        var handle: OpaquePointer?
        guard sqlite3_prepare_v2(database, sql, -1, &handle, nil) == SQLITE_OK, let handle else {
            throw error("cannot prepare \(sql.prefix(60))")
        }
        let statement = SQLiteStatement(handle: handle, connection: self)
        // Statements of many parameters are one-offs (a page's failures as one multi-row
        // insert): cached, they would crowd out the statements used on every call.
        if statements.count < 64, sqlite3_bind_parameter_count(handle) <= 32 {
            statements[sql] = statement
            inUse.append(statement)
        }
        return statement
    }

    /// Resets every cached statement used since the last call. A statement left on a row keeps
    /// its read transaction open: this connection would go on reading an old snapshot and could
    /// no longer write once another connection (another process) has written. Call after every
    /// operation.
    func releaseStatements() {
        resetStatements()
        inUse.removeAll(keepingCapacity: true)
        checkpointIfDue()
    }

    /// Resets the statements handed out since the last ``releaseStatements()``: none is left on a row.
    private func resetStatements() {
        for statement in inUse { statement.reset() }
    }

    /// Resets and forgets the statements handed out, without a checkpoint: between the
    /// statements of a transaction that spans several calls.
    func resetStatementsInUse() {
        resetStatements()
        inUse.removeAll(keepingCapacity: true)
    }

    /// Begins a transaction that ends with ``endTransaction(commit:)``, several calls later.
    func beginTransaction() throws(StoreError) { try execute("BEGIN IMMEDIATE") }

    /// Commits (or rolls back) the transaction ``beginTransaction()`` began. A COMMIT that
    /// fails is rolled back: the connection never stays inside a transaction.
    func endTransaction(commit: Bool) throws(StoreError) {
        resetStatements()
        guard commit else {
            try? execute("ROLLBACK")
            return
        }
        do { try execute("COMMIT") } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Begins a read transaction (one snapshot for several statements, no write lock).
    func beginReading() throws(StoreError) { try execute("BEGIN DEFERRED") }

    /// Copies the write-ahead log into the database once it has grown past
    /// ``checkpointFrames``, so that the next write starts the log over (its file is then cut to
    /// `journal_size_limit`). Passive: it never waits for, or blocks, another connection.
    ///
    /// It runs here, on the writer's thread, between operations, and so holds up the writes behind
    /// it. On a connection of its own beside the writes (tried), a checkpoint never completes
    /// while they go on (each pass ends behind the newest frames), the log is never started over,
    /// and it grew to 67 MB in `SQLiteWriteAheadLogTests`.
    private func checkpointIfDue() {
        guard walFrames >= Self.checkpointFrames else { return }
        walFrames = 0
        sqlite3_wal_checkpoint_v2(database, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }

    /// Runs `body` in an immediate transaction: committed if it returns, rolled back if it throws.
    /// Its statements are reset first: a statement still on a row would keep the connection's
    /// read transaction open past the commit.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            resetStatements()
            try execute("COMMIT")
            return value
        } catch {
            resetStatements()
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows the last INSERT, UPDATE or DELETE changed (an `ON CONFLICT DO NOTHING` that found
    /// the row: 0).
    var changes: Int { Int(sqlite3_changes(database)) }

    var userVersion: Int {
        get throws(StoreError) {
            let statement = try prepare("PRAGMA user_version")
            guard try statement.step() else { return 0 }
            return Int(statement.int64(0))
        }
    }
}

/// A prepared statement. Used only through its connection, on the same thread.
final class SQLiteStatement: @unchecked Sendable {
    private let handle: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds `values` to parameters 1…n in order.
    @discardableResult
    func bind(_ values: [SQLValue]) throws(StoreError) -> SQLiteStatement {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let number): code = sqlite3_bind_int64(handle, index, number)
            case .real(let number): code = sqlite3_bind_double(handle, index, number)
            case .bool(let flag): code = sqlite3_bind_int64(handle, index, flag ? 1 : 0)
            case .text(let text):
                code = text.withCString { pushgate_sqlite_bind_text(handle, index, $0, Int32(text.utf8.count)) }
            }
            if code != SQLITE_OK { throw connection.error("cannot bind parameter \(index)") }
        }
        return self
    }

    /// Advances to the next row; false when done.
    func step() throws(StoreError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error("statement failed")
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(StoreError) {
        while try step() {}
    }

    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: pointer)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// Virtual-machine steps this statement has run since the last call (the count is then
    /// zeroed): SQLite's own count of the work a query did, independent of the machine's speed.
    func takeVirtualMachineSteps() -> Int { Int(sqlite3_stmt_status(handle, Int32(SQLITE_STMTSTATUS_VM_STEP), 1)) }

    func double(_ column: Int32) -> Double? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_double(handle, column)
    }
}

/// The current row of a statement as values, to be read after the statement moved on.
extension SQLiteStatement {
    func values() -> SQLValuesRow {
        SQLValuesRow(
            (0..<sqlite3_column_count(handle)).map { column -> SQLValue in
                switch sqlite3_column_type(handle, column) {
                case SQLITE_NULL: .null
                case SQLITE_INTEGER: .integer(int64(column))
                case SQLITE_FLOAT: .real(sqlite3_column_double(handle, column))
                default: text(column).map(SQLValue.text) ?? .null
                }
            })
    }
}
