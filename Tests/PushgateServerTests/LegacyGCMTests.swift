import Foundation
import PNSSandbox
import Pushgate
import PushgateTesting
import Testing

/// `gcm` registrations after Google's shutdown of the legacy API: delivered through FCM v1 by
/// default, through the legacy endpoint when `services.gcm.delivery` says `legacy`.
@Suite struct LegacyGCMTests {
    @Test func aGcmSendGoesThroughFCMv1AndItsAnswersAreTheLegacyOutcomes() async throws {
        try await GatewayFixture.inProcess { fixture in
            let device = await fixture.sandbox.createDevice(.gcm)
            _ = try await fixture.register(device, user: "alice")
            let sent = try await fixture.call("POST", "/api/notifications?pns=gcm&to_tag=alice", user: "alice", body: #""via v1""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            #expect(sent.bodyText.contains(#""platform":"gcm""#) && sent.bodyText.contains(#""success":1"#), "\(sent.bodyText)")
            // The service's name for the message is FCM v1's.
            #expect(sent.bodyText.contains("projects/pushgate-sandbox/messages/"), "\(sent.bodyText)")
            let payload = try JSONParser.parse(try #require(await fixture.sandbox.state.inbox(deviceID: device.id).last).payload)
            #expect(payload["message"]?["data"]?["message"]?.stringValue == "From alice: via v1")

            // An uninstalled app: v1's UNREGISTERED is the legacy NotRegistered, ExpiredChannel, pruned.
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: device.id)
            let gone = try await fixture.call("POST", "/api/notifications?pns=gcm&to_tag=alice", user: "alice", body: #""gone""#)
            #expect(gone.bodyText.contains("ExpiredChannel") && gone.bodyText.contains("UNREGISTERED"), "\(gone.bodyText)")
            #expect(try await fixture.call("POST", "/api/notifications?pns=gcm&to_tag=alice", user: "alice", body: #""x""#).status == 404)
        }
    }

    @Test func deliveryLegacyKeepsTheLegacyEndpoint() async throws {
        try await GatewayFixture.inProcess(rewrite: GatewayFixture.service("gcm") { $0["delivery"] = "legacy" }) { fixture in
            let device = await fixture.sandbox.createDevice(.gcm)
            _ = try await fixture.register(device, user: "alice")
            let sent = try await fixture.call("POST", "/api/notifications?pns=gcm&to_tag=alice", user: "bob", body: #""legacy""#)
            #expect(sent.bodyText.contains(#""success":1"#), "\(sent.bodyText)")
            let payload = try JSONParser.parse(try #require(await fixture.sandbox.state.inbox(deviceID: device.id).last).payload)
            #expect(payload["registration_ids"]?.arrayElements?.first?.stringValue == device.handle)
            #expect(payload["data"]?["message"]?.stringValue == "From bob: legacy")
        }
    }
}
