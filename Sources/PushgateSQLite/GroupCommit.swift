import Pushgate

/// Group commit: writes that arrive while a commit is on disk wait for the next one and then go
/// to disk together, in one transaction and one fsync. Each write runs inside a savepoint of its
/// own, so one that fails (an expired reservation, a full reservation list) is rolled back alone
/// and the others commit; each caller is answered only after the COMMIT that covers its write
/// returned, so nothing acknowledged is lost on a crash.
///
/// Nothing waits for a batch to fill: a write that finds no commit running starts one at once,
/// so one writer alone pays one fsync, as before, and N concurrent writers share about one each.
final class GroupCommit: Sendable {
    /// A write, run on the store's thread inside the batch's transaction.
    typealias Write = @Sendable (SQLiteConnection) throws(StoreError) -> Void

    /// Most writes in one transaction (a bound on how long the store is held).
    static let maximumBatch = 512

    private let queue = CommitQueue<Write>(maximum: maximumBatch, commit: GroupCommit.commit)

    init() {}

    var committed: (commits: Int, writes: Int) {
        let counts = queue.committed
        return (counts.commits, counts.items)
    }

    /// Runs `write` in the next group's transaction; returns once that transaction committed.
    func perform(on store: SQLiteStore, _ write: @escaping Write) async throws(StoreError) {
        try await queue.submit(write, on: store).get()
    }

    /// One transaction: each write in a savepoint; the results in order. A failed COMMIT fails
    /// every write of the batch (none of them is on disk).
    private static func commit(_ writes: [Write], on store: SQLiteStore) async -> [Result<Void, StoreError>] {
        await store.gate.acquire()
        defer { store.gate.release() }
        do throws(StoreError) {
            return try await store.onThread { connection throws(StoreError) -> [Result<Void, StoreError>] in
                try connection.beginTransaction()
                var results: [Result<Void, StoreError>] = []
                results.reserveCapacity(writes.count)
                for write in writes {
                    do throws(StoreError) {
                        try connection.execute("SAVEPOINT pushgate_write")
                        try write(connection)
                        try connection.execute("RELEASE pushgate_write")
                        results.append(.success(()))
                    } catch {
                        try? connection.execute("ROLLBACK TO pushgate_write")
                        try? connection.execute("RELEASE pushgate_write")
                        results.append(.failure(error))
                    }
                }
                try connection.endTransaction(commit: true)
                return results
            }
        } catch {
            return Array(repeating: .failure(error), count: writes.count)
        }
    }
}
