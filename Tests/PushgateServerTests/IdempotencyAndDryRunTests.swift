import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateServer
import PushgateTesting
import Testing

/// `Idempotency-Key` on both APIs' sends, and dry runs, against a gateway in process and the
/// sandbox: what was delivered and stored is asserted, not only what was answered.
@Suite struct IdempotencyAndDryRunTests {
    func json(_ response: CurlResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.bodyText)")
    }

    func notificationCount(_ fixture: some GatewayCaller, user: String = "bob") async throws -> Int {
        let listed = try JSONSerialization.jsonObject(with: Data(try await fixture.call("GET", "/api/notifications", user: user).body))
        return (listed as? [Any])?.count ?? -1
    }

    @Test func aRepeatedSynchronousSendIsAnsweredTheFirstAndDeliveredOnce() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let device = fixture.device(.apns)
            _ = try await fixture.register(device, user: "alice")
            let key: [(name: String, value: String)] = [("Idempotency-Key", "\"order-4711\"")]
            let first = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""hi""#, headers: key)
            #expect(first.status == 200, "\(first.bodyText)")
            #expect(first.header("Idempotent-Replayed") == nil)
            let id = try #require(try json(first)["notificationId"] as? String)
            // The same key unquoted, as most clients send it: the same key.
            let again = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""hi""#,
                headers: [("Idempotency-Key", "order-4711")])
            #expect(again.status == 200, "\(again.bodyText)")
            #expect(again.header("Idempotent-Replayed") == "true")
            let replayed = try json(again)
            #expect(replayed["notificationId"] as? String == id)
            #expect(replayed["state"] as? String == "Completed")
            #expect(fixture.inbox(device).count == 1)
            #expect(try await notificationCount(fixture) == 1)

            // The same key with another request: 422, naming the key; nothing stored or sent.
            let other = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""bye""#, headers: key)
            #expect(other.status == 422 && other.bodyText.contains("order-4711"), "\(other.bodyText)")
            let asynchronous = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&async=true", user: "bob", body: #""hi""#, headers: key)
            #expect(asynchronous.status == 422, "\(asynchronous.bodyText)")
            // Keys are the sender's own: carol's order-4711 is another send.
            let carol = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice", user: "carol", body: #""hi""#, headers: key)
            let carolID = try json(carol)["notificationId"] as? String
            #expect(carol.status == 200 && carolID != id)
            #expect(fixture.inbox(device).count == 2)
            #expect(try await notificationCount(fixture) == 1)

            // Malformed keys are refused before anything is stored.
            for (value, problem) in [
                ("", "is empty"), ("\"open", "no closing quote"), (String(repeating: "k", count: 256), "at most 255"),
                ("caf\u{e9}", "visible ASCII"),
            ] {
                let bad = try await fixture.call(
                    "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""x""#, headers: [("Idempotency-Key", value)])
                #expect(bad.status == 400 && bad.bodyText.contains(problem), "\(value): \(bad.bodyText)")
            }
            #expect(fixture.inbox(device).count == 2)
        }
    }

    @Test func aRepeatedScheduledSendIsAnsweredWhileItWaitsAndTheKeyExpiresWithTheWindow() async throws {
        let clock = ManualClock()
        try await InMemoryGatewayFixture.with(clock: clock, adjust: { $0.outbox.idempotencyWindowSeconds = 600 }) { fixture in
            let device = fixture.device(.fcm)
            _ = try await fixture.register(device, user: "alice")
            let at = RFC3339.format(clock.now.adding(seconds: 300))
            let path = "/api/notifications?pns=fcm&to_tag=alice&deliverAt=\(at)"
            let key: [(name: String, value: String)] = [("Idempotency-Key", "batch-7")]
            let first = try await fixture.call("POST", path, user: "bob", body: #""later""#, headers: key)
            #expect(first.status == 202, "\(first.bodyText)")
            let id = try #require(try json(first)["notificationId"] as? String)
            // Still waiting: the repeat is answered the same notification, in its current state.
            let again = try await fixture.call("POST", path, user: "bob", body: #""later""#, headers: key)
            #expect(again.status == 202 && again.header("Idempotent-Replayed") == "true", "\(again.bodyText)")
            #expect(try json(again)["notificationId"] as? String == id && (try json(again)["state"] as? String) == "Scheduled")
            #expect(again.header("Location") == "/api/notifications/\(id)/outcome")
            #expect(await fixture.store.outboxDepth(now: clock.now).pending == 1)

            clock.advance(seconds: 300)
            let delivered = try await eventually {
                try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "bob"))
            } until: {
                $0["state"] as? String == "Completed"
            }
            #expect(delivered["success"] as? Int == 1)
            let repeated = try await fixture.call("POST", path, user: "bob", body: #""later""#, headers: key)
            #expect(try json(repeated)["state"] as? String == "Completed" && (try json(repeated)["notificationId"] as? String) == id)

            // Past the window the key is free: a new send with it is a new notification.
            clock.advance(seconds: 601)
            let soon = RFC3339.format(clock.now.adding(seconds: 300))
            let fresh = try await fixture.call(
                "POST", "/api/notifications?pns=fcm&to_tag=alice&deliverAt=\(soon)", user: "bob", body: #""later""#, headers: key)
            #expect(fresh.status == 202 && fresh.header("Idempotent-Replayed") == nil)
            #expect((try json(fresh)["notificationId"] as? String) != id)
            #expect(fixture.inbox(device).count == 1)
        }
    }

    @Test func concurrentRepeatsStoreOneNotification() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let device = fixture.device(.apns)
            _ = try await fixture.register(device, user: "alice")
            let ids = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for index in 0..<12 {
                    group.addTask {
                        let answer = try await fixture.call(
                            "POST", "/api/notifications?pns=apns&to_tag=alice\(index.isMultiple(of: 2) ? "&async=true" : "")", user: "bob",
                            body: #""once""#, headers: [("Idempotency-Key", "k-\(index % 2)")])
                        return (answer.status, try? json(answer)["notificationId"] as? String)
                    }
                }
                return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
            }
            // Two keys (one synchronous, one asynchronous request shape): two notifications.
            #expect(Set(ids.compactMap(\.1)).count == 2, "\(ids)")
            #expect(ids.allSatisfy { [200, 202].contains($0.0) }, "\(ids)")
            _ = try await eventually {
                fixture.inbox(device).count
            } until: {
                $0 >= 2
            }
            #expect(try await notificationCount(fixture) == 2)
        }
    }

    @Test func withoutTheOutboxAKeyIsRefused() async throws {
        try await InMemoryGatewayFixture.with(adjust: { $0.outbox.enabled = false }) { fixture in
            let refused = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""x""#, headers: [("Idempotency-Key", "k")])
            #expect(refused.status == 501 && refused.bodyText.contains("Idempotency-Key"), "\(refused.bodyText)")
        }
    }

    @Test func aRepeatedHubSendIsAnsweredTheFirstNotification() async throws {
        try await GatewayFixture.inProcess { fixture in
            let hub = try HubAPITests.Client(fixture)
            let device = await fixture.sandbox.createDevice(.apns)
            _ = try await fixture.register(device, user: "alice")
            let headers: [(name: String, value: String)] = [
                ("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "username:alice"),
                ("Idempotency-Key", "hub-1"),
            ]
            let body = #"{"aps":{"alert":"once"}}"#
            let first = try await hub.call("POST", "messages", body: body, headers: headers)
            #expect(first.status == 201, "\(first.bodyText)")
            _ = try await hub.finalDetails(of: first)
            let again = try await hub.call("POST", "messages", body: body, headers: headers)
            #expect(again.status == 201 && again.header("Location") == first.header("Location"))
            #expect(again.header("Idempotent-Replayed") == "true")
            // A new SAS token is the same request: only what shapes the send counts.
            let resigned = try await hub.call(
                "POST", "messages", body: body, authorization: hub.token(expiry: Int64(Date().timeIntervalSince1970) + 1200),
                headers: headers)
            #expect(resigned.status == 201, "\(resigned.bodyText)")
            #expect(resigned.header("Location") == first.header("Location"))
            let changed = try await hub.call("POST", "messages", body: #"{"aps":{"alert":"twice"}}"#, headers: headers)
            #expect(changed.status == 422 && changed.bodyText.contains("hub-1"), "\(changed.bodyText)")
            // A header the send passes to APNs shapes it; one it does not pass does not.
            let reprioritized = try await hub.call("POST", "messages", body: body, headers: headers + [("apns-priority", "5")])
            #expect(reprioritized.status == 422, "\(reprioritized.bodyText)")
            let traced = try await hub.call("POST", "messages", body: body, headers: headers + [("X-Request-Id", "r-2")])
            #expect(traced.status == 201 && traced.header("Idempotent-Replayed") == "true", "\(traced.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
        }
    }

    @Test func aDryRunShowsTheAudienceAndTheWirePayloadsAndStoresNothing() async throws {
        try await GatewayFixture.inProcess { fixture in
            var devices: [Platform: SandboxDevice] = [:]
            for platform in [Platform.apns, .fcm, .wns, .browser] {
                let device = await fixture.sandbox.createDevice(platform)
                devices[platform] = device
                _ = try await fixture.register(device, user: "alice", tags: ["news"])
            }
            let answer = try await fixture.call(
                "POST", "/api/notifications?pns=all&to_tag=alice&dryRun=true&sample=2", user: "alice", body: #""Preview me""#)
            #expect(answer.status == 200, "\(answer.bodyText)")
            let body = try json(answer)
            #expect(body["dryRun"] as? Bool == true)
            let audience = try #require(body["audience"] as? [String: Any])
            #expect(audience["total"] as? Int == 4)
            #expect(audience["byPlatform"] as? [String: Int] == ["apns": 1, "fcm": 1, "wns": 1, "browser": 1])
            let registrations = try #require(body["registrations"] as? [[String: Any]])
            #expect(registrations.count == 2)
            #expect(registrations.allSatisfy { ($0["tags"] as? [String])?.contains("news") == true })
            let payloads = try #require(body["payloads"] as? [[String: Any]])
            let byPlatform = Dictionary(uniqueKeysWithValues: payloads.map { ($0["platform"] as? String ?? "", $0) })
            let apns = try #require(byPlatform["apns"], "\(payloads)")
            let apnsHandle = try #require(devices[.apns]?.handle)
            #expect((apns["url"] as? String)?.contains("/3/device/") == true)
            #expect((apns["headers"] as? [String: String])?["authorization"] == "bearer <credential>")
            #expect((apns["body"] as? String)?.contains("Preview me") == true)
            #expect(apns["withinLimit"] as? Bool == true && apns["limit"] as? Int == 4096 && apns["targets"] as? Int == 1)
            let fcm = try #require(byPlatform["fcm"])
            #expect((fcm["headers"] as? [String: String])?["authorization"] == "Bearer <credential>", "\(fcm)")
            #expect((fcm["body"] as? String)?.contains("\"token\"") == true)
            #expect(byPlatform["browser"]?["note"] as? String != nil)
            // No handle, subscription key or credential whole in the answer.
            for device in devices.values {
                let secret = device.platform == .browser ? WebPushSubscription(handleValue: device.handle)!.endpoint : device.handle
                #expect(!answer.bodyText.contains(secret), "\(device.platform) handle in \(answer.bodyText)")
            }
            #expect(!answer.bodyText.contains(apnsHandle))
            // Nothing sent, nothing stored; a secure dry run stores no message either.
            let secure = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&dryRun=true&secure=true", user: "alice", body: #""secret""#)
            #expect(secure.status == 200 && !secure.bodyText.contains("secret\""), "\(secure.bodyText)")
            for device in devices.values { #expect(await fixture.sandbox.state.inbox(deviceID: device.id).isEmpty) }
            #expect(try await notificationCount(fixture) == 0)
            // Refused as the send would be, and for a bad sample.
            let noRecipient = try await fixture.call("POST", "/api/notifications?pns=apns&dryRun=true", user: "alice", body: #""x""#)
            #expect(noRecipient.status == 400 && noRecipient.bodyText.contains("to_tag"))
            let badSample = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&dryRun=true&sample=0", user: "alice", body: #""x""#)
            #expect(badSample.status == 400 && badSample.bodyText.contains("sample"))
        }
    }
}
