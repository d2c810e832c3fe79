import Crypto
import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateGateway
import PushgateServer
import PushgateTesting
import PushgateXML
import Testing

/// The one send path (`Sends`): every kind of send, through either API, is counted in the metrics
/// once (the handlers and the delivery service each counted some before), and a hub template send
/// takes properties without `message` where the tutorial API's send needs it.
@Suite struct SendsTests {
    func delivered(_ fixture: GatewayFixture) async throws -> Int {
        let text = try await fixture.call("GET", "/metrics", user: nil).bodyText
        let line = text.split(separator: "\n").first { $0.hasPrefix(#"pushgate_notifications_total{platform="apns",outcome="Success"}"#) }
        return line.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0
    }

    func expectCount(_ fixture: GatewayFixture, _ expected: Int, _ what: String) async throws {
        let count = try await eventually {
            try await delivered(fixture)
        } until: {
            $0 >= expected
        }
        #expect(count == expected, "after \(what)")
    }

    @Test func everyKindOfSendIsCountedOnce() async throws {
        try await GatewayFixture.inProcess { fixture in
            let device = await fixture.sandbox.createDevice(.apns)
            _ = try await fixture.register(device, user: "alice")
            let path = "/api/notifications?pns=apns&to_tag=alice"
            #expect(try await fixture.call("POST", path, user: "bob", body: #""sync""#).status == 200)
            try await expectCount(fixture, 1, "a synchronous send")
            #expect(try await fixture.call("POST", path + "&async=true", user: "bob", body: #""async""#).status == 202)
            try await expectCount(fixture, 2, "an asynchronous send")
            let streamed = try await fixture.call(
                "POST", path, user: "bob", body: #""streamed""#, accept: GatewayHTTP.progressMediaType)
            #expect(streamed.status == 200 && streamed.bodyText.contains(#""status":200"#), "\(streamed.bodyText)")
            try await expectCount(fixture, 3, "a streamed send")

            let hub = try HubAPITests.Client(fixture)
            let apple: [(name: String, value: String)] = [
                ("ServiceBusNotification-Format", "apple"), ("apns-push-type", "alert"), ("ServiceBusNotification-Tags", "username:alice"),
            ]
            #expect(try await hub.call("POST", "messages", body: #"{"aps":{"alert":"hub"}}"#, headers: apple).status == 201)
            try await expectCount(fixture, 4, "a hub send")
            let test = try await hub.call("POST", "messages?test", body: #"{"aps":{"alert":"test"}}"#, headers: apple)
            #expect(test.status == 201, "\(test.bodyText)")
            try await expectCount(fixture, 5, "a hub test send")
            // A repeat (Idempotency-Key) is answered from the first send, neither sent nor counted again.
            for _ in 0..<2 {
                let repeated = try await fixture.call(
                    "POST", path, user: "bob", body: #""once""#, headers: [("Idempotency-Key", "k-1")])
                #expect(repeated.status == 200, "\(repeated.bodyText)")
            }
            try await expectCount(fixture, 6, "a send and its repeat")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 6)
        }
    }
}

extension SendsTests {
    /// The digest keys were stored with before the send command: the request's parts as each
    /// handler listed them, each with its length.
    static func legacyFingerprint(_ parts: [String?], body: [UInt8]) -> String {
        var bytes: [UInt8] = []
        for part in parts {
            let utf8 = part.map { Array($0.utf8) }
            bytes += Array("\(utf8.map { String($0.count) } ?? "-"):".utf8) + (utf8 ?? [])
        }
        bytes += Array("\(body.count):".utf8) + body
        return SHA256Digest.hex(bytes)
    }

    /// Keys stored before the send command (version 1, by the handlers' own lists) keep matching
    /// their repeats: the command reproduces them exactly, for both APIs.
    @Test func storedKeysKeepTheirFingerprint() throws {
        let body = Array(#"{"message":"hi","n":1}"#.utf8)
        let tutorial = SendCommand(
            route: .tutorialNotifications, sender: .user(AuthenticatedUser(name: "bob", isAdmin: false)), audience: .user("alice"),
            content: .message(body: body, secure: true), platforms: "apns,fcm", mode: .asynchronous,
            deliverAt: .init(Timestamp(secondsSinceEpoch: 1_900_000_000), text: "2030-03-17T17:46:40Z"), timeToLive: .init(60, text: "60"))
        let legacyTutorial = Self.legacyFingerprint(
            ["POST /api/notifications", "apns,fcm", "alice", nil, "60", "2030-03-17T17:46:40Z", "secure", "async", nil, nil, nil],
            body: body)
        #expect(tutorial.fingerprint() == legacyTutorial)

        let headers: [SendCommand.Header] = [
            .init(name: "Content-Type", value: "application/json"), .init(name: "ServiceBusNotification-Format", value: "apple"),
            .init(name: "ServiceBusNotification-Tags", value: "sports"), .init(name: "apns-push-type", value: "alert"),
            .init(name: "Authorization", value: "SharedAccessSignature …"),
        ]
        let hub = SendCommand(
            route: .hubMessages, sender: .hubKey(rule: "DefaultFullSharedAccessSignature"), audience: .tags("sports"),
            content: .notificationHubs(format: "apple", body: body, headers: headers))
        let legacyHub = Self.legacyFingerprint(
            [
                "POST /{hub}/messages", nil, nil, "apple", "sports", nil, nil, nil, nil, "apns-push-type: alert",
                "content-type: application/json",
            ],
            body: body)
        #expect(hub.fingerprint() == legacyHub)
        // Another request is another fingerprint; an unknown version has none.
        var other = hub
        other.content = .notificationHubs(format: "apple", body: Array("{}".utf8), headers: headers)
        #expect(other.fingerprint() != legacyHub)
        #expect(hub.fingerprint(version: 2) == nil)
    }
}

enum SHA256Digest {
    static func hex(_ bytes: [UInt8]) -> String {
        var digest = SHA256()
        digest.update(data: bytes)
        return digest.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

extension SendsTests {
    /// A hub template send renders each registration's own template: compiled once per text and
    /// platform, not once per registration and page.
    @Test func registrationTemplatesAreCompiledOncePerText() throws {
        let body = #"{"aps":{"alert":"$(title)"},"k":"\#(UUID().uuidString)"}"#
        let template = RegistrationTemplate(name: "a", body: body, headers: ["apns-push-type": "alert"])
        let cache = CompiledTemplates()
        #expect(!cache.contains(platform: .apns, body: body, headers: template.headers))
        let first = try template.compiled(for: .apns, cache: cache)
        #expect(cache.contains(platform: .apns, body: body, headers: template.headers))
        // The same text under another name is the same compiled template; another header is not.
        let again = try RegistrationTemplate(name: "b", body: body, headers: template.headers).compiled(for: .apns, cache: cache)
        #expect(again.headers == first.headers)
        #expect(String(decoding: try again.render(["title": "Hi"]).body, as: UTF8.self).contains("Hi"))
        #expect(!cache.contains(platform: .apns, body: body, headers: ["apns-push-type": "background"]))
        #expect(cache.count == 1)
    }
}
