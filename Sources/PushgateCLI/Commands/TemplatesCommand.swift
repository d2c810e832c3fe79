import ArgumentParser
import Foundation
import Pushgate
import PushgateConfig

/// `pushgate templates`: check and render the configured templates.
struct TemplatesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "templates",
        abstract: "Check the configuration and its templates, or render one with sample values.",
        subcommands: [Check.self, Render.self]
    )

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate config.json and every template; exit non-zero on the first error.",
            discussion: "Secrets are checked too with --secrets (their values are never printed).")

        @OptionGroup var options: ConfigOptions

        @Flag(name: .long, help: "Also check that every configured secret can be read.")
        var secrets = false

        func run() throws {
            let loaded: LoadedConfiguration
            do {
                loaded = try options.load()
            } catch {
                printError("error: \(error)")
                throw ExitCode(1)
            }
            var problems = 0
            for app in loaded.apps {
                print("app \(app.id): services \(app.configuration.services.configuredPlatforms.map(\.rawValue).joined(separator: ", "))")
                for (purpose, set) in app.templates.sorted(by: { $0.key < $1.key }) {
                    for (platform, template) in set.sorted(by: { $0.key < $1.key }) {
                        let properties = template.template.propertyKeys.sorted().joined(separator: ", ")
                        let headers = template.headers.map(\.description).joined(separator: "; ")
                        print(
                            "  ok  \(purpose).\(platform)  \(template.template.format)  properties: \(properties.isEmpty ? "none" : properties)\(headers.isEmpty ? "" : "  headers: \(headers)")"
                        )
                    }
                }
                if secrets {
                    let resolver = SecretResolver(baseDirectory: loaded.baseDirectory)
                    for (name, source) in Self.secretSources(app.configuration.services) {
                        if let error = resolver.check(source) {
                            print("  FAIL secret \(name): \(error)")
                            problems += 1
                        } else {
                            print("  ok  secret \(name): \(source)")
                        }
                    }
                }
            }
            if problems > 0 {
                printError("error: \(problems) secret(s) cannot be read")
                throw ExitCode(1)
            }
            for warning in loaded.configuration.warnings { print("warning: \(warning)") }
            print("configuration \(options.config) is valid")
        }

        static func secretSources(_ services: ServicesConfiguration) -> [(String, SecretSource)] {
            var result: [(String, SecretSource)] = []
            if let apns = services.apns {
                switch apns.authentication {
                case .token(_, _, let key): result.append(("apns.token.privateKey", key))
                case .certificate(let certificate, let key):
                    result.append(("apns.certificate.certificate", certificate))
                    result.append(("apns.certificate.privateKey", key))
                }
            }
            if let fcm = services.fcm { result.append(("fcm.serviceAccount", fcm.serviceAccount)) }
            if let gcm = services.gcm, let serverKey = gcm.serverKey { result.append(("gcm.serverKey", serverKey)) }
            if let browser = services.browser { result.append(("browser.vapidPrivateKey", browser.vapidPrivateKey)) }
            if let wns = services.wns { result.append(("wns.clientSecret", wns.clientSecret)) }
            return result
        }
    }

    struct Render: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Render a configured template with the given values and print its headers and payload.",
            discussion: """
                Example: pushgate templates render --pns apns,wns --set user=alice --set message='Hi <3'
                """)

        @OptionGroup var options: ConfigOptions

        @Option(name: .long, help: ArgumentHelp("Platforms: \(Platform.names), all, or a comma-separated list."))
        var pns: String = "all"

        @Option(name: .long, help: "The template set (purpose), such as notify or secure.")
        var purpose: String = "notify"

        @Option(name: .customLong("set"), help: ArgumentHelp("A property value, as name=value (repeatable).", valueName: "name=value"))
        var values: [String] = []

        func run() throws {
            let selection: PlatformSelection
            do { selection = try PlatformSelection(parsing: pns) } catch {
                printError("error: \(error)")
                throw ExitCode(2)
            }
            let properties = try Self.properties(from: values)
            let loaded: LoadedConfiguration
            let app: LoadedApp
            do {
                loaded = try options.load()
                app = try options.selectedApp(in: loaded)
            } catch {
                printError("error: \(error)")
                throw ExitCode(1)
            }
            guard let set = app.templates[purpose] else {
                printError(
                    "error: no template set '\(purpose)' in app \(app.id) (have: \(app.templates.keys.sorted().joined(separator: ", ")))")
                throw ExitCode(1)
            }
            var failed = false
            for platform in selection.platforms {
                guard let template = set[platform] else {
                    printError("error: \(purpose) has no \(platform) template")
                    failed = true
                    continue
                }
                print("== \(platform) (\(template.template.format))")
                print("Content-Type: \(template.contentType)")
                for header in template.headers { print(header.description) }
                do {
                    let rendered = try template.render(properties)
                    print("")
                    print(String(decoding: rendered.body, as: UTF8.self))
                    print(
                        "(\(rendered.body.count) bytes of \(PayloadLimit.maximumBytes(for: platform, apnsPushType: template.header("apns-push-type"))))"
                    )
                } catch {
                    printError("error: \(platform): \(error)")
                    failed = true
                }
            }
            if failed { throw ExitCode(1) }
        }

        static func properties(from values: [String]) throws -> TemplateProperties {
            var properties = TemplateProperties()
            for item in values {
                guard let equals = item.firstIndex(of: "=") else {
                    throw ValidationError("--set '\(item)' must have the form name=value")
                }
                let name = String(item[..<equals])
                guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                    throw ValidationError("--set '\(item)': property names are letters, digits and _")
                }
                properties[name] = String(item[item.index(after: equals)...])
            }
            return properties
        }
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
