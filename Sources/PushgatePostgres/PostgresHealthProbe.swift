import Logging
import PostgresNIO
import Pushgate
import Synchronization

/// The PostgreSQL store's health probe: `SELECT 1` on a connection of its own, outside the pool
/// (the pool being busy is not the database being down), kept open from one probe to the next so
/// that a probe costs no login. A kept connection that fails (the server restarted, an idle
/// timeout dropped it) is replaced at once within the same probe; only a new connection failing
/// too finds the database down.
///
/// ``HealthMonitor`` runs one probe at a time, so the kept connection is never shared.
final class PostgresHealthProbe: Sendable {
    private let configuration: PostgresConnection.Configuration
    private let timeout: Duration
    private let logger: Logger
    private struct State {
        var kept: PostgresConnection?
        var checks = 0
        var opened = 0
        var closed = false
    }
    private let state = Mutex(State())

    /// `timeout` bounds each step on the client's side too (a server that hangs, not refuses).
    init(configuration: PostgresConnection.Configuration, timeout: Duration, logger: Logger) {
        self.configuration = configuration
        self.timeout = timeout
        self.logger = logger
    }

    deinit {
        // A store let go without close(): the kept connection closes now, kept alive until it has.
        if let kept = state.withLock({ $0.kept }) { kept.close().whenComplete { _ in withExtendedLifetime(kept) {} } }
    }

    /// Probes made, and connections opened for them (logins), since the store opened.
    var counts: (checks: Int, connectionsOpened: Int) { state.withLock { ($0.checks, $0.opened) } }

    /// nil when the database answers; otherwise why not.
    func check() async -> String? {
        let kept = state.withLock { state in
            state.checks += 1
            return state.kept
        }
        if let kept {
            do {
                try await ping(kept)
                return nil
            } catch {
                logger.debug("the health connection failed; probing on a new one", metadata: ["error": "\(String(reflecting: error))"])
                await discard(kept)
            }
        }
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            let keep = state.withLock { state -> Bool in
                state.opened += 1
                guard !state.closed else { return false }
                state.kept = connection
                return true
            }
            guard keep else {
                try? await connection.close()
                return "the store is closed"
            }
            try await ping(connection)
            return nil
        } catch {
            return String(PostgresStore.storeError(error).message.trimmingPrefix("the database is unavailable: "))
        }
    }

    /// Closes the kept connection; later probes find the store closed.
    func close() async {
        let kept = state.withLock { state in
            state.closed = true
            defer { state.kept = nil }
            return state.kept
        }
        try? await kept?.close()
    }

    /// `SELECT 1`, failing after `timeout` even when the server never answers (the connection is
    /// closed then). A closed connection is not asked: postgres-nio never answers a query written
    /// to one; should it close in between, the probe still ends at the timeout, leaving that query
    /// behind.
    private func ping(_ connection: PostgresConnection) async throws {
        guard !connection.isClosed else {
            throw StoreError(.unavailable, "the database is unavailable: the health connection is closed")
        }
        let (timeout, logger) = (self.timeout, self.logger)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let answer = FirstAnswer(continuation)
            // The deadline: ends at `timeout`, or earlier when the query's task below cancels it.
            let deadline = Task {
                try await Task.sleep(for: timeout)
                guard answer.give(.failure(StoreError(.unavailable, "the database is unavailable: no answer within \(timeout)"))) else {
                    return
                }
                try? await connection.close()
            }
            // The query: not a child, so that the probe need not wait for it past the deadline. It
            // ends with the query's answer or failure (closing the connection at the deadline fails
            // it); only in the case named above, a query on a connection closed in between, nothing
            // ends it, and it holds no more than that connection.
            Task {
                do {
                    _ = try await connection.query("SELECT 1", logger: logger).collect()
                    answer.give(.success(()))
                } catch {
                    answer.give(.failure(error))
                }
                deadline.cancel()
            }
        }
    }

    /// Resumes a continuation with the first of the answers given.
    private final class FirstAnswer: Sendable {
        private let continuation: Mutex<CheckedContinuation<Void, any Error>?>

        init(_ continuation: CheckedContinuation<Void, any Error>) { self.continuation = Mutex(continuation) }

        /// Whether this was the first.
        @discardableResult
        func give(_ result: Result<Void, any Error>) -> Bool {
            guard let continuation = continuation.withLock({ $0.take() }) else { return false }
            continuation.resume(with: result)
            return true
        }
    }

    private func discard(_ connection: PostgresConnection) async {
        state.withLock { state in
            if state.kept === connection { state.kept = nil }
        }
        try? await connection.close()
    }
}
