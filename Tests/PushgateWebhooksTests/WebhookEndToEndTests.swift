import Foundation
import PNSSandbox
import Pushgate
import PushgateTesting
import Testing

/// The issue's "done when": a send to a dead device (the sandbox answers it gone) makes the
/// gateway post `registration.pruned` to the app's receiver, signed, with the registration's
/// owner, tags and platform and the service's reason; the page's `delivery.failed` and the
/// notification's `notification.completed` come too, in the store's order.
@Suite struct WebhookEndToEndTests {
    @Test func aReceiverGetsRegistrationPrunedWithAValidSignatureAfterASendToADeadDevice() async throws {
        let receiver = try await WebhookTestReceiver.start(secret: "whsec_e2e", https: true)
        defer { Task { await receiver.stop() } }
        let rewrite: (inout [String: Any]) -> Void = { config in
            config["webhooks"] = ["allowedHosts": [receiver.allowListEntry], "caFile": receiver.caFile ?? ""]
            var apps = config["apps"] as? [String: Any] ?? [:]
            var app = apps["default"] as? [String: Any] ?? [:]
            app["webhooks"] = [
                "receivers": [
                    [
                        "name": "backend", "url": receiver.url, "secret": ["value": "whsec_e2e"],
                        "events": ["registration.pruned", "delivery.failed", "notification.completed"],
                    ]
                ]
            ]
            apps["default"] = app
            config["apps"] = apps
        }
        try await GatewayFixture.with(rewrite: rewrite) { fixture in
            let alive = await fixture.sandbox.createDevice(.apns)
            let dead = await fixture.sandbox.createDevice(.apns)
            _ = try await fixture.register(alive, user: "alice", tags: ["news"])
            let deadID = try await fixture.register(dead, user: "alice", tags: ["news"])
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: dead.id)
            let sent = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "alice", body: #""hello""#)
            #expect(sent.status == 200, "\(sent.bodyText)")

            let events = try await eventually {
                receiver.events
            } until: { events in
                Set(events.map(\.type)) == ["registration.pruned", "delivery.failed", "notification.completed"]
            }
            #expect(receiver.refused.isEmpty, "every POST verified: \(receiver.refused)")
            let pruned = try #require(events.first { $0.type == "registration.pruned" })
            #expect(pruned.data["registration"] == deadID)
            #expect(pruned.data["owner"] == "alice")
            #expect(pruned.data["platform"] == "apns")
            #expect(pruned.data["tags"]?.contains("news") == true && pruned.data["tags"]?.contains("username:alice") == true)
            #expect(pruned.data["reason"]?.hasPrefix("Unregistered") == true, "the service's reason: \(pruned)")
            #expect(pruned.data["handle"] != dead.handle, "masked: \(pruned)")
            let failed = try #require(events.first { $0.type == "delivery.failed" })
            #expect(failed.data["registration"] == deadID)
            let completed = try #require(events.first { $0.type == "notification.completed" })
            #expect(completed.data["state"] == "Completed")
            #expect([pruned, failed, completed].allSatisfy { $0.notification == completed.notification })
            // In the store's order: the page's record, then the removal, then the end.
            #expect(failed.sequence < pruned.sequence && pruned.sequence < completed.sequence, "\(events)")
            // Recorded posted once each POST's answer came back.
            let counts = try await eventually {
                try await fixture.store.webhookEventCounts(app: .default)
            } until: {
                $0.pending == 0
            }
            #expect(counts == WebhookEventCounts(pending: 0, parked: 0))
        }
    }
}
