import ArgumentParser
import Foundation
import Pushgate
import PushgateConfig

/// `pushgate store`: the store's schema, and moving registrations between stores.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Migrate the configured store's schema, or copy registrations between stores.",
        subcommands: [Migrate.self, Copy.self])

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bring the configured store's schema to this version (serve does it too, on start).",
            discussion: """
                Migrations are versioned and each runs once, in its own transaction. On PostgreSQL, \
                instances starting together take an advisory lock: one migrates, the others wait and find it done.
                """)

        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let store = try await options.openStore(try options.load())
            let version = try await store.schemaVersion()
            print("\(store.summary): schema version \(version), current")
            await store.close()
        }
    }

    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy every app's registrations from one configured store to another (SQLite ⇄ PostgreSQL).",
            discussion: """
                Streamed in pages ordered by id, each page written in one transaction (ids, handles, tags, \
                templates and expiry kept), so memory stays flat whatever the count. Resumable: a checkpoint file \
                records the last id copied per app, and a second run goes on after it (--restart starts over). \
                Copying twice is harmless: a registration copied again is replaced by itself. The outbox is not \
                copied: let pending notifications finish first (pushgate notifications list).
                """)

        @Option(help: "The configuration whose store is read.")
        var from: String

        @Option(help: "The configuration whose store is written.")
        var to: String

        @Option(help: "Registrations per page.")
        var batchSize: Int = 2000

        @Option(help: "The checkpoint file (default: store-copy.checkpoint beside the --to configuration).")
        var checkpoint: String?

        @Flag(help: "Ignore the checkpoint and copy everything again.")
        var restart = false

        func validate() throws {
            guard (1...50_000).contains(batchSize) else { throw ValidationError("--batch-size must be 1…50000") }
        }

        func run() async throws {
            let source = try Self.load(from)
            let destination = try Self.load(to)
            guard source.configuration.store != destination.configuration.store || source.baseDirectory != destination.baseDirectory
            else { throw CLIError("--from and --to name the same store") }
            let reader = try await ConfigOptions.openStore(source.configuration.store, baseDirectory: source.baseDirectory)
            let writer = try await ConfigOptions.openStore(destination.configuration.store, baseDirectory: destination.baseDirectory)
            let checkpointPath = checkpoint ?? destination.baseDirectory + "/store-copy.checkpoint"
            var progress = restart ? [:] : Self.readCheckpoint(checkpointPath)
            print("copying registrations: \(reader.summary) → \(writer.summary)")
            var total = 0
            for app in source.apps.map(\.id) {
                let resumeAfter = progress[app.rawValue]
                if let resumeAfter { print("app \(app): resuming after \(resumeAfter)") }
                var copied = 0
                var after = resumeAfter.flatMap { try? RegistrationID($0) }
                while true {
                    // One page after the last id written: a keyset walk, as a send's audience is read.
                    let page = try await Self.page(of: reader, app: app, after: after, size: batchSize)
                    guard let last = page.last else { break }
                    do {
                        try await writer.restore(page, now: Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970))
                    } catch {
                        throw CLIError(
                            "copy stopped in app \(app) after \(after?.rawValue ?? "the start") (\(copied) copied this run): \(error.description); run it again to resume"
                        )
                    }
                    copied += page.count
                    after = last.id
                    progress[app.rawValue] = last.id.rawValue
                    try Self.writeCheckpoint(progress, to: checkpointPath)
                    if page.count < batchSize { break }
                }
                print("app \(app): \(copied) registrations copied")
                total += copied
            }
            print("copied \(total) registrations; checkpoint \(checkpointPath)")
            await reader.close()
            await writer.close()
        }

        static func load(_ path: String) throws -> LoadedConfiguration {
            do { return try ConfigurationLoader.load(file: path) } catch { throw CLIError(error.description) }
        }

        /// Registrations of `app` after `after`, at most `size`, in id order (expired ones left out).
        static func page(of store: any DatabaseStore, app: AppID, after: RegistrationID?, size: Int) async throws -> [Registration] {
            // A stream per page, started after the last id written: resuming costs nothing.
            var result: [Registration] = []
            for try await batch in store.registrations(
                matching: nil, platforms: .all, app: app, batchSize: size, now: Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970),
                after: after)
            {
                result = batch
                break
            }
            return result
        }

        static func readCheckpoint(_ path: String) -> [String: String] {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
            var progress: [String: String] = [:]
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: "\t", maxSplits: 1)
                if fields.count == 2 { progress[String(fields[0])] = String(fields[1]) }
            }
            return progress
        }

        static func writeCheckpoint(_ progress: [String: String], to path: String) throws {
            let text = progress.sorted { $0.key < $1.key }.map { "\($0.key)\t\($0.value)\n" }.joined()
            do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
                throw CLIError("cannot write the checkpoint \(path): \(error.localizedDescription)")
            }
        }
    }
}
