import Logging
import NIOCore
import PostgresNIO
import Pushgate
import PushgateSQL
import Synchronization

/// Registrations, secure messages and the outbox in PostgreSQL, on postgres-nio's connection
/// pool: the store several gateway instances share.
///
/// - Every table's ids are `COLLATE "C"`, so the keyset walks order ids as the other stores do,
///   whatever the database's locale.
/// - The outbox is claimed with `FOR UPDATE SKIP LOCKED` under leases: instances never wait on
///   each other's rows, and the work of an instance that died is taken over when its leases
///   expire. An enqueue sends `NOTIFY pushgate_outbox`, which wakes idle instances at once.
/// - A store call waits at most `timeoutSeconds` for a connection; while the database is down it
///   fails at once with ``StoreError/Kind/unavailable`` (HTTP 503), and the pool reconnects by
///   itself when the server is back.
/// - Its ``health`` is probed on a connection of its own, kept open (``PostgresHealthProbe``), at
///   most once per interval and at once after a call found the database unavailable: `/healthz`
///   costs the database no login, however often it is called.
///
/// Its connection pool (postgres-nio's `PostgresClient`) runs as a ServiceLifecycle service:
/// `pushgate serve` opens the store with ``openForServiceGroup(settings:password:reservationLifetime:clock:logger:)``
/// and puts ``PostgresPoolService`` first in the server's service group, so that the pool stops
/// last, after the outbox has released its leases. Callers outside a service group (the command
/// line's store commands, tests) use ``open(settings:password:reservationLifetime:clock:logger:)``,
/// whose store runs its pool itself until ``close()``:
///
/// ```swift
/// let store = try await PostgresStore.open(settings: settings, password: password)
/// let version = try await store.schemaVersion()
/// await store.close()
/// ```
public final class PostgresStore: Sendable {
    /// How long a created but unused registration id stays valid, in seconds.
    public let reservationLifetime: Double
    let client: PostgresClient
    let logger: Logger
    let timeout: Duration
    /// The names of the outbox's statements as named prepared statements (``PreparedSQL``), this
    /// store's connections' own; nil: unnamed statements (`preparedStatements` off).
    let preparedNames: PreparedSQLNames?
    /// The server and database, without the password.
    public let summary: String
    /// The pool's run when the store runs it itself (``open(settings:password:reservationLifetime:clock:logger:)``);
    /// nil when a service group runs it (``PostgresPoolService``).
    private let running: Task<Void, Never>?
    let healthProbe: PostgresHealthProbe
    /// Health probes made, and connections opened for them (logins), since the store opened.
    package var healthProbeCounts: (checks: Int, connectionsOpened: Int) { healthProbe.counts }
    /// Whether the database answers, as the probe last found it; while it was found down, calls
    /// fail at once.
    public let health: HealthMonitor

    /// The outbox's wake-up channel.
    static let outboxChannel = "pushgate_outbox"

    /// `runsPool`: whether the store runs its pool itself, in a task of its own.
    private init(
        client: PostgresClient, probeConfiguration: PostgresConnection.Configuration, settings: PostgresSettings,
        reservationLifetime: Double, clock: any PushgateClock, logger: Logger, runsPool: Bool
    ) {
        self.client = client
        let probe = PostgresHealthProbe(configuration: probeConfiguration, timeout: .seconds(settings.timeoutSeconds), logger: logger)
        healthProbe = probe
        health = HealthMonitor(clock: clock) { await probe.check() }
        self.logger = logger
        self.reservationLifetime = reservationLifetime
        self.timeout = .seconds(settings.timeoutSeconds)
        self.preparedNames = settings.preparedStatements ? PreparedSQLNames(capacity: PreparedSQLNames.defaultCapacity) : nil
        self.summary = "PostgreSQL \(settings.url)"
        // Outside a service group the store owns its pool's run: ``close()`` ends this task (and
        // waits for the pool to close); `deinit` cancels it for a store let go without close().
        running = runsPool ? Task { await client.run() } : nil
    }

    /// Migrates the database to the current schema (creating it when empty) on a connection of its
    /// own, then answers the store and the service that runs its connection pool. The caller runs
    /// the service in its service group (`pushgate serve`: first in the server's, so that it stops
    /// last); store calls made before it runs wait for it, at most `timeoutSeconds`. ``close()``
    /// then closes only the health probe's connection: the pool closes when the service ends
    /// (graceful shutdown or cancellation). `clock` ages the health monitor's findings.
    ///
    /// ```swift
    /// let (store, pool) = try await PostgresStore.openForServiceGroup(settings: settings, password: password)
    /// let group = ServiceGroup(services: [pool, serviceUsingTheStore], logger: logger)
    /// try await group.run()
    /// await store.close()
    /// ```
    public static func openForServiceGroup(
        settings: PostgresSettings, password: String?, reservationLifetime: Double = 86400, clock: any PushgateClock = SystemClock(),
        logger: Logger = Logger(label: "pushgate.postgres")
    ) async throws(StoreError) -> (store: PostgresStore, service: PostgresPoolService) {
        let store = try await opened(
            settings: settings, password: password, reservationLifetime: reservationLifetime, clock: clock, logger: logger,
            runsPool: false)
        return (store, PostgresPoolService(client: store.client))
    }

