import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateTesting
import Testing

/// Asynchronous, scheduled and cancelled sends through the outbox, and their telemetry, against
/// a running gateway and the sandbox.
@Suite struct OutboxAPITests {
    static let admins: @Sendable (inout PushgateConfiguration) -> Void = { $0.auth.admins = ["admin"] }

    func json(_ response: CurlResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.bodyText)")
    }

    /// Polls the outcome until the state is final (or `seconds` pass); returns the last answer.
    func waitForFinal(_ fixture: some GatewayCaller, _ id: String, user: String = "bob") async throws -> [String: Any] {
        try await eventually {
            try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: user))
        } until: {
            ["Completed", "Abandoned", "NoTargetFound", "Cancelled"].contains($0["state"] as? String ?? "")
        }
    }

    @Test func anAsynchronousSendAnswers202AndItsTelemetryFollowsIt() async throws {
        try await InMemoryGatewayFixture.with(adjust: Self.admins) { fixture in
            let devices = [fixture.device(.apns), fixture.device(.fcm)]
            for device in devices { _ = try await fixture.register(device, user: "alice") }
            let accepted = try await fixture.call(
                "POST", "/api/notifications?pns=all&to_tag=alice", user: "bob", body: #""hello later""#,
                headers: [("Prefer", "respond-async")])
            #expect(accepted.status == 202, "\(accepted.bodyText)")
            #expect(accepted.header("Preference-Applied") == "respond-async")
            let body = try json(accepted)
            let id = try #require(body["notificationId"] as? String)
            #expect(accepted.header("Location") == "/api/notifications/\(id)/outcome")
            #expect(["Enqueued", "Processing", "Completed"].contains(body["state"] as? String ?? ""))

            let outcome = try await waitForFinal(fixture, id)
            #expect(outcome["state"] as? String == "Completed", "\(outcome)")
            #expect(outcome["success"] as? Int == 2 && outcome["processed"] as? Int == 2 && outcome["targets"] as? Int == 2)
            #expect(outcome["audienceComplete"] as? Bool == true)
            #expect(outcome["startTime"] is String && outcome["endTime"] is String)
            for device in devices { #expect(fixture.inbox(device).count == 1) }

            let xml = try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "bob", accept: "application/xml")
            #expect(xml.status == 200)
            for element in [
                "<NotificationDetails", "<State>Completed</State>", "<ApnsOutcomeCounts><Outcome><Name>Success</Name><Count>1</Count>",
                "<TargetPlatforms>\(Platform.allCases.map(\.notificationHubsName).joined(separator: ","))</TargetPlatforms>",
                "<Tags>username:alice</Tags>",
            ] {
                #expect(xml.bodyText.contains(element), "\(element) missing in \(xml.bodyText)")
            }

            // Only the sender and admins see it; to anyone else it does not exist.
            #expect(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "carol").status == 404)
            #expect(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "admin").status == 200)
            #expect(try await fixture.call("DELETE", "/api/notifications/\(id)", user: "carol").status == 404)
            #expect(try await fixture.call("GET", "/api/notifications/nope/outcome", user: "bob").status == 404)
            let listed = try JSONSerialization.jsonObject(with: Data(try await fixture.call("GET", "/api/notifications", user: "bob").body))
            #expect((listed as? [[String: Any]])?.compactMap { $0["notificationId"] as? String } == [id])
            #expect(try await fixture.call("GET", "/api/notifications", user: "carol").bodyText == "[]")
            #expect(try await fixture.call("GET", "/api/notifications?sender=bob", user: "admin").bodyText.contains(id))

            // A finished send cannot be cancelled.
            let late = try await fixture.call("DELETE", "/api/notifications/\(id)", user: "bob")
            #expect(late.status == 409 && late.bodyText.contains("already finished (Completed)"), "\(late.bodyText)")
            // ?async=true works the same; a malformed flag is refused before anything is stored.
            #expect(
                try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice&async=true", user: "bob", body: #""x""#).status
                    == 202)
            let maybe = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice&async=maybe", user: "bob", body: #""x""#)
            #expect(maybe.status == 400 && maybe.bodyText.contains("async: 'maybe' is not true or false"))
            // The synchronous default goes through the outbox too and is listed.
            let sync = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""now""#)
            #expect(sync.status == 200)
            let syncID = try #require(try json(sync)["notificationId"] as? String)
            #expect(
                try json(try await fixture.call("GET", "/api/notifications/\(syncID)/outcome", user: "bob"))["state"] as? String
                    == "Completed")
            let metrics = try await fixture.call("GET", "/metrics", user: nil).bodyText
            #expect(metrics.contains("pushgate_outbox_page_claims_total"))
        }
    }

    @Test func aScheduledSendWaitsForItsTimeAndAnotherIsCancelled() async throws {
        let clock = ManualClock()
        try await GatewayFixture.inProcess(clock: clock, adjust: Self.admins) { fixture in
            let device = await fixture.sandbox.createDevice(.apns)
            let other = await fixture.sandbox.createDevice(.wns)
            _ = try await fixture.register(device, user: "alice")
            _ = try await fixture.register(other, user: "alice")
            let soon = RFC3339.format(clock.now.adding(seconds: 600))
            let scheduled = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&deliverAt=\(soon)", user: "bob", body: #""at two""#)
            #expect(scheduled.status == 202, "\(scheduled.bodyText)")
            let id = try #require(try json(scheduled)["notificationId"] as? String)
            #expect(try json(scheduled)["state"] as? String == "Scheduled")
            #expect(try json(scheduled)["deliverAt"] as? String == soon)
            // Recorded: stored and pending, not due while the gateway's clock stands before its time.
            let waiting = try await fixture.store.outboxDepth(now: clock.now)
            #expect(waiting.pending == 1 && waiting.due == 0, "\(waiting)")
            #expect(try await fixture.store.outboxDepth(now: clock.now.adding(seconds: 600)).due == 1)
            #expect(
                try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "bob"))["state"] as? String == "Scheduled")
            clock.advance(seconds: 600)
            let outcome = try await waitForFinal(fixture, id)
            #expect(outcome["state"] as? String == "Completed" && outcome["success"] as? Int == 1, "\(outcome)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
            // Started at its time, not before, on the gateway's clock.
            let started = try RFC3339.parse(try #require(outcome["startTime"] as? String))
            #expect(started.secondsSinceEpoch >= (try RFC3339.parse(soon)).secondsSinceEpoch - 0.001, "\(outcome)")

            let later = RFC3339.format(clock.now.adding(seconds: 3600))
            let pending = try await fixture.call(
                "POST", "/api/notifications?pns=all&to_tag=alice&deliverAt=\(later)", user: "bob", body: #""in an hour""#)
            let pendingID = try #require(try json(pending)["notificationId"] as? String)
            let cancelled = try await fixture.call("DELETE", "/api/notifications/\(pendingID)", user: "bob")
            #expect(cancelled.status == 200, "\(cancelled.bodyText)")
            let body = try json(cancelled)
            #expect(body["state"] as? String == "Cancelled" && body["processed"] as? Int == 2 && body["success"] as? Int == 0, "\(body)")
            #expect(cancelled.bodyText.contains(#""Cancelled":1"#))
            let again = try await fixture.call("DELETE", "/api/notifications/\(pendingID)", user: "bob")
            #expect(again.status == 409)
            #expect(await fixture.sandbox.state.inbox(deviceID: other.id).isEmpty)
        }
    }

    /// With `outbox.enabled: false` a send is delivered while its request waits and answered with
    /// the result; what needs the outbox (answering at once, a delivery time, the hub API's sends)
    /// is refused by name with 501, and nothing is stored.
    @Test func withTheOutboxOffSendsAreSynchronousAndWhatNeedsItIsRefused() async throws {
        try await InMemoryGatewayFixture.with(adjust: { $0.outbox.enabled = false }) { fixture in
            let device = fixture.device(.apns)
            _ = try await fixture.register(device, user: "alice")
            let sent = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""now""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            #expect(try json(sent)["success"] as? Int == 1, "\(sent.bodyText)")
            #expect(fixture.inbox(device).count == 1)
            for path in [
                "/api/notifications?pns=apns&to_tag=alice&async=true",
                "/api/notifications?pns=apns&to_tag=alice&deliverAt="
                    + RFC3339.format(Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970 + 3600)),
            ] {
                let refused = try await fixture.call("POST", path, user: "bob", body: #""later""#)
                #expect(refused.status == 501 && refused.bodyText.contains("need the outbox, which is turned off"), "\(refused.bodyText)")
            }
            #expect(await fixture.store.outboxDepth(now: Timestamp(secondsSinceEpoch: 4_102_444_800)).pending == 0)
        }
    }

    @Test func badDeliveryTimesAreRefusedAndNothingIsStored() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            _ = try await fixture.register(fixture.device(.apns), user: "alice")
            let now = Date().timeIntervalSince1970
            let cases: [(String, String)] = [
                ("tomorrow", "not an RFC 3339 date-time"),
                ("2026-02-30T10:00:00Z", "day 30 is out of range"),
                ("2026-11-23T10:00:00", "expected a time zone"),
                (RFC3339.format(Timestamp(secondsSinceEpoch: now - 3600)), "is in the past"),
                (RFC3339.format(Timestamp(secondsSinceEpoch: now + 40 * 86400)), "ahead"),
            ]
            for (text, message) in cases {
                let encoded = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
                let answer = try await fixture.call(
                    "POST", "/api/notifications?pns=apns&to_tag=alice&secure=true&deliverAt=\(encoded)", user: "bob", body: #""x""#)
                #expect(answer.status == 400, "\(text): \(answer.bodyText)")
                #expect(answer.bodyText.contains("deliverAt: ") && answer.bodyText.contains(message), "\(text): \(answer.bodyText)")
            }
            #expect(try await fixture.call("GET", "/api/notifications", user: "bob").bodyText == "[]")
            #expect(try await fixture.call("GET", "/api/notifications?limit=0", user: "bob").status == 400)
        }
    }

    /// A running send of 3,000 targets (each answered after 50 ms) is cancelled: it stops within
    /// a few pages, the targets not yet sent are counted Cancelled, and every target is counted once.
    @Test func aRunningSendIsCancelledAndItsUnsentTargetsCountedCancelled() async throws {
        try await GatewayFixture.inProcess { fixture in
            try await fixture.store.restore(try RegistrationSeeds.apns(count: 3000, user: "carol"), now: RegistrationSeeds.now)
            await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .delay(milliseconds: 50), count: 1_000_000))
            let accepted = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=carol&async=true", user: "carol", body: #""x""#)
            let id = try #require(try json(accepted)["notificationId"] as? String)
            _ = try await eventually(every: .milliseconds(20)) {
                try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "carol"))
            } until: {
                $0["processed"] as? Int ?? 0 > 0
            }
            // The cancel answers 200 once the send ended, or 202 after 10 s (a busy machine).
            #expect([200, 202].contains(try await fixture.call("DELETE", "/api/notifications/\(id)", user: "carol").status))
            let cancelled = try await eventually(timeout: .seconds(90), every: .milliseconds(200)) {
                try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "carol"))
            } until: {
                $0["state"] as? String == "Cancelled"
            }
            #expect(cancelled["state"] as? String == "Cancelled", "\(cancelled)")
            #expect(cancelled["processed"] as? Int == 3000, "\(cancelled)")
            let counts = try #require((cancelled["platforms"] as? [[String: Any]])?.first?["outcomes"] as? [String: Int])
            #expect((counts["Cancelled"] ?? 0) > 0 && (counts["Cancelled"] ?? 0) < 3000, "\(counts)")
            // The made-up tokens are unknown to the sandbox: the failures are listed a page at a time.
            let failed = try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedLimit=100", user: "carol"))
            let page = try #require(failed["failedTargets"] as? [[String: Any]])
            #expect(page.count == 100)
            let next = try #require(failed["nextFailedAfter"] as? String)
            let second = try json(
                try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedLimit=100&failedAfter=\(next)", user: "carol"))
            #expect((second["failedTargets"] as? [[String: Any]])?.first?["registrationId"] as? String ?? "" > next)
            #expect(try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedLimit=0", user: "carol").status == 400)
        }
    }

    /// FCM answers QUOTA_EXCEEDED (Firebase: back off at least a minute): the throttled target is
    /// not retried in place but put off to a retry page; the send answers 202 with the rest
    /// counted, and once the backoff has passed (the gateway's clock moved on) the retry delivers
    /// it. A target still throttled after `outbox.throttledRetries` retries ends `Throttled`.
    @Test func throttledTargetsAreRescheduledAtTheServicesDelay() async throws {
        let clock = ManualClock()
        try await GatewayFixture.inProcess(clock: clock, adjust: { $0.outbox.throttledRetries = 1 }) { fixture in
            let devices = [
                await fixture.sandbox.createDevice(.fcm), await fixture.sandbox.createDevice(.fcm),
                await fixture.sandbox.createDevice(.fcm),
            ]
            for device in devices { _ = try await fixture.register(device, user: "alice") }
            let quota = SandboxFault.Action.respond(status: 429, reason: "QUOTA_EXCEEDED", retryAfterSeconds: nil)
            // The second device is throttled once, the third every time.
            await fixture.sandbox.state.addFault(SandboxFault(service: .fcm, handle: devices[1].handle, action: quota, count: 1))
            await fixture.sandbox.state.addFault(SandboxFault(service: .fcm, handle: devices[2].handle, action: quota, count: 100))
            let sent = try await fixture.call("POST", "/api/notifications?pns=fcm&to_tag=alice", user: "alice", body: #""slow down""#)
            #expect(sent.status == 202, "\(sent.bodyText)")
            let body = try json(sent)
            let id = try #require(body["notificationId"] as? String)
            #expect(body["state"] as? String == "Processing")
            #expect((body["error"] as? String ?? "").contains("throttled"), "\(body)")
            #expect(sent.header("Location") == "/api/notifications/\(id)/outcome")
            // Only the delivered target has its outcome; the throttled ones are not counted yet.
            #expect(body["success"] as? Int == 1 && body["failure"] as? Int == 0, "\(body)")
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[1].id).isEmpty)
            // Recorded: the retry page is stored, due at Firebase's backoff (a minute), not before.
            #expect(
                try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome", user: "alice"))["state"] as? String
                    == "Processing"
            )
            let parked = try await eventually { try await fixture.store.outboxDepth(now: clock.now.adding(seconds: 59)).due == 0 }
            #expect(parked, "the notification is not parked until the retry is due")
            #expect(try await fixture.store.outboxDepth(now: clock.now.adding(seconds: 61)).due == 1)
            let metrics = try await fixture.call("GET", "/metrics", user: nil).bodyText
            #expect(metrics.contains("pushgate_outbox_deferred_targets_total 2"), "\(metrics)")

            clock.advance(seconds: 61)
            let outcome = try await waitForFinal(fixture, id, user: "alice")
            #expect(outcome["state"] as? String == "Completed", "\(outcome)")
            #expect(outcome["processed"] as? Int == 3 && outcome["success"] as? Int == 2, "\(outcome)")
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[1].id).count == 1)
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[2].id).isEmpty)
            let listed = try json(try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedLimit=10", user: "alice"))
            let failed = try #require(listed["failedTargets"] as? [[String: Any]])
            #expect(failed.count == 1 && failed.first?["outcome"] as? String == "Throttled", "\(failed)")
        }
    }

    /// A time-to-live counts from the send: a throttled target whose notification would have
    /// expired before the retry is due ends `Throttled` at once; one retried goes out with only
    /// what is left of its time-to-live.
    @Test func aThrottledTargetsRetryKeepsToTheSendsTimeToLive() async throws {
        let clock = ManualClock()
        try await GatewayFixture.inProcess(clock: clock) { fixture in
            let devices = [await fixture.sandbox.createDevice(.fcm), await fixture.sandbox.createDevice(.fcm)]
            _ = try await fixture.register(devices[0], user: "alice")
            _ = try await fixture.register(devices[1], user: "carol")
            let quota = SandboxFault.Action.respond(status: 429, reason: "QUOTA_EXCEEDED", retryAfterSeconds: nil)
            for device in devices {
                await fixture.sandbox.state.addFault(SandboxFault(service: .fcm, handle: device.handle, action: quota, count: 1))
            }

            // 30 s to live, a retry due in 60 s: final now.
            let short = try await fixture.call("POST", "/api/notifications?pns=fcm&to_tag=alice&ttl=30", user: "alice", body: #""brief""#)
            #expect(short.status == 200, "\(short.bodyText)")
            let result = try json(short)
            #expect(result["state"] as? String == "Completed" && result["failure"] as? Int == 1, "\(result)")
            let target = try #require((result["targets"] as? [[String: Any]])?.first)
            #expect(target["outcome"] as? String == "Throttled", "\(target)")

            // 600 s to live: retried after 61 s with 539 s left.
            let long = try await fixture.call("POST", "/api/notifications?pns=fcm&to_tag=carol&ttl=600", user: "bob", body: #""lasting""#)
            #expect(long.status == 202, "\(long.bodyText)")
            let id = try #require(try json(long)["notificationId"] as? String)
            clock.advance(seconds: 61)
            let outcome = try await waitForFinal(fixture, id)
            #expect(outcome["state"] as? String == "Completed" && outcome["success"] as? Int == 1, "\(outcome)")
            let payload = try #require(await fixture.sandbox.state.inbox(deviceID: devices[1].id).first?.payload)
            #expect(payload.contains(#""ttl":"539s""#), "\(payload)")
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[0].id).isEmpty)
        }
    }

    /// `topic=` and `condition=` send one FCM message that Firebase fans out to the subscribed
    /// devices; what is malformed is refused naming the field before anything is stored.
    @Test func fcmTopicAndConditionSendsReachTheSubscribedDevices() async throws {
        try await GatewayFixture.inProcess { fixture in
            let devices = [await fixture.sandbox.createDevice(.fcm), await fixture.sandbox.createDevice(.fcm)]
            #expect(fixture.sandbox.state.changeSubscriptions(tokens: devices.map(\.handle), topic: "news", subscribe: true) == [nil, nil])
            #expect(fixture.sandbox.state.changeSubscriptions(tokens: [devices[1].handle], topic: "eu", subscribe: true) == [nil])
            let topic = try await fixture.call("POST", "/api/notifications?pns=fcm&topic=news", user: "bob", body: #""extra""#)
            #expect(topic.status == 200, "\(topic.bodyText)")
            let result = try json(topic)
            #expect(result["success"] as? Int == 1, "\(result)")
            let target = try #require((result["targets"] as? [[String: Any]])?.first)
            #expect(target["registrationId"] as? String == "fcm-topic" && target["handle"] as? String == "/topics/news", "\(target)")
            for device in devices { #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1) }
            let payload = try #require(await fixture.sandbox.state.inbox(deviceID: devices[0].id).first?.payload)
            #expect(payload.contains(#""topic":"news""#) && !payload.contains(#""token""#), "\(payload)")

            let condition = "'news' in topics && !('eu' in topics)"
            let encoded = condition.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let conditional = try await fixture.call(
                "POST", "/api/notifications?pns=fcm&condition=\(encoded)&async=true", user: "bob", body: #""only outside the eu""#)
            #expect(conditional.status == 202, "\(conditional.bodyText)")
            let id = try #require(try json(conditional)["notificationId"] as? String)
            let outcome = try await waitForFinal(fixture, id)
            #expect(outcome["state"] as? String == "Completed" && outcome["success"] as? Int == 1, "\(outcome)")
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[0].id).count == 2)
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[1].id).count == 1)

            for (query, expected) in [
                ("pns=fcm&topic=bad%20name", "topic: has an invalid character U+0020 at position 4"),
                ("pns=apns&topic=news", "pns: a topic or condition send is FCM v1's alone"),
                ("pns=fcm&topic=news&to_tag=alice", "topic and condition replace to_tag and tags"),
                ("pns=fcm&topic=news&condition=%27a%27%20in%20topics", "give topic or condition, not both"),
                ("pns=fcm&condition=%27a%27%20in%20topics%20%26%26", "condition: ends where a topic is expected"),
                ("pns=fcm&topic=news&secure=true", "secure push goes to one user"),
            ] {
                let refused = try await fixture.call("POST", "/api/notifications?\(query)", user: "bob", body: #""x""#)
                #expect(refused.status == 400 && refused.bodyText.contains(expected), "\(query): \(refused.bodyText)")
            }
        }
    }
}
