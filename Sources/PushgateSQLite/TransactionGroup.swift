import Pushgate
import Synchronization

/// Group commit for the outbox's write transactions (``SQLiteOutboxDatabase/transaction(_:)``):
/// the transactions of concurrent sends (their enqueues, page claims, records and finishes) that
/// arrive while one is running go to disk together, in one `BEGIN … COMMIT` and one fsync. Each
/// runs whole, one after another, inside a savepoint of its own when it shares the transaction,
/// so one that fails is rolled back alone and the others commit; each caller is answered only
/// after the COMMIT that covers it returned, so nothing acknowledged is lost on a crash.
///
/// A transaction sees the ones before it in its group as committed work (they ran first, on the
/// same connection): the same as when each committed on its own, one after another.
///
/// Nothing waits for a group to fill: a transaction that finds none running starts one at once
/// (alone, it runs without a savepoint: one fsync, as before).
final class TransactionGroup: Sendable {
    /// A transaction's body, type-erased: runs it and keeps its value for its caller.
    struct Member: Sendable {
        let run: @Sendable (SQLiteOutboxSession) async -> Result<Void, StoreError>
    }

    /// Most transactions in one group (a bound on how long the store is held).
    static let maximumGroup = 64

    private let queue = CommitQueue<Member>(maximum: maximumGroup, commit: TransactionGroup.commit)

    init() {}

    var committed: (commits: Int, transactions: Int) {
        let counts = queue.committed
        return (counts.commits, counts.items)
    }

    /// Runs `body` in the next group's transaction; returns its value once that transaction committed.
    func perform<T: Sendable>(
        on store: SQLiteStore, _ body: @escaping @Sendable (SQLiteOutboxSession) async throws -> T
    ) async throws(StoreError) -> T {
        let value = ValueBox<T>()
        let member = Member { session in
            do {
                let answer = try await body(session)
                value.slot.withLock { $0 = answer }
                return .success(())
            } catch let error as StoreError {
                return .failure(error)
            } catch {
                return .failure(StoreError(.storage, String(describing: error)))
            }
        }
        try await queue.submit(member, on: store).get()
        guard let answer = value.slot.withLock({ $0.take() }) else { throw StoreError(.storage, "a transaction's value was lost") }
        return answer
    }

    /// One transaction for the group; each member's result in order. A failed COMMIT fails every
    /// member (none of them is on disk).
    private static func commit(_ group: [Member], on store: SQLiteStore) async -> [Result<Void, StoreError>] {
        await store.gate.acquire()
        defer { store.gate.release() }
        let shared = group.count > 1
        var results: [Result<Void, StoreError>] = []
        results.reserveCapacity(group.count)
        do throws(StoreError) {
            try await store.onThread(endsOperation: false) { connection throws(StoreError) in try connection.beginTransaction() }
            for member in group {
                if shared {
                    try await store.onThread(endsOperation: false) { connection throws(StoreError) in
                        try connection.execute("SAVEPOINT pushgate_outbox")
                    }
                }
                let result = await member.run(SQLiteOutboxSession(store: store))
                if shared {
                    try await store.onThread(endsOperation: false) { connection throws(StoreError) in
                        if case .failure = result { try connection.execute("ROLLBACK TO pushgate_outbox") }
                        try connection.execute("RELEASE pushgate_outbox")
                    }
                }
                results.append(result)
            }
            // Alone, a failed transaction is rolled back whole.
            let commit = shared || results.allSatisfy { if case .success = $0 { true } else { false } }
            try await store.onThread { connection throws(StoreError) in try connection.endTransaction(commit: commit) }
            return results
        } catch {
            _ = try? await store.onThread { connection throws(StoreError) in try connection.endTransaction(commit: false) }
            return group.map { _ in .failure(error) }
        }
    }
}

/// Where a transaction's value waits for its commit.
private final class ValueBox<T: Sendable>: Sendable {
    let slot = Mutex<T?>(nil)
}