    /// Migrates the database as ``openForServiceGroup(settings:password:reservationLifetime:clock:logger:)``
    /// does, for a caller outside a service group (the command line's store commands, tests): the
    /// store runs its connection pool itself, in a task of its own that ``close()`` ends.
    public static func open(
        settings: PostgresSettings, password: String?, reservationLifetime: Double = 86400, clock: any PushgateClock = SystemClock(),
        logger: Logger = Logger(label: "pushgate.postgres")
    ) async throws(StoreError) -> PostgresStore {
        try await opened(
            settings: settings, password: password, reservationLifetime: reservationLifetime, clock: clock, logger: logger,
            runsPool: true)
    }

    /// The schema migrated on a connection of its own (the pool need not run yet), then the store.
    private static func opened(
        settings: PostgresSettings, password: String?, reservationLifetime: Double, clock: any PushgateClock, logger: Logger,
        runsPool: Bool
    ) async throws(StoreError) -> PostgresStore {
        let probeConfiguration = try probeConfiguration(settings, password: password)
        try await migrate(configuration: probeConfiguration, logger: logger)
        return PostgresStore(
            client: PostgresClient(configuration: configuration(settings, password: password), backgroundLogger: logger),
            probeConfiguration: probeConfiguration, settings: settings, reservationLifetime: reservationLifetime, clock: clock,
            logger: logger, runsPool: runsPool)
    }

    deinit {
        running?.cancel()
    }

    /// Closes the health probe's connection and, when the store runs its pool itself, the pool
    /// (a service group's pool closes when its ``PostgresPoolService`` ends).
    public func close() async {
        await healthProbe.close()
        running?.cancel()
        _ = await running?.value
    }

    // MARK: Outbox wake-ups

    /// Listens on `pushgate_outbox` on a pooled connection of its own, calling `wake` for every
    /// notification (an enqueue, a release, a cancel on any instance); reconnects after a failure.
    public var servesSeveralInstances: Bool { true }

    public func listenForOutboxWork(_ wake: @escaping @Sendable () -> Void) async {
        let (client, logger) = (self.client, self.logger)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.outboxChannel) { notifications in
                        // Work may have come while nobody listened.
                        wake()
                        for try await _ in notifications { wake() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("outbox listener lost its connection; listening again", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    // MARK: Running queries

    /// Runs `body` with a pooled connection. Waiting for the connection takes at most `timeout`;
    /// while the health monitor finds the database down, fails at once. Deadlocks and
    /// serialisation failures are retried; a failure for want of the database has the monitor
    /// probe it at once.
    func perform<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(StoreError) -> T {
        if let reason = await health.unavailability() {
            throw StoreError(.unavailable, "the database is unavailable: \(reason)")
        }
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await leasing(body)
            } catch {
                let failure = Self.storeError(error)
                if attempt < 4, Self.isRetryable(error) { continue }
                if failure.kind == .unavailable { health.reportFailure() }
                throw failure
            }
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(StoreError) -> T {
        let logger = self.logger
        return try await perform { connection in try await Self.transaction(on: connection, logger: logger, body) }
    }

    /// `body` in a transaction on `connection`: committed when it returns, rolled back when it throws.
    static func transaction<T: Sendable>(
        on connection: PostgresConnection, logger: Logger, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await connection.query("BEGIN", logger: logger)
        do {
            let value = try await body(connection)
            try await connection.query("COMMIT", logger: logger)
            return value
        } catch {
            do {
                try await connection.query("ROLLBACK", logger: logger)
            } catch {
                // A connection in an unknown state is closed (a pooled one goes back to the pool
                // closed).
                try? await connection.close()
            }
            throw error
        }
    }

    private enum Race<T: Sendable>: Sendable {
        case value(T)
        case timedOut
        case leased
    }

    /// 0 waiting for a connection, 1 leased (the body runs), 2 timed out (the body must not run).
    private final class Leased: Sendable {
        let state = Atomic<Int>(0)
    }

    /// `body` on a pooled connection, failing when none is leased within `timeout` (the body
    /// itself is bounded by the server's statement and lock timeouts).
    private func leasing<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let (client, timeout) = (self.client, self.timeout)
        let leased = Leased()
        return try await withThrowingTaskGroup(of: Race<T>.self) { group in
            group.addTask {
                .value(
                    try await client.withConnection { connection in
                        guard leased.state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else {
                            throw CancellationError()
                        }
                        return try await body(connection)
                    })
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return leased.state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged
                    ? .timedOut : .leased
            }
            while let next = try await group.next() {
                switch next {
                case .value(let value):
                    group.cancelAll()
                    return value
                case .timedOut:
                    group.cancelAll()
                    throw StoreError(.unavailable, "the database is unavailable: no connection within \(timeout)")
                case .leased:
                    continue
                }
            }
            throw CancellationError()
        }
    }

    static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        // serialization_failure, deadlock_detected
        return state == "40001" || state == "40P01"
    }

    /// The store's error for what postgres-nio threw: a server's refusal names its SQL state and
    /// message; a connection failure is `unavailable`.
    static func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as PSQLError:
            if error.code == .server {
                let state = error.serverInfo?[.sqlState] ?? "?"
                let message = error.serverInfo?[.message] ?? "no message"
                // 08: connection exceptions; 57P: the server is shutting down or restarting.
                if state.hasPrefix("08") || state.hasPrefix("57P") || state == "53300" {
                    return StoreError(.unavailable, "the database is unavailable: \(message) (SQLSTATE \(state))")
                }
                return StoreError(.storage, "the database refused a query: \(message) (SQLSTATE \(state))")
            }
            return StoreError(.unavailable, "the database is unavailable: \(describe(error.code))")
        case is CancellationError:
            return StoreError(.unavailable, "the database is unavailable: the call was cancelled")
        default:
            return StoreError(.unavailable, "the database is unavailable: \(error)")
        }
    }

    static func describe(_ code: PSQLError.Code) -> String {
        switch code {
        case .connectionError: "cannot connect"
        case .serverClosedConnection: "the server closed the connection"
        case .clientClosedConnection, .poolClosed: "the connection pool is closed"
        case .authMechanismRequiresPassword: "the server asks for a password and none is configured"
        case .sslUnsupported: "the server does not support TLS (sslmode=require)"
        default: "\(code)"
        }
    }
}

