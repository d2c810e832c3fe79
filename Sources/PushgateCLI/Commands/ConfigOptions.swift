import ArgumentParser
import Pushgate
import PushgateConfig
import PushgatePostgres
import PushgateSQLite

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
    static func openStore(_ configuration: StoreConfiguration, baseDirectory: String) async throws -> any DatabaseStore {
        switch configuration.kind {
        case .sqlite(let path):
            let resolved = ConfigurationLoader.resolve(path, against: baseDirectory)
            do {
                return try await SQLiteStore.open(path: resolved)
            } catch {
                throw CLIError("cannot open the store \(resolved): \(error.description)")
            }
        case .postgres(let settings):
            let password: String?
            do {
                password = try settings.password.map { source throws(SecretError) in
                    try SecretResolver(baseDirectory: baseDirectory).resolve(source)
                }
            } catch {
                throw CLIError("store.postgres.password: \(error.description)")
            }
            do {
                return try await PostgresStore.open(settings: settings, password: password)
            } catch {
                throw CLIError("cannot open the store \(settings.url): \(error.description)")
            }
        }
    }
}

/// A failure reported to the user as one line on stderr, with exit code 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
