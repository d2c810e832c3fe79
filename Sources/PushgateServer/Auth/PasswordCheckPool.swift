import NIOCore
import NIOPosix
import Synchronization

/// The threads password checks run on: a few of their own, so that PBKDF2 (tens of milliseconds
/// a check, by design) never holds the threads that serve requests — Swift's cooperative pool,
/// NIO's event loops — and a stream of wrong logins cannot slow `/healthz` or a send.
///
/// At most ``capacity`` checks are admitted at once, running or queued, and at most
/// ``capacityPerName`` of one user name (the ``Authenticator`` counts them); past that a login is
/// answered 503 with `Retry-After`. The threads start with the first check and stop when the pool
/// is released.
public final class PasswordCheckPool: Sendable {
    /// Threads that run checks. Default: half the cores, 1 to 4.
    public let threadCount: Int
    /// Checks admitted at once, running or waiting for a thread. Default: 8 per thread.
    public let capacity: Int
    /// Checks of one user name admitted at once, so that guesses at one name never fill the pool.
    /// Default: a quarter of ``capacity``, at least 1.
    public let capacityPerName: Int
    /// What a login that finds the pool full is told to wait, in seconds.
    public static let retryAfterSeconds = 1
    private let threads = Mutex<NIOThreadPool?>(nil)

    public init(threadCount: Int = max(1, min(4, System.coreCount / 2)), capacity: Int? = nil, capacityPerName: Int? = nil) {
        self.threadCount = max(1, threadCount)
        self.capacity = max(1, capacity ?? 8 * self.threadCount)
        self.capacityPerName = min(self.capacity, max(1, capacityPerName ?? self.capacity / 4))
    }

    /// Runs `check` on one of the pool's threads; nil when the pool has stopped.
    func run<Outcome: Sendable>(_ check: @escaping @Sendable () -> Outcome) async -> Outcome? {
        let pool = threads.withLock { pool in
            if let pool { return pool }
            let started = NIOThreadPool(numberOfThreads: threadCount)
            started.start()
            pool = started
            return started
        }
        return try? await pool.runIfActive(check)
    }

    deinit {
        // Checks still queued are dropped; one running finishes on its thread, which then ends.
        threads.withLock { $0 }?.shutdownGracefully { _ in }
    }
}
