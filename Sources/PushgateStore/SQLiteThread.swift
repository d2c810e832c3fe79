import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The thread an SQLite store runs every call on: a dedicated thread, never one of the
/// cooperative pool's (a disk flush would stall them), and a `TaskExecutor`, so that a task that
/// prefers it (`Task(executorPreference:)`) runs its nonisolated code here. A whole outbox
/// transaction (its `BEGIN`, every statement, its `COMMIT`) then runs in one turn of this thread,
/// where it used to take a hop to the store's queue and back per statement.
///
/// It runs two kinds of work in the order they arrive: the jobs of the tasks that prefer it, and
/// closures (``execute(_:)``, for callers on other threads). It sleeps when there is none, and
/// ends once it is stopped and its work is done.
final class SQLiteThread: TaskExecutor, Sendable {
    private enum Work: Sendable {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    private struct State: Sendable {
        var work: [Work] = []
        var sleeping = false
        var stopping = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    /// The thread's `pthread_t` once it runs (0 before).
    private let identity = Atomic<UInt>(0)
    /// The thread's name, as `top -H` and `perf` show it (at most 15 bytes).
    let name: String

    /// Starts the thread, named `name`.
    init(name: String) {
        self.name = String(name.utf8.prefix(15))!
        Thread { [self] in run() }.start()
    }

    /// Whether the caller runs on this thread (then it may call SQLite directly).
    var isCurrent: Bool { identity.load(ordering: .acquiring) == UInt(pthread_self()) }

    func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    /// Runs `work` on the thread, after the work already waiting.
    func execute(_ work: @escaping @Sendable () -> Void) {
        submit(.closure(work))
    }

    /// The thread ends once the work waiting is done.
    func stop() {
        let wakes = state.withLock { state -> Bool in
            state.stopping = true
            return state.sleeping
        }
        if wakes { wake.signal() }
    }

    private func submit(_ work: Work) {
        let wakes = state.withLock { state -> Bool in
            state.work.append(work)
            guard state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if wakes { wake.signal() }
    }

    private func run() {
        identity.store(UInt(pthread_self()), ordering: .releasing)
        Thread.current.name = name
        var running: [Work] = []
        while true {
            let stopped = state.withLock { state -> Bool in
                guard state.work.isEmpty else {
                    swap(&running, &state.work)
                    return false
                }
                if state.stopping { return true }
                state.sleeping = true
                return false
            }
            if stopped { return }
            if running.isEmpty {
                wake.wait()
                continue
            }
            for work in running {
                switch work {
                case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                case .closure(let closure): closure()
                }
            }
            running.removeAll(keepingCapacity: true)
        }
    }
}
