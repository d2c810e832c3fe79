import Pushgate
import Synchronization

/// What group commit shares, whatever is committed (``GroupCommit``'s registration writes,
/// ``TransactionGroup``'s outbox transactions): work that arrives while a commit runs waits for
/// the next one and goes to disk with the others waiting, at most `maximum` at a time; each
/// submitter is answered its own result once the commit that covers its work returned.
///
/// Nothing waits for a group to fill: work that finds no commit running starts one at once. The
/// submitter that does leads: a task of its own, on the store's thread (so that a group's
/// statements run there in one turn, with no hop per statement), commits groups until none is
/// waiting, then ends (nothing else holds it; every submitter waits for its own answer).
final class CommitQueue<Work: Sendable>: Sendable {
    /// Commits a group on `store`; one result per piece of work, in order.
    typealias Commit = @Sendable ([Work], SQLiteStore) async -> [Result<Void, StoreError>]

    private struct Pending: Sendable {
        let work: Work
        let answer: CheckedContinuation<Result<Void, StoreError>, Never>
    }

    private struct State {
        var pending: [Pending] = []
        var committing = false
    }

    let maximum: Int
    private let commit: Commit
    private let state = Mutex(State())
    /// Groups committed, and the pieces of work they carried (diagnostics and the benchmark).
    private let counts = Mutex((commits: 0, items: 0))

    init(maximum: Int, commit: @escaping Commit) {
        self.maximum = max(1, maximum)
        self.commit = commit
    }

    var committed: (commits: Int, items: Int) { counts.withLock { $0 } }

    /// `work` committed in the next group on `store`; its result once that group committed.
    func submit(_ work: Work, on store: SQLiteStore) async -> Result<Void, StoreError> {
        await withCheckedContinuation { continuation in
            let leads = state.withLock { state -> Bool in
                state.pending.append(Pending(work: work, answer: continuation))
                guard !state.committing else { return false }
                state.committing = true
                return true
            }
            // The leader: it ends itself once no work is waiting (``commitUntilIdle(_:)``).
            if leads { Task(executorPreference: store.thread) { await self.commitUntilIdle(store) } }
        }
    }

    private func commitUntilIdle(_ store: SQLiteStore) async {
        while true {
            let group = state.withLock { state -> [Pending] in
                let group = Array(state.pending.prefix(maximum))
                state.pending.removeFirst(group.count)
                if group.isEmpty { state.committing = false }
                return group
            }
            guard !group.isEmpty else { return }
            let results = await commit(group.map(\.work), store)
            counts.withLock {
                $0.commits += 1
                $0.items += group.count
            }
            for (pending, result) in zip(group, results) { pending.answer.resume(returning: result) }
        }
    }
}
