import Pushgate
import Synchronization

/// Group commit: writes that arrive while a commit is on disk wait for the next one and then go
/// to disk together, in one transaction and one fsync. Each write runs inside a savepoint of its
/// own, so one that fails (an expired reservation, a full reservation list) is rolled back alone
/// and the others commit; each caller is answered only after the COMMIT that covers its write
/// returned, so nothing acknowledged is lost on a crash.
///
/// Nothing waits for a batch to fill: a write that finds no commit running starts one at once,
/// so one writer alone pays one fsync, as before, and N concurrent writers share about one each.
final class GroupCommit: Sendable {
    /// A write, run on the store's queue inside the batch's transaction.
    typealias Write = @Sendable (SQLiteConnection) throws(StoreError) -> Void

    private struct Pending: Sendable {
        let write: Write
        let answer: CheckedContinuation<Result<Void, StoreError>, Never>
    }

    private struct State {
        var pending: [Pending] = []
        var committing = false
    }

    /// Most writes in one transaction (a bound on how long the store is held).
    static let maximumBatch = 512

    private let state = Mutex(State())
    /// Transactions committed, and writes they carried (diagnostics and the benchmark).
    private let counts = Mutex((commits: 0, writes: 0))

    init() {}

    var committed: (commits: Int, writes: Int) { counts.withLock { $0 } }

    /// Runs `write` in the next group's transaction; returns once that transaction committed.
    func perform(on store: SQLiteStore, _ write: @escaping Write) async throws(StoreError) {
        let result: Result<Void, StoreError> = await withCheckedContinuation { continuation in
            let leads = state.withLock { state -> Bool in
                state.pending.append(Pending(write: write, answer: continuation))
                guard !state.committing else { return false }
                state.committing = true
                return true
            }
            if leads { Task { await self.commitUntilIdle(store) } }
        }
        try result.get()
    }

    /// Commits batches until no write is waiting.
    private func commitUntilIdle(_ store: SQLiteStore) async {
        while true {
            let batch = state.withLock { state -> [Pending] in
                let batch = Array(state.pending.prefix(Self.maximumBatch))
                state.pending.removeFirst(batch.count)
                if batch.isEmpty { state.committing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let results = await commit(batch.map(\.write), on: store)
            counts.withLock {
                $0.commits += 1
                $0.writes += batch.count
            }
            for (pending, result) in zip(batch, results) { pending.answer.resume(returning: result) }
        }
    }

    /// One transaction: each write in a savepoint; the results in order. A failed COMMIT fails
    /// every write of the batch (none of them is on disk).
    private func commit(_ writes: [Write], on store: SQLiteStore) async -> [Result<Void, StoreError>] {
        await store.gate.acquire()
        defer { store.gate.release() }
        do throws(StoreError) {
            return try await store.onQueue { connection throws(StoreError) -> [Result<Void, StoreError>] in
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
