import Foundation
import Pushgate
import PushgateCurl
import PushgateSQLite
import PushgateTesting
import Testing

/// Outcome webhooks survive a crash: the gateway records a send's outcomes (and with them their
/// events) while its receiver answers 500, is killed with SIGKILL, and once started again posts
/// every event, each once accepted, with its sequence.
@Suite struct WebhookRecoveryTests {
    @Test func killNineBetweenOutcomeAndPostLosesNoEvent() async throws {
        let receiver = try await WebhookTestReceiver.start(secret: "whsec_kill", https: true)
        defer { Task { await receiver.stop() } }
        receiver.fail(next: 1_000_000)
        let folder = NSTemporaryDirectory() + "pushgate-webhook-crash-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sandbox = try await StandingSandbox.start(in: folder) { config in
            config["webhooks"] = ["allowedHosts": [receiver.allowListEntry], "caFile": receiver.caFile ?? "", "timeoutSeconds": 2]
            var apps = config["apps"] as? [String: Any] ?? [:]
            var app = apps["default"] as? [String: Any] ?? [:]
            app["webhooks"] = [
                "receivers": [
                    [
                        "name": "backend", "url": receiver.url, "secret": ["value": "whsec_kill"],
                        "events": ["registration.pruned", "delivery.failed", "notification.completed"],
                    ]
                ]
            ]
            apps["default"] = app
            config["apps"] = apps
        }
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1))
        let created = try await client.execute(
            CurlRequest(
                method: "POST", url: sandbox.control + "/devices", headers: [("Content-Type", "application/json")],
                body: Array(#"{"platform":"apns","count":6}"#.utf8)))
        let devices = try #require(try JSONSerialization.jsonObject(with: Data(created.body)) as? [[String: Any]])
        let dead = devices.prefix(3).compactMap { $0["id"] as? String }
        for id in dead {
            _ = try await client.execute(CurlRequest(method: "POST", url: sandbox.control + "/devices/\(id)/uninstall"))
        }
        let registrations = try devices.enumerated().map { index, device in
            try Registration(
                id: try RegistrationID(String(format: "w%03d", index)),
                handle: DeviceHandle(uncheckedPlatform: .apns, value: device["handle"] as? String ?? ""), tags: [try Tag.username("carol")],
                owner: "carol")
        }
        let store = try await SQLiteStore.open(path: sandbox.storePath)
        try await store.restore(registrations, now: RegistrationSeeds.now)
        await store.close()

        let (first, server) = try await RunningProcess.serve(config: sandbox.configPath)
        let sent = try await client.execute(
            CurlRequest(
                method: "POST", url: server + "/api/notifications?pns=apns&to_tag=carol",
                headers: [("Authorization", "Basic " + Data("bob:bob".utf8).base64EncodedString()), ("Content-Type", "application/json")],
                body: Array(#""anyone there?""#.utf8)))
        #expect(sent.status == 200, "\(sent.bodyText)")
        // The poster has tried (and the receiver refused): the events are stored, not delivered.
        #expect(try await eventually { !receiver.answers.isEmpty })
        kill(first.processIdentifier, SIGKILL)
        _ = try await first.waitForExit(seconds: 10)
        #expect(receiver.events.isEmpty)

        receiver.fail(next: 0)
        let (second, _) = try await RunningProcess.serve(config: sandbox.configPath)
        let events = try await eventually(timeout: .seconds(60)) {
            receiver.events
        } until: { events in
            Set(events.map(\.id)).count >= 7
        }
        let byType = Dictionary(grouping: events, by: \.type)
        #expect(byType["delivery.failed"]?.count == 3, "\(events)")
        #expect(byType["registration.pruned"]?.count == 3, "\(events)")
        #expect(byType["notification.completed"]?.count == 1, "\(events)")
        #expect(Set(byType["registration.pruned"]?.compactMap { $0.data["registration"] } ?? []) == ["w000", "w001", "w002"])
        #expect(Set(events.map(\.sequence)).count == events.count, "each event its own sequence: \(events)")
        #expect(receiver.refused.isEmpty, "\(receiver.refused)")
        await client.shutdown()
        #expect(try await second.terminate() == 0)
        #expect(try await sandbox.process.terminate() == 0)
    }
}
