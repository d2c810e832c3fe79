import Foundation
import PNSSandbox
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateGateway
import PushgateServer
import PushgateTesting
import Testing

/// A configuration reloaded under a running send: the APNs key rotated, a template and a hub
/// rule's key changed, a broken configuration refused.
@Suite struct ReloadTests {
    func json(_ response: CurlResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.bodyText)")
    }

    @Test func aReloadRotatesTheAPNsKeyAndATemplateUnderARunningSend() async throws {
        try await GatewayFixture.inProcess { fixture in
            let directory = fixture.local.directory
            let configPath = directory + "/config.json"
            var devices: [SandboxDevice] = []
            for _ in 0..<40 {
                let device = await fixture.sandbox.createDevice(.apns)
                _ = try await fixture.register(device, user: "alice")
                devices.append(device)
            }
            // Every request of the first send waits 1.5 s in the sandbox: it is on the wire during the reload.
            await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .delay(milliseconds: 1500), count: 40))
            let running = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&async=true", user: "bob", body: #""before""#)
            #expect(running.status == 202, "\(running.bodyText)")
            let id = try #require(try json(running)["notificationId"] as? String)
            _ = try await eventually {
                try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "bob"))["state"] as? String
            } until: {
                $0 == "Processing"
            }

            // A new APNs key of the team, a new template, a hub rule's new key.
            let (keyID, privateKey) = fixture.sandbox.issueAPNSKey()
            let keyPath = directory + "/AuthKey_\(keyID).p8"
            try privateKey.write(toFile: keyPath, atomically: true, encoding: .utf8)
            var config = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configPath))) as? [String: Any])
            var apps = try #require(config["apps"] as? [String: Any])
            var app = try #require(apps["default"] as? [String: Any])
            var services = try #require(app["services"] as? [String: Any])
            var apns = try #require(services["apns"] as? [String: Any])
            apns["token"] = ["keyId": keyID, "teamId": fixture.sandbox.credentials.apnsTeamID, "privateKey": ["file": keyPath]]
            services["apns"] = apns
            app["services"] = services
            apps["default"] = app
            config["apps"] = apps
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
            try #"{"aps": {"alert": "{'Rotated: ' + $(message)}"}}"#.write(
                toFile: directory + "/templates/notify.apns.json", atomically: true, encoding: .utf8)
            let oldHub = try HubAPITests.Client(fixture)
            try "a-new-shared-access-key-for-the-full-rule".write(
                toFile: directory + "/hub-keys/default.\(SharedAccessRule.defaultFullName).key", atomically: true, encoding: .utf8)

            let report = try await fixture.local.server.reload(try ConfigurationLoader.load(file: configPath))
            #expect(report.apps == [.default] && report.restartNeeded.isEmpty, "\(report)")

            // The running send finishes with what it started with: every device, the old template.
            let finished = try await eventually {
                try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "bob"))
            } until: {
                $0["state"] as? String == "Completed"
            }
            #expect(finished["success"] as? Int == 40, "\(finished)")
            for device in devices {
                let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
                #expect(inbox.count == 1 && inbox.first?.payload.contains("From bob: before") == true, "\(inbox)")
            }
            // What is sent from now on: the new template, signed with the new key.
            let after = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""after""#)
            let afterSuccess = try json(after)["success"] as? Int
            #expect(after.status == 200 && afterSuccess == 40, "\(after.bodyText)")
            let latest = await fixture.sandbox.state.inbox(deviceID: devices[0].id).last
            #expect(latest?.payload.contains("Rotated: after") == true, "\(String(describing: latest))")
            #expect(fixture.sandbox.state.apnsTokens(keyID: keyID) >= 1)
            // The hub rule's old key is refused, its new one taken.
            #expect(try await oldHub.call("GET", "registrations").status == 401)
            let newHub = try HubAPITests.Client(fixture)
            #expect(try await newHub.call("GET", "registrations").status == 200)

            // A configuration that does not load is refused, naming what is wrong; the running one stays.
            try #"{"aps": {"alert": $(message"#.write(
                toFile: directory + "/templates/notify.apns.json", atomically: true, encoding: .utf8)
            await #expect(throws: (any Error).self) {
                try await fixture.local.server.reload(try ConfigurationLoader.load(file: configPath))
            }
            do {
                _ = try await fixture.local.server.reload(try ConfigurationLoader.load(file: configPath))
            } catch {
                #expect("\(error)".contains("notify.apns.json"), "\(error)")
            }
            try #"{"aps": {"alert": "fine"}}"#.write(toFile: directory + "/templates/notify.apns.json", atomically: true, encoding: .utf8)
            try "{}".write(toFile: keyPath, atomically: true, encoding: .utf8)
            do {
                _ = try await fixture.local.server.reload(try ConfigurationLoader.load(file: configPath))
                Issue.record("a reload with a broken APNs key was taken")
            } catch {
                #expect("\(error)".contains("apns"), "\(error)")
            }
            let still = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""still""#)
            let stillSuccess = try json(still)["success"] as? Int
            #expect(still.status == 200 && stillSuccess == 40, "\(still.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[0].id).last?.payload.contains("Rotated: still") == true)
        }
    }
}
