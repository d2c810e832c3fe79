import Foundation
import Hummingbird
import NIOCore
import PNSSandbox
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateLocal
import PushgateSQLite
import PushgateServer
import PushgateTesting
import ServiceLifecycle
import Testing

@Suite struct TutorialClientTests {
    @Test func theTutorialClientRegistersAndSendsToEveryPlatform() async throws {
        try await GatewayFixture.with { fixture in
            var devices: [Platform: SandboxDevice] = [:]
            for platform in Platform.allCases {
                let device = await fixture.sandbox.createDevice(platform)
                devices[platform] = device
                _ = try await fixture.register(device, user: "alice")
            }
            #expect(try await fixture.call("GET", "/healthz", user: nil).status == 200)

            // Bob sends to alice on each platform, one by one, as the tutorial client does.
            for platform in [Platform.wns, .gcm, .apns] {
                let response = try await fixture.call(
                    "POST", "/api/notifications?pns=\(platform.rawValue)&to_tag=alice", user: "bob", body: "\"Hello from the tutorial\"",
                    contentType: "application/json;charset=utf-8")
                #expect(response.status == 200, "\(platform): \(response.bodyText)")
                #expect(try JSONParser.parse(response.body)["success"]?.kind == .number("1"), "\(response.bodyText)")
            }
            let inboxAPNs = await fixture.sandbox.state.inbox(deviceID: devices[.apns]!.id)
            #expect(inboxAPNs.map(\.payload) == [#"{"aps":{"alert":"From bob: Hello from the tutorial"}}"#])
            let inboxWNS = await fixture.sandbox.state.inbox(deviceID: devices[.wns]!.id)
            #expect(inboxWNS.first?.payload.contains("From bob: Hello from the tutorial") == true)
            #expect(inboxWNS.first?.header("X-WNS-Type") == "wns/toast")

            // pns=all, read back as XML.
            let all = try await fixture.call(
                "POST", "/api/notifications?pns=all&to_tag=alice", user: "bob", body: "\"<b>&everyone\"", accept: "application/xml")
            #expect(all.status == 200)
            #expect(all.header("Content-Type")?.hasPrefix("application/xml") == true)
            #expect(all.bodyText.contains("<Success>\(Platform.allCases.count)</Success><Failure>0</Failure>"))
            // pns=gcm after Google's shutdown: the legacy message went through FCM v1, translated.
            let gcmInbox = await fixture.sandbox.state.inbox(deviceID: devices[.gcm]!.id)
            let delivered = try JSONParser.parse(gcmInbox.last!.payload)
            #expect(delivered["message"]?["token"]?.stringValue == devices[.gcm]!.handle)
            #expect(delivered["message"]?["data"]?["message"]?.stringValue == "From bob: <b>&everyone")
            let answered = await fixture.sandbox.state.answeredCounts()
            #expect(!answered.keys.contains { $0.hasPrefix("gcm ") }, "the legacy endpoint was used: \(answered)")
        }
    }

