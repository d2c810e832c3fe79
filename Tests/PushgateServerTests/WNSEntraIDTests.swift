import Foundation
import PNSSandbox
import Pushgate
import PushgateTesting
import Testing

/// WNS with Microsoft Entra ID, as Windows App SDK apps authenticate: the gateway's sandbox
/// configuration uses an Entra ID application (tenant, client id, secret; scope
/// https://wns.windows.com/.default), and a refused or expired token is refreshed once.
@Suite struct WNSEntraIDTests {
    @Test func aWindowsDeviceReceivesThroughAnEntraIDTokenRefreshedOnceWhenRevoked() async throws {
        try await GatewayFixture.inProcess { fixture in
            let wns = try #require(fixture.local.server.gateway.app.configuration.services.wns)
            #expect(wns.tenantID == fixture.sandbox.credentials.entraTenantID)
            #expect(wns.scope == "https://wns.windows.com/.default")
            #expect(wns.tokenEndpoint.hasSuffix("/\(fixture.sandbox.credentials.entraTenantID)/oauth2/v2.0/token"))

            let device = await fixture.sandbox.createDevice(.wns)
            _ = try await fixture.register(device, user: "alice")
            let first = try await fixture.call("POST", "/api/notifications?pns=wns&to_tag=alice", user: "bob", body: #""one""#)
            #expect(first.bodyText.contains(#""success":1"#), "\(first.bodyText)")
            // The token came from the tenant's v2.0 endpoint (the sandbox counts its answers).
            #expect(await fixture.sandbox.state.answeredCounts()["wns-token 200"] == 1)

            // The service forgets every token: the next send gets 401, refreshes once, delivers.
            await fixture.sandbox.state.revokeAccessTokens()
            let second = try await fixture.call("POST", "/api/notifications?pns=wns&to_tag=alice", user: "bob", body: #""two""#)
            #expect(second.bodyText.contains(#""success":1"#), "\(second.bodyText)")
            #expect(await fixture.sandbox.state.answeredCounts()["wns-token 200"] == 2)
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 2)
        }
    }

    @Test func aWrongSecretIsInvalidCredentialsWithEntraIDsReason() async throws {
        try await GatewayFixture.inProcess(rewrite: GatewayFixture.service("wns") { $0["clientSecret"] = ["value": "not-the-secret"] }) {
            fixture in
            let device = await fixture.sandbox.createDevice(.wns)
            _ = try await fixture.register(device, user: "alice")
            let sent = try await fixture.call("POST", "/api/notifications?pns=wns&to_tag=alice", user: "alice", body: #""x""#)
            #expect(sent.bodyText.contains("InvalidCredentials") && sent.bodyText.contains("AADSTS7000215"), "\(sent.bodyText)")
            #expect(!sent.bodyText.contains("not-the-secret"))
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).isEmpty)
        }
    }
}
