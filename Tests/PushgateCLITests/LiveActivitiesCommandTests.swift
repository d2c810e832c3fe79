import Foundation
import Pushgate
import PushgateLocal
import PushgateTesting
import Testing

/// `pushgate liveactivities list|show`: an activity started and updated against the sandbox's
/// ActivityKit device, read back from the command line as its owner, and refused to another user.
@Suite struct LiveActivitiesCommandTests {
    @Test func listAndShowPrintTheActivityItsContentStateAndItsMaskedDevices() async throws {
        let local = try await LocalGateway.start()
        do {
            let phone = try await local.phoneReadyToStart(user: "alice")
            let activities = local.sandbox.state.liveActivities
            let start = try await local.call(
                "POST", "/api/liveactivities/order-9?event=start", user: "alice",
                body: #"{"attributes-type":"DeliveryAttributes","attributes":{},"content-state":{"status":"packed"},"input-push-token":1}"#)
            #expect(start.status == 200, "\(start.bodyText)")
            let token = try #require(activities.activities(deviceID: phone.id).first?.updateToken)
            try await local.registerActivityToken(token, user: "alice", kind: #""Kind":"liveActivity","Activity":"order-9""#)
            let update = try await local.call(
                "POST", "/api/liveactivities/order-9?event=update&priority=5", user: "alice",
                body: #"{"content-state":{"status":"shipped","eta":15}}"#)
            #expect(update.status == 200, "\(update.bodyText)")

            let connection = ["--server", local.baseURL, "--user", "alice:alice"]
            let listed = try await PushgateProcess.run(["liveactivities", "list"] + connection)
            #expect(listed.status == 0, "\(listed.stderr)")
            let rows = listed.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(
                rows.contains { $0.count == 8 && $0.prefix(3) == ["order-9", "alice", "update"] && $0[4...6] == ["2", "1", "-"] },
                "\(listed.stdout)")
            #expect(listed.stdout.hasSuffix("1 Live Activity\n"), "\(listed.stdout)")

            let shown = try await PushgateProcess.run(["liveactivities", "show", "order-9"] + connection)
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout.hasPrefix("live activity order-9 of alice: running\n"), "\(shown.stdout)")
            #expect(shown.stdout.contains("  sends    2, 1 at priority 10\n  channel  none\n"), "\(shown.stdout)")
            #expect(shown.stdout.contains(#"content state: {"status":"shipped","eta":15}"#), "\(shown.stdout)")
            #expect(shown.stdout.contains("devices (update tokens, masked): 1\n"), "\(shown.stdout)")
            #expect(!shown.stdout.contains(token), "the update token is masked")

            let bobs = try await PushgateProcess.run(["liveactivities", "show", "order-9", "--server", local.baseURL, "--user", "bob:bob"])
            #expect(bobs.status == 2 && bobs.stderr.contains("404") && bobs.stderr.contains("no Live Activity 'order-9'"), "\(bobs.stderr)")
            let named = try await PushgateProcess.run(
                ["liveactivities", "show", "order-9", "--owner", "alice", "--server", local.baseURL, "--user", "bob:bob"])
            #expect(named.status == 2 && named.stderr.contains("403"), "\(named.stderr)")
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}