    @Test func aTimeToLiveAndADryRunReachTheServicesInTheirOwnForms() async throws {
        try await GatewayFixture.with { fixture in
            let apns = await fixture.sandbox.createDevice(.apns)
            let fcm = await fixture.sandbox.createDevice(.fcm)
            _ = try await fixture.register(apns, user: "alice")
            _ = try await fixture.register(fcm, user: "alice")
            let before = Int(Date().timeIntervalSince1970)
            let timed = try await fixture.call("POST", "/api/notifications?pns=apns,fcm&to_tag=alice&ttl=600", user: "bob", body: #""hi""#)
            #expect(timed.status == 200, "\(timed.bodyText)")
            let expiration = await fixture.sandbox.state.inbox(deviceID: apns.id).first?.header("apns-expiration").flatMap { Int($0) }
            #expect(expiration.map { $0 >= before + 600 && $0 <= before + 660 } == true, "\(expiration.map(String.init) ?? "none")")
            // FCM's time-to-live is relative: what is left of the 600 s when the request goes out
            // (a second or more may pass between the send and its delivery on a loaded machine).
            let payload = await fixture.sandbox.state.inbox(deviceID: fcm.id).first?.payload ?? ""
            let ttl = payload.components(separatedBy: #""ttl":""#).dropFirst().first.flatMap { Int($0.prefix { $0.isNumber }) }
            #expect(ttl.map { (590...600).contains($0) } == true, "\(payload)")

            // A dry run: FCM validates (validate_only) and delivers nothing; APNs has no such request.
            let dry = try await fixture.call(
                "POST", "/api/notifications?pns=fcm&to_tag=alice&validateOnly=true", user: "bob", body: #""hi""#)
            #expect(dry.status == 200, "\(dry.bodyText)")
            #expect(try JSONParser.parse(dry.body)["success"]?.kind == .number("1"))
            #expect(await fixture.sandbox.state.inbox(deviceID: fcm.id).count == 1)
            let refused = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&validateOnly=true", user: "bob", body: #""hi""#)
            #expect(refused.status == 400)
            #expect(refused.bodyText.contains("validateOnly"))
            let gcm = await fixture.sandbox.createDevice(.gcm)
            _ = try await fixture.register(gcm, user: "alice")
            let dryGCM = try await fixture.call(
                "POST", "/api/notifications?pns=gcm&to_tag=alice&validateOnly=true", user: "bob", body: #""hi""#)
            #expect(dryGCM.status == 200, "\(dryGCM.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: gcm.id).isEmpty)
            let secureDry = try await fixture.call(
                "POST", "/api/notifications?pns=fcm&to_tag=alice&validateOnly=true&secure=true", user: "bob", body: #""hi""#)
            #expect(secureDry.status == 400)
            let badTTL = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice&ttl=-1", user: "bob", body: #""hi""#)
            #expect(badTTL.status == 400)
            #expect(badTTL.bodyText.contains("ttl"))
        }
    }

    @Test func anUnknownRegistrationIsGoneAndTheClientReRegisters() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let device = fixture.device(.apns)
            let stale = try await fixture.call(
                "PUT", "/api/register/0123456789abcdef0123456789abcdef",
                body: #"{"Platform":"apns","Handle":"\#(device.handle)","Tags":[]}"#)
            #expect(stale.status == 410)
            let id = try await fixture.register(device, user: "alice")
            // Registering the same handle again reuses the id.
            let again = try await fixture.call("POST", "/api/register?handle=\(device.handle)")
            #expect(again.bodyText == "\"\(id)\"")
        }
    }

    @Test func authenticationAndAuthorizationFailures() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let missing = try await fixture.call("POST", "/api/register", user: nil)
            #expect(missing.status == 401)
            #expect(missing.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
            #expect(try await fixture.call("POST", "/api/register", user: "alice", password: "wrong").status == 401)

            let device = fixture.device(.apns)
            let id = try await fixture.register(device, user: "alice")
            let takeover = try await fixture.call(
                "PUT", "/api/register/\(id)", user: "mallory", body: #"{"Platform":"apns","Handle":"\#(device.handle)","Tags":[]}"#)
            #expect(takeover.status == 403)
            #expect(try await fixture.call("DELETE", "/api/register/\(id)", user: "mallory").status == 403)

            let other = String(try await fixture.call("POST", "/api/register", user: "mallory").bodyText.dropFirst().dropLast())
            let impersonation = try await fixture.call(
                "PUT", "/api/register/\(other)", user: "mallory",
                body: #"{"Platform":"apns","Handle":"\#(device.handle)","Tags":["username:alice"]}"#)
            #expect(impersonation.status == 403)
            #expect(impersonation.bodyText.contains("username:alice"))

            #expect(try await fixture.call("DELETE", "/api/register/\(id)").status == 200)
            #expect(try await fixture.call("DELETE", "/api/register/\(id)").status == 404)
        }
    }

    @Test func badInputIsAnsweredClearlyAndLeavesTheStoreUnchanged() async throws {
        try await GatewayFixture.with { fixture in
            let device = await fixture.sandbox.createDevice(.apns)
            let id = try await fixture.register(device, user: "alice", tags: ["news"])
            let cases: [(String, String, String, Int, String)] = [
                ("PUT", "/api/register/\(id)", #"{"Platform":"mpns","Handle":"x","Tags":[]}"#, 400, "Platform 'mpns' is not supported"),
                ("PUT", "/api/register/\(id)", #"{"Platform":"apns","Handle":"zz","Tags":[]}"#, 400, "APNs device token"),
                (
                    "PUT", "/api/register/\(id)", #"{"Platform":"apns","Handle":"\#(device.handle)","Tags":["bad tag"]}"#, 400,
                    "invalid character"
                ),
                (
                    "PUT", "/api/register/\(id)", #"{"Platform":"wns","Handle":"https://evil.example.com/?token=1","Tags":[]}"#, 400,
                    "allow-list"
                ),
                ("PUT", "/api/register/\(id)", "{nope", 400, "body: invalid JSON"),
                ("POST", "/api/notifications?pns=mpns&to_tag=alice", "\"hi\"", 400, "pns 'mpns'"),
                ("POST", "/api/notifications?to_tag=alice", "\"hi\"", 400, "pns is required"),
                ("POST", "/api/notifications?pns=apns", "\"hi\"", 400, "to_tag is required"),
                ("POST", "/api/notifications?pns=apns&to_tag=alice", "42", 400, "JSON string"),
                ("POST", "/api/notifications?pns=apns&to_tag=alice", "\"\(String(repeating: "x", count: 4100))\"", 413, "APNs payload"),
            ]
            for (method, path, body, status, text) in cases {
                let response = try await fixture.call(method, path, body: body)
                #expect(response.status == status, "\(method) \(path): \(response.bodyText.prefix(200))")
                #expect(response.bodyText.contains(text), "\(response.bodyText.prefix(200))")
            }
            let stored = try await fixture.store.registration(id: try RegistrationID(id), app: .default)
            #expect(stored?.tags.map(\.rawValue) == ["news", "username:alice"])
            #expect(stored?.handle.value == device.handle)
            #expect(await fixture.sandbox.state.receivedCount() == 0)
            let huge = try await fixture.call("PUT", "/api/register/\(id)", body: String(repeating: " ", count: 70_000) + "{}")
            #expect(huge.status == 413)
            #expect(huge.bodyText.contains("larger than 65536 bytes"))
            let nobody = try await fixture.call("POST", "/api/notifications?pns=all&to_tag=nobody", body: "\"hi\"")
            #expect(nobody.status == 404)
            #expect(nobody.bodyText.contains("NoTargetFound"))
        }
    }

    @Test func aHandleTheServiceReportsGoneIsPruned() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let device = fixture.device(.apns)
            let id = try await fixture.register(device, user: "alice")
            fixture.uninstall(device)
            let response = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice", user: "alice", body: #"{"message":"hi","extra":"1"}"#)
            #expect(response.status == 200)
            let target = try #require(try JSONParser.parse(response.body)["targets"]?.arrayElements?.first)
            #expect(target["outcome"]?.stringValue == "ExpiredChannel")
            #expect(target["handleAction"]?.stringValue == "removed")
            #expect(try await fixture.store.registration(id: try RegistrationID(id), app: .default) == nil)
            let removals = try await fixture.store.removals(app: .default, limit: 5)
            #expect(removals.first?.registrationID.rawValue == id)
            #expect(removals.first?.outcome == .expiredChannel)
            #expect(
                try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "alice", body: "\"again\"").status == 404)
        }
    }

    @Test func metricsCountRequestsDeliveriesAndPrunedHandles() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let device = fixture.device(.apns)
            _ = try await fixture.register(device, user: "alice")
            #expect(try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: "\"one\"").status == 200)
            fixture.uninstall(device)
            #expect(try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: "\"two\"").status == 200)
            _ = try await fixture.call("POST", "/api/register", user: nil)
            let metrics = try await fixture.call("GET", "/metrics", user: nil)
            #expect(metrics.status == 200)
            let text = metrics.bodyText
            #expect(text.contains(#"pushgate_notifications_total{platform="apns",outcome="Success"} 1"#), "\(text)")
            #expect(text.contains(#"pushgate_notifications_total{platform="apns",outcome="ExpiredChannel"} 1"#))
            #expect(text.contains(#"pushgate_handles_removed_total{platform="apns"} 1"#))
            #expect(
                text.contains(#"pushgate_http_requests_total{route="unmatched",method="POST",status="401"} 1"#)
                    || text.contains(#"method="POST",status="401"} 1"#), "\(text)")
            #expect(text.contains(#"method="POST",status="200"} 2"#), "\(text)")
            #expect(text.contains("pushgate_delivery_latency_seconds_bucket"))
            #expect(text.contains("pushgate_http_requests_in_flight"))
        }
    }

    @Test func securePushSendsOnlyTheIDAndTheRecipientRedeemsIt() async throws {
        try await GatewayFixture.with { fixture in
            var devices: [Platform: SandboxDevice] = [:]
            for platform in Platform.allCases {
                let device = await fixture.sandbox.createDevice(platform)
                devices[platform] = device
                _ = try await fixture.register(device, user: "alice")
            }
            let response = try await fixture.call(
                "POST", "/api/notifications?pns=all&to_tag=alice&secure=true", user: "bob", body: "\"Secure confirmation.\"")
            #expect(response.status == 200, "\(response.bodyText)")
            #expect(response.bodyText.contains(#""success":\#(Platform.allCases.count)"#))
            let secureID = try #require(response.header("X-Pushgate-Secure-Id"))

            let apns = try #require(await fixture.sandbox.state.inbox(deviceID: devices[.apns]!.id).first)
            #expect(apns.payload == #"{"aps":{"content-available":1},"secureId":"\#(secureID)"}"#)
            #expect(apns.header("apns-push-type") == "background")
            #expect(apns.header("apns-priority") == "5")
            let wns = try #require(await fixture.sandbox.state.inbox(deviceID: devices[.wns]!.id).first)
            #expect(wns.payload == secureID)
            #expect(wns.header("X-WNS-Type") == "wns/raw")
            let fcm = try #require(await fixture.sandbox.state.inbox(deviceID: devices[.fcm]!.id).first)
            #expect(try JSONParser.parse(fcm.payload)["message"]?["data"]?["secureId"]?.stringValue == secureID)
            for received in [apns, wns, fcm] { #expect(!received.payload.contains("Secure confirmation")) }

            let redeemed = try await fixture.call("GET", "/api/notifications/\(secureID)", user: "alice")
            #expect(redeemed.status == 200)
            let json = try JSONParser.parse(redeemed.body)
            #expect(json["Payload"]?.stringValue == "Secure confirmation.")
            #expect(json["Id"]?.stringValue == secureID)
            #expect(json["Read"]?.kind == .bool(false))
            #expect(try await fixture.call("GET", "/api/notifications/\(secureID)", user: "mallory").status == 404)
            #expect(try await fixture.call("GET", "/api/notifications/\(secureID)", user: "bob").status == 404)
            #expect(try await fixture.call("GET", "/api/notifications/unknown", user: "alice").status == 404)
            #expect(
                try JSONParser.parse(try await fixture.call("GET", "/api/notifications/\(secureID)", user: "alice").body)["Read"]?.kind
                    == .bool(true))
        }
    }
}
