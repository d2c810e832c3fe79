import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import Testing

@Suite struct LiveActivitySandboxTests {
    func reason(_ response: CurlResponse) -> String? { response.json?["reason"]?.stringValue }

    static func start(_ timestamp: Int, name: String = "order-42", state: String, extra: String = #","input-push-token":1"#) -> String {
        #"{"timestamp":\#(timestamp),"event":"start","content-state":\#(state),"attributes-type":"DeliveryAttributes","attributes":{"activityName":"\#(name)","orderID":"42"},"alert":{"title":"On its way","body":"Your order left"}\#(extra)}"#
    }

    static func update(_ timestamp: Int, state: String, event: String = "update", extra: String = "") -> String {
        #"{"timestamp":\#(timestamp),"event":"\#(event)","content-state":\#(state)\#(extra)}"#
    }

    @Test func aStartedActivityTakesUpdatesInTimestampOrderUntilItEnds() async throws {
        try await SandboxFixture.with { fixture, client in
            try await fixture.withControl { control in
                let device = await fixture.sandbox.createDevice(.apns)
                let jwt = try await fixture.providerToken()
                let pushToStart = try await fixture.pushToStartToken(control, deviceID: device.id)
                #expect(pushToStart.utf8.count == 64)

                let started = try await client.execute(
                    fixture.liveActivityRequest(token: pushToStart, jwt: jwt, aps: Self.start(1000, state: #"{"eta":"10:00","stops":3}"#)))
                #expect(started.status == 200)
                var activities = try await fixture.activities(control, deviceID: device.id)
                #expect(activities.count == 1)
                let updateToken = try #require(activities.first?["updateToken"]?.stringValue)
                #expect(
                    updateToken.utf8.count == 64 && updateToken.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
                )
                #expect(activities.first?["name"]?.stringValue == "order-42")
                #expect(activities.first?["attributesType"]?.stringValue == "DeliveryAttributes")
                #expect(activities.first?["state"]?.stringValue == "active")
                #expect(activities.first?["contentState"]?.text == #"{"eta":"10:00","stops":3}"#)
                #expect(activities.first?["alert"]?["title"]?.stringValue == "On its way")

                // Two updates, then one older than the last applied: APNs answers 200, the device ignores it.
                for (timestamp, state) in [(1001, #"{"eta":"10:05","stops":2}"#), (1002, #"{"eta":"10:10","stops":1.50}"#)] {
                    let response = try await client.execute(
                        fixture.liveActivityRequest(token: updateToken, jwt: jwt, aps: Self.update(timestamp, state: state)))
                    #expect(response.status == 200)
                }
                let stale = try await client.execute(
                    fixture.liveActivityRequest(
                        token: updateToken, jwt: jwt, aps: Self.update(1001, state: #"{"eta":"stale","stops":9}"#),
                        headers: [("apns-priority", "5")]))
                #expect(stale.status == 200)
                activities = try await fixture.activities(control, deviceID: device.id)
                #expect(activities.first?["contentState"]?.text == #"{"eta":"10:10","stops":1.50}"#)
                #expect(activities.first?["timestamp"]?.text == "1002")
                #expect(activities.first?["updates"]?.text == "2")
                #expect(activities.first?["ignored"]?.text == "1")

                // The end keeps its final state; the update token is dead from then on.
                let dismissal = Int(fixture.clock.now.secondsSinceEpoch) + 3600
                let end = try await client.execute(
                    fixture.liveActivityRequest(
                        token: updateToken, jwt: jwt,
                        aps: Self.update(
                            1003, state: #"{"eta":"delivered","stops":0}"#, event: "end", extra: #","dismissal-date":\#(dismissal)"#)))
                #expect(end.status == 200)
                let read = try await fixture.control(control, "GET", "/activities/\(updateToken)")
                #expect(read.status == 200)
                #expect(read.json?["state"]?.stringValue == "ended")
                #expect(read.json?["contentState"]?.text == #"{"eta":"delivered","stops":0}"#)
                #expect(read.json?["dismissalDate"]?.text == String(dismissal))
                let endedAt = Int64(fixture.clock.now.secondsSinceEpoch * 1000)

                fixture.clock.advance(seconds: 60)
                let late = try await client.execute(
                    fixture.liveActivityRequest(token: updateToken, jwt: jwt, aps: Self.update(1004, state: #"{"eta":"again","stops":0}"#)))
                #expect(late.status == 410)
                #expect(reason(late) == "Unregistered")
                #expect(late.json?["timestamp"]?.text == String(endedAt))

                // Past its dismissal date the activity is gone from the Lock Screen.
                fixture.clock.advance(seconds: 3600)
                #expect(try await fixture.control(control, "GET", "/activities/\(updateToken)").json?["state"]?.stringValue == "dismissed")
                // Every push the device received is in its inbox (the ignored one too; not the refused one).
                let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
                #expect(inbox.count == 5)
                #expect(inbox.allSatisfy { $0.header("apns-push-type") == "liveactivity" })
                #expect(try await fixture.control(control, "GET", "/activities/\(String(repeating: "0", count: 64))").status == 404)
            }
        }
    }

    @Test func pushToStartTokensAreOnePerAttributesTypeAndTheReplacedOneIsGone() async throws {
        try await SandboxFixture.with { fixture, client in
            try await fixture.withControl { control in
                let device = await fixture.sandbox.createDevice(.apns)
                let jwt = try await fixture.providerToken()
                let first = try await fixture.pushToStartToken(control, deviceID: device.id)
                let second = try await fixture.pushToStartToken(control, deviceID: device.id)
                let other = try await fixture.pushToStartToken(control, deviceID: device.id, attributesType: "ScoreAttributes")
                #expect(Set([first, second, other]).count == 3)

                let start = Self.start(1, name: "a", state: #"{"n":1}"#, extra: "")
                let gone = try await client.execute(fixture.liveActivityRequest(token: first, jwt: jwt, aps: start))
                #expect(gone.status == 410)
                #expect(reason(gone) == "Unregistered")
                #expect(gone.json?["timestamp"] != nil)
                #expect(try await client.execute(fixture.liveActivityRequest(token: second, jwt: jwt, aps: start)).status == 200)
                // A start of another attributes type: APNs delivers it, ActivityKit starts nothing.
                #expect(try await client.execute(fixture.liveActivityRequest(token: other, jwt: jwt, aps: start)).status == 200)
                let activities = try await fixture.activities(control, deviceID: device.id)
                #expect(activities.map { $0["name"]?.stringValue } == ["a"])
                // Without input-push-token the activity has no update token.
                #expect(activities.first?["updateToken"]?.kind == .null)
                // A start without an activityName is named by its id.
                let unnamed = #"{"timestamp":2,"event":"start","content-state":{},"attributes-type":"DeliveryAttributes","attributes":{}}"#
                #expect(try await client.execute(fixture.liveActivityRequest(token: second, jwt: jwt, aps: unnamed)).status == 200)
                let names = try await fixture.activities(control, deviceID: device.id).compactMap { $0["name"]?.stringValue }
                #expect(names.count == 2 && names[1].hasPrefix("activity-"))

                #expect(try await fixture.control(control, "POST", "/devices/\(device.id)/pushtostart", #"{"type":"X"}"#).status == 400)
                #expect(try await fixture.control(control, "POST", "/devices/\(device.id)/pushtostart", "{}").status == 400)
                let fcm = await fixture.sandbox.createDevice(.fcm)
                #expect(
                    try await fixture.control(control, "POST", "/devices/\(fcm.id)/pushtostart", #"{"attributesType":"X"}"#).status == 404)
            }
        }
    }

    @Test func liveActivityPayloadsNeedTheKeysOfTheirEvent() async throws {
        try await SandboxFixture.with { fixture, client in
            try await fixture.withControl { control in
                let device = await fixture.sandbox.createDevice(.apns)
                let jwt = try await fixture.providerToken()
                let token = try await fixture.pushToStartToken(control, deviceID: device.id)
                let cases: [(String, [(String, String)], Int, String)] = [
                    (#"{"timestamp":1,"content-state":{}}"#, [], 400, "MissingEvent"),
                    (#"{"timestamp":1,"event":"pause","content-state":{}}"#, [], 400, "BadEvent"),
                    (#"{"event":"update","content-state":{}}"#, [], 400, "MissingTimestamp"),
                    (#"{"timestamp":"now","event":"update","content-state":{}}"#, [], 400, "BadTimestamp"),
                    (#"{"timestamp":1,"event":"update"}"#, [], 400, "MissingContentState"),
                    (#"{"timestamp":1,"event":"start","content-state":{},"attributes":{}}"#, [], 400, "MissingAttributesType"),
                    (#"{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T"}"#, [], 400, "MissingAttributes"),
                    (
                        #"{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T","attributes":{},"input-push-token":1,"input-push-channel":"AAAA"}"#,
                        [], 400, "BadInputPush"
                    ),
                    (
                        #"{"timestamp":1,"event":"start","content-state":{},"attributes-type":"DeliveryAttributes","attributes":{},"input-push-channel":"AAAAAAAAAAAAAAAAAAAAAA=="}"#,
                        [], 400, "ChannelNotRegistered"
                    ),
                    (#"{"timestamp":1,"event":"end","content-state":{},"dismissal-date":"soon"}"#, [], 400, "BadDate"),
                    (#"{"timestamp":1,"event":"update","content-state":{}}"#, [("apns-priority", "7")], 400, "BadPriority"),
                    (#"{"timestamp":1,"event":"end","x":"\#(String(repeating: "x", count: 4100))"}"#, [], 413, "PayloadTooLarge"),
                ]
                for (aps, headers, status, expected) in cases {
                    let response = try await client.execute(fixture.liveActivityRequest(token: token, jwt: jwt, aps: aps, headers: headers))
                    #expect(response.status == status, "\(aps)")
                    #expect(reason(response) == expected, "\(aps)")
                }
                // An end needs no content state; priorities 5 and 10 are accepted, 1 is not (§7: 5 or 10).
                for priority in ["5", "10", "1"] {
                    let response = try await client.execute(
                        fixture.liveActivityRequest(
                            token: token, jwt: jwt, aps: #"{"timestamp":1,"event":"end"}"#, headers: [("apns-priority", priority)]))
                    #expect(response.status == (priority == "1" ? 400 : 200), "priority \(priority)")
                }
                #expect(try await fixture.activities(control, deviceID: device.id).isEmpty)
            }
        }
    }

    @Test func eachPushTypeGoesToItsOwnTopic() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let jwt = try await fixture.providerToken()
            let app = fixture.sandbox.credentials.apnsTopic
            let suffixes = [
                "voip": ".voip", "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "location": ".location-query",
                "liveactivity": ".push-type.liveactivity", "pushtotalk": ".voip-ptt", "widgets": ".push-type.widgets",
                "controls": ".push-type.controls",
            ]
            for (pushType, suffix) in suffixes {
                for topic in [app, app + ".push-type.other", app + (suffix == ".voip" ? ".voip-ptt" : ".voip")] {
                    let response = try await client.execute(
                        fixture.apnsRequest(token: device.handle, jwt: jwt, headers: [("apns-push-type", pushType), ("apns-topic", topic)]))
                    #expect(response.status == 400, "\(pushType) \(topic)")
                    #expect(reason(response) == "TopicDisallowed", "\(pushType) \(topic)")
                }
            }
            for pushType in ["widgets", "controls"] {
                let response = try await client.execute(
                    fixture.apnsRequest(
                        token: device.handle, jwt: jwt, payload: #"{"aps":{"content-changed":true}}"#,
                        headers: [("apns-push-type", pushType), ("apns-topic", app + suffixes[pushType]!)]))
                #expect(response.status == 200, "\(pushType)")
            }
            for pushType in ["alert", "background"] {
                let response = try await client.execute(
                    fixture.apnsRequest(
                        token: device.handle, jwt: jwt,
                        headers: [("apns-push-type", pushType), ("apns-priority", "5"), ("apns-topic", app + ".push-type.widgets")]))
                #expect(reason(response) == "TopicDisallowed", "\(pushType)")
            }
        }
    }

    @Test func liveActivityTokensTakeOnlyLiveActivitiesWithAProviderToken() async throws {
        try await SandboxFixture.with { fixture, client in
            try await fixture.withControl { control in
                let device = await fixture.sandbox.createDevice(.apns)
                let jwt = try await fixture.providerToken()
                let token = try await fixture.pushToStartToken(control, deviceID: device.id)
                var alert = fixture.apnsRequest(token: token, jwt: jwt)
                #expect(reason(try await client.execute(alert)) == "DeviceTokenNotForTopic")
                alert.headers.removeAll { $0.name == "apns-push-type" }
                alert.headers.removeAll { $0.name == "apns-topic" }
                alert.headers.append(("apns-topic", fixture.liveActivityTopic))
                #expect(reason(try await client.execute(alert)) == "InvalidPushType")

                // A certificate cannot send Live Activities (nor location pushes): JWT only.
                let certificate = fixture.files["apnsCertificate"]
                let withCertificate = try CurlHTTPClient(
                    configuration: .init(caFile: fixture.files["ca"], clientCertificateFile: certificate, clientKeyFile: certificate))
                var request = fixture.liveActivityRequest(token: token, jwt: jwt, aps: Self.start(1, state: "{}"))
                request.headers.removeAll { $0.name == "authorization" }
                let refused = try await withCertificate.execute(request)
                #expect(refused.status == 403)
                #expect(reason(refused) == "InvalidProviderToken")
                // The same certificate still sends alerts.
                var plain = fixture.apnsRequest(token: device.handle, jwt: jwt)
                plain.headers.removeAll { $0.name == "authorization" }
                #expect(try await withCertificate.execute(plain).status == 200)
                // A gone device's Live Activity tokens are gone too.
                await fixture.sandbox.state.setStatus(.uninstalled, deviceID: device.id)
                let gone = try await client.execute(fixture.liveActivityRequest(token: token, jwt: jwt, aps: Self.start(1, state: "{}")))
                #expect(gone.status == 410)
                #expect(reason(gone) == "Unregistered")
                await withCertificate.shutdown()
            }
        }
    }
}
