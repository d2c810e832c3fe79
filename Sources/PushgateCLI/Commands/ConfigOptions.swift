import ArgumentParser
import Pushgate
import PushgateConfig
import PushgatePostgres
import PushgateSQLite
import ServiceLifecycle

/// Options shared by commands that read `config.json`.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "The configuration file.")
    var config: String = "config.json"

    @Option(name: .long, help: "The app (hub) to use; default: the app named 'default', or the only one.")
    var app: String?

    func load() throws -> LoadedConfiguration {
        do {
            return try ConfigurationLoader.load(file: config)
        } catch {
            throw CLIError(error.description)
        }
    }

    func selectedApp(in loaded: LoadedConfiguration) throws -> LoadedApp {
        guard let name = app else { return loaded.defaultApp }
        let id: AppID
        do { id = try AppID(name) } catch { throw CLIError(error.description) }
        guard let found = loaded.app(id) else {
            throw CLIError(
                "app '\(name)' is not configured in \(config) (configured: \(loaded.apps.map(\.id.rawValue).joined(separator: ", ")))")
        }
        return found
    }
}

extension ConfigOptions {
    /// Opens the store the configuration names, for the selected app.
    func openStore() async throws -> (any DatabaseStore, AppID) {
        let loaded = try load()
        let app = try selectedApp(in: loaded)
        return (try await openStore(loaded), app.id)
    }

    func openStore(_ loaded: LoadedConfiguration) async throws -> any DatabaseStore {
        try await Self.openStore(loaded.configuration.store, baseDirectory: loaded.baseDirectory)
    }

    /// Opens (and migrates) a configured store: the SQLite file resolved against the
    /// configuration's folder, or the PostgreSQL database with its password read from its secret.
    /// The store runs its own connections until it is closed (a command runs no service group).
    static func openStore(_ configuration: StoreConfiguration, baseDirectory: String) async throws -> any DatabaseStore {
        switch configuration.kind {
        case .sqlite(let path):
            return try await openSQLite(path, baseDirectory: baseDirectory)
        case .postgres(let settings):
            let password = try postgresPassword(settings, baseDirectory: baseDirectory)
            do {
                return try await PostgresStore.open(settings: settings, password: password)
            } catch {
                throw CLIError("cannot open the store \(settings.url): \(error.description)")
            }
        }
    }

    /// Opens (and migrates) the configured store for `pushgate serve`: as ``openStore(_:)``, except
    /// that a PostgreSQL store's connection pool is run by the server's service group
    /// (``ServedStore/service``), not by the store.
    func openServedStore(_ loaded: LoadedConfiguration) async throws -> ServedStore {
        let baseDirectory = loaded.baseDirectory
        switch loaded.configuration.store.kind {
        case .sqlite(let path):
            let store = try await Self.openSQLite(path, baseDirectory: baseDirectory)
            return ServedStore(store: store, service: nil, schemaVersion: try await store.schemaVersion())
        case .postgres(let settings):
            let password = try Self.postgresPassword(settings, baseDirectory: baseDirectory)
            do {
                let (store, pool) = try await PostgresStore.openForServiceGroup(settings: settings, password: password)
                return ServedStore(store: store, service: pool, schemaVersion: PostgresStore.currentSchemaVersion)
            } catch {
                throw CLIError("cannot open the store \(settings.url): \(error.description)")
            }
        }
    }

    private static func openSQLite(_ path: String, baseDirectory: String) async throws -> SQLiteStore {
        let resolved = ConfigurationLoader.resolve(path, against: baseDirectory)
        do {
            return try await SQLiteStore.open(path: resolved)
        } catch {
            throw CLIError("cannot open the store \(resolved): \(error.description)")
        }
    }

    /// The PostgreSQL password, read from its secret (nil: none configured).
    private static func postgresPassword(_ settings: PostgresSettings, baseDirectory: String) throws -> String? {
        do {
            return try settings.password.map { source throws(SecretError) in
                try SecretResolver(baseDirectory: baseDirectory).resolve(source)
            }
        } catch {
            throw CLIError("store.postgres.password: \(error.description)")
        }
    }
}

/// The store `pushgate serve` runs on: the service that runs its connections in the server's
/// service group (PostgreSQL's pool; nil for SQLite, whose store runs its own thread), and the
/// schema version it was opened at (read before the group runs, when the pool does not yet).
struct ServedStore {
    let store: any DatabaseStore
    let service: (any Service)?
    let schemaVersion: Int
}

/// A failure reported to the user as one line on stderr, with exit code 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