extension PostgresRowSequence {
    /// Every row, decoded as `type`.
    func all<each Column: PostgresDecodable>(_ type: (repeat each Column).Type) async throws -> [(repeat each Column)] {
        var result: [(repeat each Column)] = []
        for try await row in self { result.append(try row.decode(type)) }
        return result
    }
}

/// A dynamic query: SQL with `?` placeholders (as ``TagQuery`` writes it) numbered `$1…` and its
/// values bound.
func dynamicQuery(_ sql: String, _ values: [SQLValue]) -> PostgresQuery {
    PostgresQuery(unsafeSQL: numberedPlaceholders(sql), binds: dynamicBindings(values))
}

/// `values` bound as a dynamic query binds them.
func dynamicBindings(_ values: [SQLValue]) -> PostgresBindings {
    var bindings = PostgresBindings(capacity: values.count)
    for value in values {
        switch value {
        case .null: bindings.appendNull()
        case .integer(let number): bindings.append(number)
        case .real(let number): bindings.append(number)
        case .text(let text): bindings.append(text)
        case .bool(let flag): bindings.append(flag)
        }
    }
    return bindings
}

/// `sql` with its `?` placeholders numbered `$1…`.
func numberedPlaceholders(_ sql: String) -> String {
    var numbered = ""
    numbered.reserveCapacity(sql.utf8.count + 16)
    var index = 0
    for character in sql {
        if character == "?" {
            index += 1
            numbered += "$\(index)"
        } else {
            numbered.append(character)
        }
    }
    return numbered
}

/// A row of PostgreSQL's answer, read by position (a value of another type reads as nil).
package struct PostgresRowReader: SQLRowReading {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) { self.row = PostgresRandomAccessRow(row) }

    package func text(_ column: Int) -> String? { (try? row[column].decode(String?.self)) ?? nil }
    package func double(_ column: Int) -> Double? { (try? row[column].decode(Double?.self)) ?? nil }
    package func integer(_ column: Int) -> Int? { (try? row[column].decode(Int?.self)) ?? nil }
    package func bool(_ column: Int) -> Bool { ((try? row[column].decode(Bool?.self)) ?? nil) ?? false }
}

extension PostgresRowSequence {
    /// Every row, to be read by position.
    func rows() async throws -> [PostgresRowReader] {
        var result: [PostgresRowReader] = []
        for try await row in self { result.append(PostgresRowReader(row)) }
        return result
    }
}

extension PostgresStore {
    /// Runs `sql` as it is (statements separated by `;` and a line break), outside any rule of the
    /// store: a test makes the database an older version wrote, to check a migration of it.
    package func executeUnchecked(_ sql: String) async throws(StoreError) {
        let logger = self.logger
        try await perform { connection in
            for statement in sql.split(separator: ";\n") where !statement.allSatisfy(\.isWhitespace) {
                try await connection.query(PostgresQuery(unsafeSQL: String(statement)), logger: logger)
            }
        }
    }
}
