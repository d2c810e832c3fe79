import ArgumentParser
import Foundation
import Logging
import Pushgate
import PushgateConfig
import PushgateGateway
import PushgateServer

/// `pushgate channels create|list|show|delete`: the app's APNs broadcast channels, managed at
/// Apple and kept in the configured store (as `/api/channels` does).
struct ChannelsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channels",
        abstract: "Create, list, show and delete the app's APNs broadcast channels (iOS 18).",
        discussion: """
            Works on the store named by --config (default config.json), also while the gateway runs, and calls \
            Apple's channel management host (apns.channelsEndpoint) with the app's APNs token key. \
            At most apns.maxChannels channels are created (default 10,000).
            """,
        subcommands: [Create.self, List.self, Show.self, Delete.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a channel at Apple and keep it under NAME.")

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The channel's name: 1 to 64 letters, digits, '-', '_' or '.'.")
        var name: String

        @Option(help: "The message storage policy: 0 no message stored, 1 the most recent message stored.")
        var policy: Int = 1

        func validate() throws {
            guard policy == 0 || policy == 1 else { throw ValidationError("--policy must be 0 or 1") }
        }

        func run() async throws {
            let channel = try await ChannelsCommand.with(options) { channels throws(GatewayError) in
                try await channels.create(name: name, storagePolicy: policy)
            }
            print("created \(channel.name ?? name): apns-channel-id \(channel.channelId), storage policy \(policy)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the channels: Pushgate's, and those Apple lists that Pushgate did not create.")

        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let channels = try await ChannelsCommand.with(options) { channels throws(GatewayError) in try await channels.list() }
            print("name                  policy  apns-channel-id           status")
            for channel in channels {
                let name = (channel.name ?? "-").padding(toLength: 21, withPad: " ", startingAt: 0)
                let policy = (channel.storagePolicy.map(String.init) ?? "-").padding(toLength: 7, withPad: " ", startingAt: 0)
                let status =
                    !channel.managed ? "not Pushgate's" : channel.atApple ? "ok" : "not at Apple any more"
                print("\(name) \(policy) \(channel.channelId.padding(toLength: 25, withPad: " ", startingAt: 0)) \(status)")
            }
            print("\(channels.count) channel\(channels.count == 1 ? "" : "s")")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A channel with Apple's answer for it.")

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The channel's name.")
        var name: String

        func run() async throws {
            let channel = try await ChannelsCommand.with(options) { channels throws(GatewayError) in try await channels.show(name: name) }
            print("name:             \(channel.name ?? name)")
            print("apns-channel-id:  \(channel.channelId)")
            print("storage policy:   \(channel.storagePolicy.map(String.init) ?? "-")")
            print("at Apple:         \(channel.atApple ? "yes" : "no")")
            if let note = channel.note { print("note:             \(note)") }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a channel at Apple and in the store.")

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The channel's name.")
        var name: String

        func run() async throws {
            let deletion = try await ChannelsCommand.with(options) { channels throws(GatewayError) in try await channels.delete(name: name)
            }
            print("deleted \(deletion.name) (apns-channel-id \(deletion.channelId))")
            if let note = deletion.note { print(note) }
        }
    }

    /// Runs `body` with the selected app's channels over the configured store; a refusal is
    /// printed as one line (exit 1).
    static func with<T: Sendable>(
        _ options: ConfigOptions, _ body: (Channels) async throws(GatewayError) -> T
    ) async throws -> T {
        let loaded = try options.load()
        let app = try options.selectedApp(in: loaded)
        let store = try await options.openStore(loaded)
        let clock = SystemClock()
        var logger = Logger(label: "pushgate.channels")
        logger.logLevel = .error
        let channels = Channels(store: store, app: { app }, clock: clock, logger: logger)
        channels.connect(
            await GatewayAssembly.channelAccess(for: app, secrets: SecretResolver(baseDirectory: loaded.baseDirectory), clock: clock))
        let result: Result<T, GatewayError>
        do { result = .success(try await body(channels)) } catch { result = .failure(error) }
        await store.close()
        return try result.mapError { CLIError($0.message) }.get()
    }
}
