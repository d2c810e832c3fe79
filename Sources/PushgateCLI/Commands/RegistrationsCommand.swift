import ArgumentParser
import Foundation
import Pushgate
import PushgateConfig
import PushgateSQLite

/// `pushgate registrations`: operator verbs over the configured store (safe beside a running
/// gateway: SQLite in WAL mode, writes wait for each other).
struct RegistrationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registrations",
        abstract: "List, show, delete, export and import registrations in the configured store.",
        discussion: """
            Works on the store named by --config (default config.json), also while the gateway runs. \
            Export and import use JSON lines, one registration per line, handles in full: keep exports private.
            """,
        subcommands: [List.self, Show.self, Delete.self, Export.self, Import.self])

    /// Options that select registrations.
    struct Selection: ParsableArguments {
        @Option(help: "Only registrations whose tags satisfy this expression, e.g. 'username:alice' or 'news && !lang:fr'.")
        var tags: String?

        @Option(help: ArgumentHelp("Only these platforms: \(Platform.names), all, or a comma-separated list."))
        var pns: String = "all"

        func validate() throws {
            if let tags { _ = try TagExpression(parsing: tags) }
            _ = try PlatformSelection(parsing: pns)
        }

        func stream(
            _ store: any RegistrationStore, app: AppID, batchSize: Int = 500
        ) throws
            -> AsyncThrowingStream<[Registration], any Error>
        {
            let expression = try tags.map { try TagExpression(parsing: $0) }
            return store.registrations(
                matching: expression, platforms: try PlatformSelection(parsing: pns), app: app, batchSize: batchSize, now: .now)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List registrations (handles masked), ordered by id.")

        @OptionGroup var options: ConfigOptions
        @OptionGroup var selection: Selection

        @Option(help: "Show at most this many.")
        var limit: Int = 100

        func validate() throws {
            guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            let (store, app) = try await options.openStore()
            var shown = 0
            var more = false
            print("id                                platform  handle             owner       tags")
            listing: for try await batch in try selection.stream(store, app: app, batchSize: min(limit + 1, 500)) {
                for registration in batch {
                    if shown == limit {
                        more = true
                        break listing
                    }
                    let platform = registration.platform.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
                    let handle = DemoOutput.clip(registration.handle.masked, 18).padding(toLength: 18, withPad: " ", startingAt: 0)
                    let owner = registration.owner.exportText.padding(toLength: 11, withPad: " ", startingAt: 0)
                    print(
                        "\(registration.id.rawValue)  \(platform) \(handle) \(owner) \(registration.tags.map(\.rawValue).joined(separator: ","))"
                    )
                    shown += 1
                }
            }
            print(more ? "\(shown) shown; more match (raise --limit, or export)" : "\(shown) registration\(shown == 1 ? "" : "s")")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one registration in full (as its JSON line).")

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The registration id.")
        var id: String

        func run() async throws {
            let registrationID: RegistrationID
            do { registrationID = try RegistrationID(id) } catch { throw CLIError(error.description) }
            let (store, app) = try await options.openStore()
            guard let registration = try await store.registration(id: registrationID, app: app) else {
                throw CLIError("no registration \(id) in app \(app)")
            }
            print(registration.jsonLine)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete registrations by id.")

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The registration ids.")
        var ids: [String]

        func validate() throws {
            guard !ids.isEmpty else { throw ValidationError("give at least one registration id") }
            for id in ids { _ = try RegistrationID(id) }
        }

        func run() async throws {
            let (store, app) = try await options.openStore()
            var missing: [String] = []
            for id in ids {
                if try await store.delete(id: try RegistrationID(id), app: app) {
                    print("deleted \(id)")
                } else {
                    missing.append(id)
                }
            }
            if !missing.isEmpty { throw CLIError("not found: \(missing.joined(separator: ", "))") }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write registrations as JSON lines (full handles) to standard output or a file.")

        @OptionGroup var options: ConfigOptions
        @OptionGroup var selection: Selection

        @Option(name: .shortAndLong, help: "Write to this file (created with mode 0600) instead of standard output.")
        var output: String?

        func run() async throws {
            let (store, app) = try await options.openStore()
            let handle: FileHandle
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: nil, attributes: [.posixPermissions: 0o600]),
                    let file = FileHandle(forWritingAtPath: output)
                else { throw CLIError("cannot create \(output)") }
                handle = file
            } else {
                handle = FileHandle.standardOutput
            }
            var count = 0
            for try await batch in try selection.stream(store, app: app) {
                var chunk = ""
                for registration in batch { chunk += registration.jsonLine + "\n" }
                try handle.write(contentsOf: Data(chunk.utf8))
                count += batch.count
            }
            if let output {
                try handle.close()
                printError("exported \(count) registration\(count == 1 ? "" : "s") to \(output)")
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read registrations from JSON lines (an export) and write them, keeping their ids.",
            discussion: """
                Reads the input once, validating each line as it goes (handles against the app's rules, tags, \
                ids, UTF-8; no id twice; lines of at most 1 MiB), and writes the registrations in batches of \
                \(RegistrationImport.batchSize) inside one transaction for the whole import: nothing is visible \
                to anyone else until the last line is read, and if any line is wrong the transaction is rolled \
                back, the errors are listed by line number and nothing is written. Memory holds two batches \
                whatever the input's size, plus about 40 bytes per line to find repeated ids and, on SQLite, a \
                page cache of up to \(SQLiteStore.importCacheKiB / 1024) MiB; standard input is read the same \
                way. Existing registrations with the same id are replaced. On SQLite the import holds the \
                database's write lock until it ends: a gateway using the same file waits for it (and its writes \
                fail after 5 seconds), so import before starting the gateway, or when it is quiet.
                """)

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The file to read, or - for standard input.")
        var file: String

        @Flag(help: "Validate only; write nothing.")
        var dryRun = false

        func run() async throws {
            let loaded = try options.load()
            let app = try options.selectedApp(in: loaded)
            let input: FileHandle
            if file == "-" {
                input = FileHandle.standardInput
            } else {
                guard let opened = FileHandle(forReadingAtPath: file) else { throw CLIError("cannot read \(file)") }
                input = opened
            }
            let batches = RegistrationImportBatches(
                JSONLinesReader(input, maximumLineBytes: RegistrationImport.maximumLineBytes),
                importer: RegistrationImport(source: file == "-" ? "stdin" : file, app: app.id, handles: app.configuration.handles))
            if dryRun {
                var valid = 0
                do {
                    for try await batch in batches { valid += batch.count }
                } catch {
                    throw Self.refusal(error)
                }
                print("\(valid) registration\(valid == 1 ? "" : "s") valid; nothing written (--dry-run)")
                return
            }
            let store = try await options.openStore(loaded)
            let written: Int
            do {
                written = try await store.importRegistrations(batches, now: .now)
            } catch {
                switch error {
                case .batches(let errors): throw Self.refusal(errors)
                case .store(let error): throw CLIError("nothing imported: \(error.description)")
                }
            }
            print("imported \(written) registration\(written == 1 ? "" : "s") into app \(app.id)")
        }

        /// Lists the lines' errors on standard error; the error the command ends with.
        static func refusal(_ errors: RegistrationLineErrors) -> CLIError {
            for error in errors.listed { printError("error: \(error)") }
            if errors.count > errors.listed.count { printError("error: … and \(errors.count - errors.listed.count) more") }
            return CLIError("nothing imported: \(errors)")
        }
    }
}

extension Timestamp {
    /// The current time.
    static var now: Timestamp { Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970) }
}
