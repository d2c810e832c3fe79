import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import Testing

@Suite struct WNSServiceTests {
    static let toast = #"<toast><visual><binding template="ToastText01"><text id="1">From bob: hi</text></binding></visual></toast>"#

    func accessToken(_ fixture: SandboxFixture, _ client: CurlHTTPClient, secret: String? = nil) async throws -> CurlResponse {
        let credentials = fixture.sandbox.credentials
        let form =
            "grant_type=client_credentials&client_id=\(FormEncodingForTests.encode(credentials.wnsClientID))"
            + "&client_secret=\(FormEncodingForTests.encode(secret ?? credentials.wnsClientSecret))&scope=notify.windows.com"
        return try await client.execute(
            CurlRequest(
                url: fixture.sandbox.endpoints.wnsToken, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Array(form.utf8)))
    }

    func send(
        _ client: CurlHTTPClient, channel: String, token: String, type: String = "wns/toast", contentType: String = "text/xml",
        body: String = toast, extra: [(String, String)] = []
    ) async throws -> CurlResponse {
        try await client.execute(
            CurlRequest(
                url: channel, headers: [("Authorization", "Bearer \(token)"), ("X-WNS-Type", type), ("Content-Type", contentType)] + extra,
                body: Array(body.utf8)))
    }

    @Test func clientCredentialsBuyATokenThatDeliversAToast() async throws {
        try await SandboxFixture.with(http: .http1) { fixture, client in
            let tokenResponse = try await accessToken(fixture, client)
            #expect(tokenResponse.status == 200)
            #expect(tokenResponse.json?["token_type"]?.stringValue == "bearer")
            #expect(tokenResponse.json?["expires_in"]?.kind == .number("86400"))
            let token = try #require(tokenResponse.json?["access_token"]?.stringValue)

            let device = await fixture.sandbox.createDevice(.wns)
            #expect(device.handle.hasPrefix(fixture.sandbox.endpoints.wns + "/?token="))
            #expect(
                try HandlePolicy(wnsChannelHosts: [fixture.sandbox.endpoints.wnsChannelHost]).validate(device.handle, for: .wns).value
                    == device.handle)
            let response = try await send(client, channel: device.handle, token: token, extra: [("X-WNS-RequestForStatus", "true")])
            #expect(response.status == 200)
            #expect(response.httpVersion == "1.1")
            #expect(response.header("X-WNS-Status") == "received")
            #expect(response.header("X-WNS-DeviceConnectionStatus") == "connected")
            let messageID = try #require(response.header("X-WNS-Msg-ID"))
            #expect(messageID.count == 16)
            let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
            #expect(inbox.map(\.payload) == [Self.toast])
            #expect(inbox.first?.header("x-wns-type") == "wns/toast")
            #expect(inbox.first?.messageID == messageID)
        }
    }

    @Test func wrongCredentialsAndMissingTokensAreRefused() async throws {
        try await SandboxFixture.with(http: .http1) { fixture, client in
            let bad = try await accessToken(fixture, client, secret: "wrong")
            #expect(bad.status == 400)
            #expect(bad.json?["error"]?.stringValue == "invalid_client")
            let device = await fixture.sandbox.createDevice(.wns)
            let response = try await send(client, channel: device.handle, token: "made-up")
            #expect(response.status == 401)

            let token = try #require(try await accessToken(fixture, client).json?["access_token"]?.stringValue)
            #expect(try await send(client, channel: device.handle, token: token).status == 200)
            await fixture.sandbox.state.revokeAccessTokens()
            #expect(try await send(client, channel: device.handle, token: token).status == 401)
        }
    }

    @Test func payloadsAndHeadersAreCheckedWithStatusesAndDescriptions() async throws {
        try await SandboxFixture.with(http: .http1) { fixture, client in
            let token = try #require(try await accessToken(fixture, client).json?["access_token"]?.stringValue)
            let device = await fixture.sandbox.createDevice(.wns)
            let cases: [(type: String, contentType: String, body: String, extra: [(String, String)], status: Int, text: String)] = [
                ("wns/popup", "text/xml", Self.toast, [], 400, "not valid"),
                ("wns/toast", "application/octet-stream", Self.toast, [], 400, "text/xml"),
                ("wns/raw", "text/xml", "42", [], 400, "octet-stream"),
                ("wns/badge", "text/xml", Self.toast, [], 400, "does not match"),
                ("wns/toast", "text/xml", "<toast><visual></toast>", [], 400, "not valid"),
                ("wns/toast", "text/xml", Self.toast, [("X-WNS-TTL", "soon")], 400, "X-WNS-TTL"),
                ("wns/toast", "text/xml", Self.toast, [("X-WNS-Tag", "t1")], 400, "tiles only"),
                ("wns/toast", "text/xml", Self.toast, [("X-WNS-Cache-Policy", "maybe")], 400, "cache"),
                ("wns/raw", "application/octet-stream", String(repeating: "r", count: 5001), [], 413, "5000"),
            ]
            for item in cases {
                let response = try await send(
                    client, channel: device.handle, token: token, type: item.type, contentType: item.contentType, body: item.body,
                    extra: item.extra)
                #expect(response.status == item.status, "\(item.type) \(item.extra)")
                #expect(
                    response.header("X-WNS-Error-Description")?.contains(item.text) == true,
                    "\(response.header("X-WNS-Error-Description") ?? "none")")
            }
            var missingType = CurlRequest(
                url: device.handle, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "text/xml")],
                body: Array(Self.toast.utf8))
            #expect(try await client.execute(missingType).status == 400)
            missingType.method = "GET"
            #expect(try await client.execute(missingType).status == 405)

            let raw = try await send(
                client, channel: device.handle, token: token, type: "wns/raw", contentType: "application/octet-stream", body: "7")
            #expect(raw.status == 200)
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).map(\.payload) == ["7"])
        }
    }

    @Test func unknownExpiredAndThrottledChannels() async throws {
        try await SandboxFixture.with(http: .http1) { fixture, client in
            let token = try #require(try await accessToken(fixture, client).json?["access_token"]?.stringValue)
            let device = await fixture.sandbox.createDevice(.wns)
            #expect(try await send(client, channel: fixture.sandbox.endpoints.wns + "/?token=unknown", token: token).status == 404)
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .wns, handle: device.handle, action: .respond(status: 406, reason: "Throttled", retryAfterSeconds: 60)))
            let throttled = try await send(client, channel: device.handle, token: token)
            #expect(throttled.status == 406)
            #expect(throttled.header("Retry-After") == "60")
            await fixture.sandbox.state.setStatus(.expired, deviceID: device.id)
            #expect(try await send(client, channel: device.handle, token: token).status == 410)
            let foreign = await fixture.sandbox.createDevice(.wns, belongsToAnotherApp: true)
            #expect(try await send(client, channel: foreign.handle, token: token).status == 403)
        }
    }
}

/// Percent-encoding for form bodies in tests.
enum FormEncodingForTests {
    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }
}
