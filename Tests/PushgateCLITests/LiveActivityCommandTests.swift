import Foundation
import Pushgate
import PushgateLocal
import PushgateTesting
import Testing

/// `pushgate send --live-activity`: a start, an update and an end of alice's activity from the
/// command line, against the sandbox's ActivityKit device.
@Suite struct LiveActivityCommandTests {
    @Test func startUpdateAndEndFromTheCommandLine() async throws {
        let local = try await LocalGateway.start()
        do {
            let phone = try await local.phoneReadyToStart(user: "alice")
            let activities = local.sandbox.state.liveActivities
            let common = ["send", "--server", local.baseURL, "--user", "alice:alice", "--live-activity", "order-1"]
            let start = try await PushgateProcess.run(
                common + ["--event", "start", "--attributes-type", "DeliveryAttributes", "--property", "status=packed", "Packed"])
            #expect(start.status == 0, "\(start.stderr)")
            #expect(start.stdout.contains("state Completed: 1 delivered, 0 failed"), "\(start.stdout)")
            let token = try #require(activities.activities(deviceID: phone.id).first?.updateToken)
            try await local.registerActivityToken(token, user: "alice", kind: #""Kind":"liveActivity","Activity":"order-1""#)
            let update = try await PushgateProcess.run(common + ["--event", "update", "--priority", "5", "--property", "status=shipped"])
            #expect(update.status == 0, "\(update.stderr)")
            #expect(activities.activity(updateToken: token)?.contentState?.serialized() == Array(#"{"status":"shipped"}"#.utf8))
            let end = try await PushgateProcess.run(common + ["--event", "end", "--content-state", #"{"status":"delivered"}"#])
            #expect(end.status == 0, "\(end.stderr)")
            #expect(activities.activity(updateToken: token).map { activities.state(of: $0) } == .ended)
            let refused = try await PushgateProcess.run(common + ["--event", "pause"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("--event must be start, update or end"), "\(refused.stderr)")
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}
