import Foundation
import Pushgate
import PushgateDispatch
import PushgateLocal
import PushgateTesting
import Testing

@Suite struct ChannelsCommandTests {
    /// A channel created at the sandbox's Apple by other software (the same app's key).
    static func foreignChannel(_ local: LocalGateway) async throws -> String {
        let apns = try #require(local.server.gateway.app.configuration.services.apns)
        guard case .token(let keyID, let teamID, .file(let path)) = apns.authentication else {
            Issue.record("the sandbox gateway's APNs key is not a file")
            throw CancellationError()
        }
        func resolved(_ path: String) -> String { path.hasPrefix("/") ? path : local.directory + "/" + path }
        let tokens = try await APNSTokenManager(
            keyID: keyID, teamID: teamID, privateKeyPEM: try String(contentsOfFile: resolved(path), encoding: .utf8), clock: SystemClock())
        let client = try APNSChannelClient.open(
            .init(endpoint: apns.channelsEndpoint, bundleID: apns.topic, caFile: apns.caFile.map(resolved), tokens: tokens))
        let id = try await client.create(storagePolicy: 0).channelID
        await client.close()
        return id
    }

    @Test func createListShowAndDeleteWorkOnTheConfiguredApp() async throws {
        let local = try await LocalGateway.start(listening: false)
        do {
            let config = ["--config", local.directory + "/config.json"]
            let created = try await PushgateProcess.run(["channels", "create", "scores", "--policy", "0"] + config)
            #expect(created.status == 0 && created.stdout.hasPrefix("created scores: apns-channel-id "), "\(created.stderr)")
            let channelID = try #require(try await local.store.channel(app: .default, name: "scores")?.channelID)
            #expect(created.stdout.contains(channelID))
            let foreign = try await Self.foreignChannel(local)

            let listed = try await PushgateProcess.run(["channels", "list"] + config)
            #expect(listed.status == 0, "\(listed.stderr)")
            let lines = listed.stdout.split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("scores") && $0.contains(channelID) && $0.hasSuffix(" ok") }, "\(listed.stdout)")
            #expect(lines.contains { $0.contains(foreign) && $0.hasSuffix("not Pushgate's") }, "\(listed.stdout)")
            #expect(listed.stdout.hasSuffix("2 channels\n"))

            let shown = try await PushgateProcess.run(["channels", "show", "scores"] + config)
            #expect(shown.status == 0 && shown.stdout.contains("storage policy:   0") && shown.stdout.contains("at Apple:         yes"))

            let taken = try await PushgateProcess.run(["channels", "create", "scores"] + config)
            #expect(taken.status == 1 && taken.stderr.contains("exists already"), "\(taken.stderr)")
            let badName = try await PushgateProcess.run(["channels", "create", "no/slash"] + config)
            #expect(badName.status == 1 && badName.stderr.contains("channel name"), "\(badName.stderr)")

            let deleted = try await PushgateProcess.run(["channels", "delete", "scores"] + config)
            #expect(deleted.status == 0 && deleted.stdout.contains("deleted scores"), "\(deleted.stderr)")
            #expect(try await local.store.channel(app: .default, name: "scores") == nil)
            let again = try await PushgateProcess.run(["channels", "show", "scores"] + config)
            #expect(again.status == 1 && again.stderr.contains("no broadcast channel named 'scores'"), "\(again.stderr)")
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}
