import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import Testing

@Suite struct HuaweiServiceTests {
    @Test func clientCredentialsBuyAnAccessTokenThatSendsToADevice() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.hms)
            let response = try await client.execute(
                fixture.hmsTokenRequest(clientID: fixture.sandbox.credentials.hmsAppID, secret: fixture.sandbox.credentials.hmsAppSecret))
            #expect(response.status == 200, "\(response.bodyText)")
            #expect(response.json?["expires_in"]?.kind == .number("3600"))
            #expect(response.json?["token_type"]?.stringValue == "Bearer")
            let token = try #require(response.json?["access_token"]?.stringValue)

            let message =
                #"{"data":"{\"m\":\"hi\"}","android":{"urgency":"HIGH","ttl":"86400s","collapse_key":-1},"token":["\#(device.handle)"]}"#
            let sent = try await client.execute(fixture.hmsSendRequest(message: message, accessToken: token))
            #expect(sent.status == 200)
            #expect(sent.json?["code"]?.stringValue == "80000000", "\(sent.bodyText)")
            #expect(sent.json?["msg"]?.stringValue == "Success")
            let requestID = try #require(sent.json?["requestId"]?.stringValue)
            let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
            #expect(inbox.count == 1)
            #expect(inbox.first?.messageID == requestID)
            #expect(inbox.first?.platform == .hms)
            // The message as sent, without its token list.
            #expect(inbox.first?.payload == #"{"data":"{\"m\":\"hi\"}","android":{"urgency":"HIGH","ttl":"86400s","collapse_key":-1}}"#)
            let counts = await fixture.sandbox.state.answeredCounts()
            #expect(counts["hms-token 200"] == 1)
            #expect(counts["hms 200"] == 1)
        }
    }

    @Test func theTokenEndpointAnswersHuaweisSubErrors() async throws {
        try await SandboxFixture.with { fixture, client in
            let credentials = fixture.sandbox.credentials
            let unknownApp = credentials.hmsAppID == "100000000" ? "100000001" : "100000000"
            let cases: [(clientID: String, secret: String, subError: String)] = [
                (credentials.hmsAppID, "not-the-secret", "12304"),
                ("my-app", credentials.hmsAppSecret, "20002"),
                (unknownApp, credentials.hmsAppSecret, "20003"),
            ]
            for (clientID, secret, subError) in cases {
                let response = try await client.execute(fixture.hmsTokenRequest(clientID: clientID, secret: secret))
                #expect(response.status == 400)
                #expect(response.json?["error"]?.kind == .number("1101"), "\(response.bodyText)")
                #expect(response.json?["sub_error"]?.kind == .number(subError), "\(response.bodyText)")
                #expect(response.json?["error_description"]?.stringValue?.isEmpty == false)
            }
            // An app-wide fault: rate limiting with Retry-After, then a token again.
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .hmsToken, action: .respond(status: 503, reason: nil, retryAfterSeconds: 3)))
            let limited = try await client.execute(
                fixture.hmsTokenRequest(clientID: credentials.hmsAppID, secret: credentials.hmsAppSecret))
            #expect(limited.status == 503)
            #expect(limited.header("retry-after") == "3")
            _ = try await fixture.hmsAccessToken(client)
        }
    }

    @Test func aBatchWithAnUninstalledTokenIsAPartialSuccessNamingOnlyThatToken() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.hmsAccessToken(client)
            let first = await fixture.sandbox.createDevice(.hms)
            let gone = await fixture.sandbox.createDevice(.hms)
            let third = await fixture.sandbox.createDevice(.hms)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: gone.id)
            let response = try await client.execute(
                fixture.hmsSendRequest(message: HMSMessage.notify(to: [first.handle, gone.handle, third.handle]), accessToken: token))
            #expect(response.status == 200)
            #expect(response.json?["code"]?.stringValue == "80100000", "\(response.bodyText)")
            let msg = try JSONParser.parse(try #require(response.json?["msg"]?.stringValue))
            #expect(msg["success"]?.kind == .number("2"))
            #expect(msg["failure"]?.kind == .number("1"))
            #expect(msg["illegal_tokens"]?.arrayElements?.compactMap(\.stringValue) == [gone.handle])
            #expect(await fixture.sandbox.state.inbox(deviceID: first.id).count == 1)
            #expect(await fixture.sandbox.state.inbox(deviceID: third.id).count == 1)
            #expect(await fixture.sandbox.state.inbox(deviceID: gone.id).isEmpty)
        }
    }

    @Test func aBatchOfOnlyIllegalTokensIs80300007() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.hmsAccessToken(client)
            let gone = await fixture.sandbox.createDevice(.hms)
            await fixture.sandbox.state.setStatus(.expired, deviceID: gone.id)
            let foreign = await fixture.sandbox.createDevice(.hms, belongsToAnotherApp: true)
            let fcm = await fixture.sandbox.createDevice(.fcm)
            let response = try await client.execute(
                fixture.hmsSendRequest(
                    message: HMSMessage.notify(to: [gone.handle, foreign.handle, fcm.handle, "IQAAAACy-made-up"]), accessToken: token))
            #expect(response.status == 400)
            #expect(response.json?["code"]?.stringValue == "80300007", "\(response.bodyText)")
            #expect(await fixture.sandbox.state.receivedCount() == 0)
        }
    }

    @Test func tokenCountsOutsideOneToAThousandAre80300010() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.hmsAccessToken(client)
            let device = await fixture.sandbox.createDevice(.hms)
            let tooMany = [device.handle] + (0..<1000).map { "IQAAAACy" + String(repeating: "x", count: 110) + String($0) }
            var response = try await client.execute(fixture.hmsSendRequest(message: HMSMessage.notify(to: tooMany), accessToken: token))
            #expect(response.json?["code"]?.stringValue == "80300010", "\(response.bodyText)")
            response = try await client.execute(fixture.hmsSendRequest(message: HMSMessage.notify(to: []), accessToken: token))
            #expect(response.json?["code"]?.stringValue == "80300010", "\(response.bodyText)")
            #expect(await fixture.sandbox.state.receivedCount() == 0)
            // A thousand tokens (about 120 KB) are within the limit: tokens do not count.
            response = try await client.execute(
                fixture.hmsSendRequest(message: HMSMessage.notify(to: Array(tooMany.prefix(1000))), accessToken: token))
            #expect(response.json?["code"]?.stringValue == "80100000", "\(response.bodyText.prefix(200))")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
        }
    }

    @Test func aBodyOver4096BytesBesidesItsTokensIs80300008() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.hmsAccessToken(client)
            let device = await fixture.sandbox.createDevice(.hms)
            let big = #"{"data":"\#(String(repeating: "x", count: 4100))","token":["\#(device.handle)"]}"#
            let response = try await client.execute(fixture.hmsSendRequest(message: big, accessToken: token))
            #expect(response.status == 400)
            #expect(response.json?["code"]?.stringValue == "80300008", "\(response.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).isEmpty)
        }
    }

    @Test func sendsNeedThisAppsUnexpiredAccessToken() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.hms)
            let message = HMSMessage.notify(to: [device.handle])
            let token = try await fixture.hmsAccessToken(client)
            #expect(
                try await client.execute(fixture.hmsSendRequest(message: message, accessToken: token)).json?["code"]?.stringValue
                    == "80000000")

            var absent = fixture.hmsSendRequest(message: message, accessToken: token)
            absent.headers.removeAll { $0.name == "authorization" }
            let cases: [(CurlRequest, String)] = [
                (absent, "80200001"),
                (fixture.hmsSendRequest(message: message, accessToken: ""), "80200001"),
                (
                    fixture.hmsSendRequest(message: message, accessToken: token, appID: fixture.sandbox.credentials.hmsAppID + "0"),
                    "80200001"
                ),
                (fixture.hmsSendRequest(message: message, accessToken: "CgB6e3x9never-issued"), "80200003"),
            ]
            for (request, code) in cases {
                let response = try await client.execute(request)
                #expect(response.status == 401)
                #expect(response.json?["code"]?.stringValue == code, "\(response.bodyText)")
            }
            fixture.clock.advance(seconds: 3600)
            let expired = try await client.execute(fixture.hmsSendRequest(message: message, accessToken: token))
            #expect(expired.status == 401)
            #expect(expired.json?["code"]?.stringValue == "80200003", "\(expired.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
        }
    }

    @Test func validateOnlyAnswersAsIfSentAndDeliversNothing() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.hmsAccessToken(client)
            let device = await fixture.sandbox.createDevice(.hms)
            let gone = await fixture.sandbox.createDevice(.hms)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: gone.id)
            var response = try await client.execute(
                fixture.hmsSendRequest(message: HMSMessage.notify(to: [device.handle]), accessToken: token, validateOnly: true))
            #expect(response.json?["code"]?.stringValue == "80000000", "\(response.bodyText)")
            response = try await client.execute(
                fixture.hmsSendRequest(
                    message: HMSMessage.notify(to: [device.handle, gone.handle]), accessToken: token, validateOnly: true))
            #expect(response.json?["code"]?.stringValue == "80100000", "\(response.bodyText)")
            #expect(await fixture.sandbox.state.receivedCount() == 0)
        }
    }

    @Test func messagesAreCheckedAsPushKitDocuments() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.hmsAccessToken(client)
            let device = await fixture.sandbox.createDevice(.hms)
            let to = #""token":["\#(device.handle)"]"#
            let cases: [(String, String)] = [
                (#"{"data":"x"}"#, "80100001"),
                (#"{\#(to),"topic":"news"}"#, "80100001"),
                (#"{\#(to),"data":{"m":"x"}}"#, "80100001"),
                (#"{\#(to),"notification":"hi"}"#, "80100001"),
                (#"{\#(to),"android":{"urgency":"high"}}"#, "80100001"),
                (#"{\#(to),"android":{"ttl":"1d"}}"#, "80100001"),
                (#"{\#(to),"android":{"notification":[]}}"#, "80100001"),
                (#"{\#(to),"android":{"collapse_key":101}}"#, "80100013"),
                (#"{\#(to),"android":{"collapse_key":-2}}"#, "80100013"),
                (#"{\#(to),"priority":"high"}"#, "80100003"),
                (#"{"token":"\#(device.handle)"}"#, "80100001"),
            ]
            for (message, code) in cases {
                let response = try await client.execute(fixture.hmsSendRequest(message: message, accessToken: token))
                #expect(response.status == 400, "\(message.prefix(80))")
                #expect(response.json?["code"]?.stringValue == code, "\(message.prefix(80)): \(response.bodyText)")
                #expect(response.json?["requestId"]?.stringValue?.isEmpty == false)
            }
            #expect(await fixture.sandbox.state.receivedCount() == 0)
            // A topic is a target of its own (the sandbox has no subscribers: nothing is delivered).
            let topic = try await client.execute(fixture.hmsSendRequest(message: #"{"topic":"news","data":"x"}"#, accessToken: token))
            #expect(topic.json?["code"]?.stringValue == "80000000", "\(topic.bodyText)")
        }
    }

    @Test func anInjectedInternalErrorIsAnsweredOnceThenTheSendGoesThrough() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.hmsAccessToken(client)
            let device = await fixture.sandbox.createDevice(.hms)
            let other = await fixture.sandbox.createDevice(.hms)
            let message = HMSMessage.notify(to: [other.handle, device.handle])
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .hms, handle: device.handle, action: .respond(status: 500, reason: "81000001", retryAfterSeconds: nil)))
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .hms, handle: device.handle, action: .respond(status: 503, reason: nil, retryAfterSeconds: 5)))
            var response = try await client.execute(fixture.hmsSendRequest(message: message, accessToken: token))
            #expect(response.status == 500)
            #expect(response.json?["code"]?.stringValue == "81000001", "\(response.bodyText)")
            #expect(response.json?["msg"]?.stringValue == "System inner error")
            #expect(response.json?["requestId"]?.stringValue?.isEmpty == false)
            response = try await client.execute(fixture.hmsSendRequest(message: message, accessToken: token))
            #expect(response.status == 503)
            #expect(response.header("retry-after") == "5")
            #expect(await fixture.sandbox.state.receivedCount() == 0)
            response = try await client.execute(fixture.hmsSendRequest(message: message, accessToken: token))
            #expect(response.json?["code"]?.stringValue == "80000000", "\(response.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
            #expect(await fixture.sandbox.state.answeredCounts()["hms 500"] == 1)
        }
    }

    @Test func theSummaryNamesTheEndpointsAndTheSecretIsAPrivateFile() async throws {
        try await SandboxFixture.with { fixture, _ in
            let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/sandbox.json"))))
            let endpoints = fixture.sandbox.endpoints
            #expect(summary["endpoints"]?["hms"]?.stringValue == endpoints.hms)
            #expect(summary["endpoints"]?["hmsToken"]?.stringValue == endpoints.hms + "/oauth2/v3/token")
            #expect(summary["hms"]?["appId"]?.stringValue == fixture.sandbox.credentials.hmsAppID)
            let path = try #require(fixture.files["hmsAppSecret"])
            #expect(try String(contentsOfFile: path, encoding: .utf8) == fixture.sandbox.credentials.hmsAppSecret)
            let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(permissions == 0o600)
        }
    }
}

/// Push Kit message bodies for the tests.
enum HMSMessage {
    /// A notification message to `tokens`.
    static func notify(to tokens: [String]) -> String {
        let listed = tokens.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"notification":{"title":"Hi","body":"From bob"},"android":{"urgency":"NORMAL","ttl":"86400s"},"token":[\#(listed)]}"#
    }
}

extension SandboxFixture {
    /// A client-credentials request to Huawei's token endpoint on the sandbox.
    func hmsTokenRequest(clientID: String, secret: String) -> CurlRequest {
        CurlRequest(
            url: sandbox.endpoints.hmsToken, headers: [("content-type", "application/x-www-form-urlencoded")],
            body: Array(
                FormEncoding.encode([("grant_type", "client_credentials"), ("client_id", clientID), ("client_secret", secret)]).utf8))
    }

    /// An access token for the sandbox's Push Kit app.
    func hmsAccessToken(_ client: CurlHTTPClient) async throws -> String {
        let response = try await client.execute(
            hmsTokenRequest(clientID: sandbox.credentials.hmsAppID, secret: sandbox.credentials.hmsAppSecret))
        guard let token = response.json?["access_token"]?.stringValue else {
            throw CurlError.unexpected("token endpoint answered \(response.status) \(response.bodyText)")
        }
        return token
    }

    /// A v1 send of `message` (a JSON object text) for the sandbox's app (or `appID`).
    func hmsSendRequest(message: String, accessToken: String, appID: String? = nil, validateOnly: Bool = false) -> CurlRequest {
        CurlRequest(
            url: "\(sandbox.endpoints.hms)/v1/\(appID ?? sandbox.credentials.hmsAppID)/messages:send",
            headers: [("authorization", "Bearer \(accessToken)"), ("content-type", "application/json;charset=utf-8")],
            body: Array(#"{"validate_only":\#(validateOnly),"message":\#(message)}"#.utf8))
    }
}
