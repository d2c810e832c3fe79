import ArgumentParser
import Foundation
import Pushgate
import PushgateConfig

/// `pushgate hubs`: the hubs a configuration serves and what a Notification Hubs client needs.
struct HubsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubs",
        abstract: "List the hubs (apps) and their shared access rules, or print a hub's connection string.",
        subcommands: [List.self, ConnectionString.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Each hub with its rules and their rights (never a key).")

        @OptionGroup var options: ConfigOptions

        func run() throws {
            let loaded = try options.load()
            let listener = loaded.configuration.listener
            print("hub API: \(listener.tls == nil ? "http" : "https")://\(listener.host):\(listener.port)/{hub}/…")
            for app in loaded.apps {
                let rules = app.configuration.accessRules
                print("\(app.id.rawValue)\(app.id == loaded.defaultApp.id ? " (default: also /api)" : "")")
                if rules.isEmpty { print("  no shared access rules: the hub API refuses every request") }
                for rule in rules {
                    print("  \(rule.name)  \(rule.rights.sorted().map(\.rawValue).joined(separator: ", "))")
                }
            }
        }
    }

    struct ConnectionString: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "connection-string",
            abstract: "Print HUB's connection string for a rule: Endpoint=sb://host:port/;SharedAccessKeyName=…;SharedAccessKey=….",
            discussion: """
                Notification Hubs clients derive the API's URL from the endpoint by replacing sb:// with https:// \
                (https://host:port/HUB/…), so the gateway's listener must serve HTTPS (listener.tls) at that host and port. \
                The key is a secret: print it only where a client is configured.
                """)

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The hub (app) name.")
        var hub: String

        @Option(name: .long, help: "The rule; default: DefaultFullSharedAccessSignature, else the hub's only or first rule.")
        var rule: String?

        @Option(name: .long, help: "host:port clients reach the gateway's HTTPS at; default: the listener's (listener.tls.port when set).")
        var endpoint: String?

        func run() throws {
            let loaded = try options.load()
            guard let app = loaded.apps.first(where: { $0.id.rawValue == hub }) else {
                throw CLIError(
                    "hub '\(hub)' is not configured in \(options.config) (configured: \(loaded.apps.map(\.id.rawValue).joined(separator: ", ")))"
                )
            }
            let rules = app.configuration.accessRules
            guard !rules.isEmpty else { throw CLIError("hub '\(hub)' has no shared access rules (apps.\(hub).accessRules)") }
            let chosen: SharedAccessRule
            if let rule {
                guard let found = rules.first(where: { $0.name == rule }) else {
                    throw CLIError("hub '\(hub)' has no rule '\(rule)' (rules: \(rules.map(\.name).joined(separator: ", ")))")
                }
                chosen = found
            } else {
                chosen = rules.first(where: { $0.name == SharedAccessRule.defaultFullName }) ?? rules[0]
            }
            let key: String
            do { key = try SecretResolver(baseDirectory: loaded.baseDirectory).resolve(chosen.key) } catch {
                throw CLIError("apps.\(hub).accessRules.\(chosen.name).key: \(error.description)")
            }
            let listener = loaded.configuration.listener
            // The HTTPS port: listener.tls.port when HTTPS has its own, else the listener's.
            let port = listener.tls?.port ?? listener.port
            let host = endpoint ?? "\(listener.host == "0.0.0.0" ? "localhost" : listener.host):\(port)"
            print(
                "Endpoint=sb://\(host)/;SharedAccessKeyName=\(chosen.name);SharedAccessKey=\(key.trimmingCharacters(in: .whitespacesAndNewlines))"
            )
        }
    }
}
