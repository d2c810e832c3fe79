import ArgumentParser
import Pushgate
import PushgateConfig

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

/// A failure reported to the user as one line on stderr, with exit code 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
