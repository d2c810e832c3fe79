import Foundation
import Logging
import PostgresNIO
import Pushgate

/// The PostgreSQL server of the tests: `PUSHGATE_TEST_POSTGRES` holds its URL (scripts/test.sh
/// starts a throwaway cluster and sets it). Without it the PostgreSQL tests are skipped, with one
/// line saying so, unless `PUSHGATE_REQUIRE_POSTGRES` is set, when they fail instead.
package enum PostgresTesting {
    package static let environmentKey = "PUSHGATE_TEST_POSTGRES"

    /// The server's URL, if the tests have one.
    package static let url: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let url = environment[environmentKey], !url.isEmpty { return url }
        if environment["PUSHGATE_REQUIRE_POSTGRES"] != nil {
            fatalError("PUSHGATE_REQUIRE_POSTGRES is set but \(environmentKey) is not: scripts/test.sh starts a PostgreSQL cluster")
        }
        print("◇ PostgreSQL tests skipped: \(environmentKey) is not set (scripts/test.sh starts a throwaway cluster and sets it)")
        return nil
    }()

    package static var isAvailable: Bool { url != nil }

    /// A new, empty database on the test server (its settings).
    package static func freshDatabase(prefix: String = "t") async throws -> PostgresSettings {
        guard let url else { throw StoreError(.unavailable, "\(environmentKey) is not set") }
        let admin = PostgresSettings(url: try PostgresURL(parsing: url), poolSize: 1)
        let name = "\(prefix)_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        // One connection of its own (a pool would be leased before its run() had started).
        let logger = Logger(label: "pushgate.test.postgres")
        let connection = try await PostgresConnection.connect(
            configuration: try PostgresStore.probeConfiguration(admin, password: nil), id: 0, logger: logger)
        do {
            _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger).collect()
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        var settings = admin
        settings.url.database = name
        settings.poolSize = 8
        // Generous: the parallel suite runs hundreds of tests on 2 cores, and a store test that
        // waits for a connection must not fail because the machine is busy.
        settings.timeoutSeconds = 90
        return settings
    }

    /// The server processes (pids) of the connections to `settings`' database that introduced
    /// themselves as `application` (`pushgate`: the pool, `pushgate-health`: the health probe);
    /// with `terminate`, ended as an administrator's `pg_terminate_backend` ends them (waiting
    /// until each has exited).
    package static func backends(of settings: PostgresSettings, application: String, terminate: Bool = false) async throws -> [Int] {
        let logger = Logger(label: "pushgate.test.postgres")
        var configuration = try PostgresStore.probeConfiguration(settings, password: nil)
        // Not one of those it counts.
        configuration.options.additionalStartupParameters = [("application_name", "pushgate-test")]
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        do {
            let database = settings.url.database
            let pids = try await connection.query(
                "SELECT pid FROM pg_stat_activity WHERE datname = \(database) AND application_name = \(application) ORDER BY pid",
                logger: logger
            ).all((Int).self)
            if terminate {
                for pid in pids {
                    _ = try await connection.query("SELECT pg_terminate_backend(\(pid)::integer, 10000)", logger: logger).collect()
                }
            }
            try await connection.close()
            return pids
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// A PostgreSQL store on a new, empty database.
    package static func freshStore(reservationLifetime: Double = 86400) async throws -> PostgresStore {
        try await PostgresStore.open(settings: try await freshDatabase(), password: nil, reservationLifetime: reservationLifetime)
    }
}
