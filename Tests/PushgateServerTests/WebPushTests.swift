import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateTesting
import Testing

/// Browsers as a fourth platform, end to end: a subscription registered through the tutorial API,
/// a send to its tag encrypted for it (the sandbox's Web Push service decrypts it with the
/// subscription's private key), a gone subscription pruned, an endpoint off the allow-list refused.
@Suite struct WebPushTests {
    func json(_ response: CurlResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.bodyText)")
    }

    @Test func aBrowserRegisteredThroughTheTutorialAPIReceivesTheDecryptedText() async throws {
        try await GatewayFixture.inProcess { fixture in
            let browser = await fixture.sandbox.createDevice(.browser)
            let phone = await fixture.sandbox.createDevice(.apns)
            let id = try await fixture.register(browser, user: "alice")
            _ = try await fixture.register(phone, user: "alice")

            // The endpoint alone finds the registration again (a browser knows its endpoint).
            let endpoint = try #require(WebPushSubscription(handleValue: browser.handle)?.endpoint)
            let again = try await fixture.call(
                "POST", "/api/register?handle=\(endpoint.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            #expect(again.bodyText == "\"\(id)\"")
            // Also as a client may spell it (the scheme in capitals, the default port written out).
            let spelled = "HTTPS://" + endpoint.dropFirst("https://".count)
            let respelled = try await fixture.call(
                "POST", "/api/register?handle=\(spelled.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            #expect(respelled.bodyText == "\"\(id)\"")

            let sent = try await fixture.call("POST", "/api/notifications?pns=all&to_tag=alice", user: "alice", body: #""hello, browser""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            let inbox = await fixture.sandbox.state.inbox(deviceID: browser.id)
            let received = try #require(inbox.first)
            // The default template is Declarative Web Push; the sandbox decrypted it.
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(received.payload.utf8)) as? [String: Any])
            #expect(payload["web_push"] as? Int == 8030, "\(received.payload)")
            let notification = try #require(payload["notification"] as? [String: Any])
            #expect(notification["title"] as? String == "From alice")
            #expect(notification["body"] as? String == "hello, browser")
            #expect(received.header("Content-Encoding") == "aes128gcm")
            // The template's TTL, less the whole seconds the send took to go out (a loaded machine's second or two).
            let ttl = received.header("TTL").flatMap { Int($0) }
            #expect(ttl.map { (86390...86400).contains($0) } == true, "\(String(describing: ttl))")
            #expect(await fixture.sandbox.state.inbox(deviceID: phone.id).count == 1)

            let outcome = try json(sent)
            let results = try #require(outcome["targets"] as? [[String: Any]], "\(outcome)")
            let browserResult = try #require(results.first { $0["platform"] as? String == "browser" }, "\(results)")
            #expect(browserResult["outcome"] as? String == "Success", "\(browserResult)")
            // The handle is shown as its endpoint, masked; the keys never.
            let shown = try #require(browserResult["handle"] as? String)
            #expect(!shown.contains("p256dh") && !shown.contains("auth") && shown.hasPrefix("https://127.0.0.1"), "\(shown)")
        }
    }

    @Test func aGoneSubscriptionIsPrunedAndAForeignEndpointIsRefused() async throws {
        try await GatewayFixture.inProcess { fixture in
            let browser = await fixture.sandbox.createDevice(.browser)
            let id = try await fixture.register(browser, user: "alice")
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: browser.id)
            let sent = try await fixture.call("POST", "/api/notifications?pns=browser&to_tag=alice", user: "bob", body: #""gone""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            #expect(sent.bodyText.contains("ExpiredChannel"), "\(sent.bodyText)")
            #expect(try await fixture.store.registration(id: try RegistrationID(id), app: AppID("default")) == nil)

            // An endpoint on a host that is not on handles.webPushHosts is refused at registration.
            var foreign = try #require(WebPushSubscription(handleValue: browser.handle))
            foreign.endpoint = "https://push.attacker.example/wpush/abc"
            let reserved = try await fixture.call("POST", "/api/register")
            let newID = String(reserved.bodyText.dropFirst().dropLast())
            let refused = try await fixture.call(
                "PUT", "/api/register/\(newID)", body: #"{"Platform":"browser","Handle":\#(foreign.handleValue),"Tags":[]}"#)
            #expect(refused.status == 400)
            #expect(refused.bodyText.contains("push.attacker.example") && refused.bodyText.contains("allow-list"), "\(refused.bodyText)")
        }
    }

    /// A `p256dh` of the right form (65 bytes, 0x04 first) that is no point on P-256 would fail
    /// every send as BadChannel and its registration stay for ever: it is refused at registration
    /// through both APIs, the 400 naming the key, and nothing is stored.
    @Test func aKeyThatIsNotAP256PointIsRefusedThroughBothAPIs() async throws {
        try await GatewayFixture.inProcess { fixture in
            let browser = await fixture.sandbox.createDevice(.browser)
            var subscription = try #require(WebPushSubscription(handleValue: browser.handle))
            subscription.p256dh[64] ^= 1  // Y's lowest bit: the point leaves the curve.
            let (endpoint, key, auth) = (subscription.endpoint, Base64URL.encode(subscription.p256dh), Base64URL.encode(subscription.auth))
            let problem = "'keys.p256dh' is not a point on the P-256 curve"

            let reserved = try await fixture.call("POST", "/api/register")
            let id = String(reserved.bodyText.dropFirst().dropLast())
            let tutorial = try await fixture.call(
                "PUT", "/api/register/\(id)", body: #"{"Platform":"browser","Handle":\#(subscription.handleValue),"Tags":[]}"#)
            #expect(tutorial.status == 400)
            #expect(tutorial.bodyText.contains(problem), "\(tutorial.bodyText)")
            #expect(try await fixture.store.registration(id: try RegistrationID(id), app: AppID("default")) == nil)

            let client = try HubAPITests.Client(fixture)
            let registration = try await client.call(
                "POST", "registrations",
                body: """
                    <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">
                    <BrowserRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                    <Tags>news</Tags><Endpoint>\(endpoint)</Endpoint><P256DH>\(key)</P256DH><Auth>\(auth)</Auth>
                    </BrowserRegistrationDescription></content></entry>
                    """, contentType: HubAPITests.atom)
            #expect(registration.status == 400)
            #expect(registration.bodyText.contains(problem), "\(registration.bodyText)")
            let installation = try await client.call(
                "PUT", "installations/web-bad-key",
                body:
                    #"{"installationId":"web-bad-key","platform":"browser","pushChannel":{"endpoint":"\#(endpoint)","p256dh":"\#(key)","auth":"\#(auth)"}}"#
            )
            #expect(installation.status == 400)
            #expect(installation.bodyText.contains(problem), "\(installation.bodyText)")
            #expect(try await client.call("GET", "installations/web-bad-key").status == 404)
            let listed = try await client.call("GET", "registrations")
            #expect(!listed.bodyText.contains("BrowserRegistrationDescription"), "\(listed.bodyText)")
        }
    }

    @Test func theServicesAnswersBecomeOutcomes() async throws {
        try await GatewayFixture.inProcess { fixture in
            let browser = await fixture.sandbox.createDevice(.browser)
            _ = try await fixture.register(browser, user: "alice")
            for (status, reason, expected) in [
                (413, "too large", "InvalidNotificationSize"), (429, "slow down", "throttled"), (403, "forbidden", "InvalidCredentials"),
                (400, "bad", "InvalidNotificationFormat"),
            ] {
                await fixture.sandbox.state.addFault(
                    SandboxFault(
                        service: .browser, handle: browser.handle, action: .respond(status: status, reason: reason, retryAfterSeconds: nil),
                        count: 5))
                let sent = try await fixture.call("POST", "/api/notifications?pns=browser&to_tag=alice", user: "bob", body: #""x""#)
                #expect(sent.bodyText.contains(expected), "\(status): \(sent.bodyText)")
                await fixture.sandbox.state.clearFaults()
            }
            #expect(await fixture.sandbox.state.inbox(deviceID: browser.id).isEmpty)
        }
    }
}
