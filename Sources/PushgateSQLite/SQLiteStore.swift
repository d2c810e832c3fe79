import Dispatch
import Foundation
import Pushgate
import PushgateSQL
import Synchronization

/// Registrations in an SQLite file: WAL journal with full synchronisation (a write is on disk
/// when the call returns), a versioned schema migrated on open, and a tag index so that finding
/// the registrations of a tag is a B-tree lookup, not a scan.
///
/// Every SQLite call runs on the store's own thread (``SQLiteThread``), never on a Swift
/// concurrency thread; a group of outbox transactions runs there in one turn.
///
/// ```swift
/// let store = try await SQLiteStore.open(path: "pushgate.sqlite")
/// let id = try await store.createRegistrationID(app: .default, now: now)
/// ```
public final class SQLiteStore: RegistrationStore, DatabaseStore {
    /// How long a created but unused registration id stays valid, in seconds.
    public let reservationLifetime: Double
    /// The database file.
    public let path: String
    let connection: SQLiteConnection
    /// Where every SQLite call runs; a task that prefers it runs its statements there directly.
    let thread: SQLiteThread
    /// Held by each operation, and by an outbox transaction from its `BEGIN` to its end (its
    /// statements take turns on the thread with nothing else's in between).
    let gate = AsyncGate()
    /// Registration writes share transactions and fsyncs (``GroupCommit``).
    let groupCommit = GroupCommit()
    /// The outbox's write transactions, committed in groups.
    let transactionGroup = TransactionGroup()

    /// Transactions the group commit made, and the writes they carried.
    package var groupCommitCounts: (commits: Int, writes: Int) { groupCommit.committed }
    /// The outbox's transaction groups committed, and the transactions they carried.
    package var transactionGroupCounts: (commits: Int, transactions: Int) { transactionGroup.committed }
    /// `SELECT 1` in turn with the other operations, at most once per interval.
    public let health: HealthMonitor

    private init(
        connection: SQLiteConnection, thread: SQLiteThread, path: String, reservationLifetime: Double, clock: any PushgateClock
    ) {
        self.connection = connection
        self.thread = thread
        self.path = path
        self.reservationLifetime = reservationLifetime
        // The probe holds the connection, not the store: the store still closes with its last user.
        let gate = self.gate
        health = HealthMonitor(clock: clock) { await Self.ping(connection, on: thread, gate: gate) }
    }

    /// The thread ends with the store, once its work is done.
    deinit { thread.stop() }

    public var summary: String { "SQLite \(path)" }

    /// nil when the database answers `SELECT 1`; otherwise why not.
    private static func ping(_ connection: SQLiteConnection, on thread: SQLiteThread, gate: AsyncGate) async -> String? {
        await gate.acquire()
        defer { gate.release() }
        return await withCheckedContinuation { continuation in
            thread.execute {
                defer { connection.releaseStatements() }
                do throws(StoreError) {
                    try connection.execute("SELECT 1")
                    continuation.resume(returning: nil)
                } catch {
                    continuation.resume(returning: error.message)
                }
            }
        }
    }

    /// The connection closes with the store.
    public func close() async {}

    /// Opens (creating if needed) the database at `path` and migrates it to the current schema.
    /// `clock` ages the health monitor's findings.
    public static func open(
        path: String, reservationLifetime: Double = 86400, clock: any PushgateClock = SystemClock()
    ) async throws(StoreError) -> SQLiteStore {
        let thread = SQLiteThread(name: "pushgate.sqlite")
        let result: Result<SQLiteConnection, StoreError> = await withCheckedContinuation { continuation in
            thread.execute {
                do throws(StoreError) {
                    let connection = try SQLiteConnection(path: path)
                    try connection.execute(
                        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 16777216;"
                    )
                    try migrate(connection)
                    connection.releaseStatements()
                    continuation.resume(returning: .success(connection))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        let connection: SQLiteConnection
        do throws(StoreError) {
            connection = try result.get()
        } catch {
            thread.stop()
            throw error
        }
        return SQLiteStore(connection: connection, thread: thread, path: path, reservationLifetime: reservationLifetime, clock: clock)
    }

    /// The schema version of the open database.
    public func schemaVersion() async throws(StoreError) -> Int {
        try await run { connection throws(StoreError) in try connection.userVersion }
    }

    /// Runs `body` with the connection on the store's thread.
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> T) async throws(StoreError) -> T {
        await gate.acquire()
        defer { gate.release() }
        return try await onThread(body)
    }

    /// Runs `body` on the store's thread, the gate held by the caller: at once when the caller
    /// already runs there (a task that prefers the thread), otherwise as the thread's next work.
    /// `endsOperation`: the statements are released (and the log checkpointed when due) after
    /// it; within a transaction they are only reset.
    func onThread<T: Sendable>(
        endsOperation: Bool = true, _ body: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let connection = self.connection
        if thread.isCurrent { return try Self.perform(body, on: connection, endsOperation: endsOperation).get() }
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            thread.execute { continuation.resume(returning: Self.perform(body, on: connection, endsOperation: endsOperation)) }
        }
        return try result.get()
    }

    /// Runs `body` with `connection` (on the store's thread), then releases or resets its statements.
    private static func perform<T>(
        _ body: (SQLiteConnection) throws(StoreError) -> T, on connection: SQLiteConnection, endsOperation: Bool
    ) -> Result<T, StoreError> {
        defer { if endsOperation { connection.releaseStatements() } else { connection.resetStatementsInUse() } }
        do throws(StoreError) {
            return .success(try body(connection))
        } catch {
            return .failure(error)
        }
    }
}

extension SQLiteStore {
    /// Runs `sql` as it is (statements separated by `;`), outside any rule of the store: a test
    /// makes the database an older version wrote, to check a migration of it.
    package func executeUnchecked(_ sql: String) async throws(StoreError) {
        try await run { connection throws(StoreError) in try connection.execute(sql) }
    }
}
