import Foundation
import Pushgate
import PushgateLocal
import PushgateTesting
import Testing

/// `pushgate webhooks list|retry|test` against a running gateway whose receiver fails: the events
/// of a send to a dead device park once their (short) retry time has passed, `list` shows them,
/// `test` reports the receiver's failure and then its success, `retry` sends the parked events,
/// and a user who is no admin is refused.
@Suite struct WebhooksCommandTests {
    @Test func listRetryAndTestParkedEventsThroughTheAdminAPI() async throws {
        let receiver = try await WebhookTestReceiver.start(secret: "whsec_cli", https: true)
        defer { Task { await receiver.stop() } }
        receiver.fail(next: 1_000_000)
        let local = try await LocalGateway.start(
            rewrite: { config in
                config["webhooks"] = ["allowedHosts": [receiver.allowListEntry], "caFile": receiver.caFile ?? "", "retryForSeconds": 1]
                var apps = config["apps"] as? [String: Any] ?? [:]
                var app = apps["default"] as? [String: Any] ?? [:]
                app["webhooks"] = [
                    "receivers": [
                        ["name": "backend", "url": receiver.url, "secret": ["value": "whsec_cli"], "events": ["registration.pruned"]]
                    ]
                ]
                apps["default"] = app
                config["apps"] = apps
            },
            adjust: { $0.auth.admins = ["admin"] })
        do {
            let dead = await local.sandbox.createDevice(.apns)
            let id = try await local.register(dead, user: "alice")
            await local.sandbox.state.setStatus(.uninstalled, deviceID: dead.id)
            #expect(try await local.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "alice", body: #""x""#).status == 200)

            let admin = ["--server", local.baseURL, "--user", "admin:admin"]
            let listed = try await eventually {
                try await PushgateProcess.run(["webhooks", "list"] + admin)
            } until: {
                $0.stdout.contains("1 parked, 0 pending")
            }
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.stdout.contains("backend") && listed.stdout.contains("HTTP 500"), "\(listed.stdout)")
            let json = try await PushgateProcess.run(["webhooks", "list", "--json"] + admin)
            #expect(json.stdout.contains(#"registration.pruned"#) && json.stdout.contains(id), "\(json.stdout)")

            let failing = try await PushgateProcess.run(["webhooks", "test"] + admin)
            #expect(failing.status == 1, "\(failing.stdout) \(failing.stderr)")
            #expect(failing.stdout.contains("backend \(receiver.url): FAILED, HTTP 500"), "\(failing.stdout)")
            receiver.fail(next: 0)
            let passing = try await PushgateProcess.run(["webhooks", "test", "--receiver", "backend"] + admin)
            #expect(passing.status == 0, "\(passing.stdout) \(passing.stderr)")
            #expect(receiver.events.map(\.type) == ["ping"])
            let unknown = try await PushgateProcess.run(["webhooks", "test", "--receiver", "nobody"] + admin)
            #expect(unknown.status == 2, "\(unknown.stderr)")

            let retried = try await PushgateProcess.run(["webhooks", "retry"] + admin)
            #expect(retried.stdout == "1 event due again\n", "\(retried.stdout) \(retried.stderr)")
            let events = try await eventually {
                receiver.events
            } until: {
                $0.contains { $0.type == "registration.pruned" }
            }
            #expect(events.first { $0.type == "registration.pruned" }?.data["registration"] == id)

            let user = try await PushgateProcess.run(["webhooks", "list", "--server", local.baseURL, "--user", "alice:alice"])
            #expect(user.status == 2, "\(user.stderr)")
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}
