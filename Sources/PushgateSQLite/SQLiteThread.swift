import Dispatch
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

    /// The thread's stack, as the platform's default (8 MiB on Linux): the jobs of the tasks that
    /// prefer this thread run their synchronous frames here. Only the pages used count in memory.
    static let stackBytes = 8 << 20

    /// Starts the thread, named `name`: a plain POSIX thread, detached.
    init(name: String) {
        self.name = String(name.utf8.prefix(15))!
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, Self.stackBytes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let started = pthread_create(
            &thread, &attributes,
            { context in
                Unmanaged<SQLiteThread>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, Unmanaged.passRetained(self).toOpaque())
        precondition(started == 0, "pthread_create failed (\(started)): SQLite has no thread to run on")
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

    /// Names the calling thread as Linux keeps it (`comm`, what `top -H` and `perf` show):
    /// `pthread_setname_np` is not visible to Swift through Glibc, its file is.
    private static func nameCurrentThread(_ name: String) {
        let file = open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        defer { close(file) }
        _ = Array(name.utf8).withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
    }

    private func run() {
        identity.store(UInt(pthread_self()), ordering: .releasing)
        Self.nameCurrentThread(name)
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
