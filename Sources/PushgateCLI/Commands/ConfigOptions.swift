import ArgumentParser
import Pushgate
import PushgateConfig
import PushgateStore

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
    func openStore() async throws -> (SQLiteRegistrationStore, AppID) {
        let loaded = try load()
        let app = try selectedApp(in: loaded)
        return (try await openStore(loaded), app.id)
    }

    func openStore(_ loaded: LoadedConfiguration) async throws -> SQLiteRegistrationStore {
        do {
            return try await SQLiteRegistrationStore.open(path: storePath(loaded))
        } catch {
            throw CLIError("cannot open the store \(storePath(loaded)): \(error.description)")
        }
    }

    /// The SQLite file, resolved against the configuration's folder.
    func storePath(_ loaded: LoadedConfiguration) -> String {
        switch loaded.configuration.store.kind {
        case .sqlite(let path): ConfigurationLoader.resolve(path, against: loaded.baseDirectory)
        }
    }
}

/// A failure reported to the user as one line on stderr, with exit code 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
