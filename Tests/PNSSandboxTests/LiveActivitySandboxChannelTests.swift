import Foundation
import JWTKit
import PNSSandbox
import Pushgate
import PushgateCurl
import Testing

@Suite struct LiveActivitySandboxChannelTests {
    func reason(_ response: CurlResponse) -> String? { response.json?["reason"]?.stringValue }

    @Test func channelsAreCreatedReadListedAndDeleted() async throws {
        try await SandboxFixture.with { fixture, client in
            let jwt = try await fixture.providerToken()
            let requestID = "0f7a3f6e-5b0c-4f6e-9c7d-1a2b3c4d5e6f"
            let created = try await client.execute(
                fixture.channelRequest(
                    "POST", jwt: jwt, headers: [("apns-request-id", requestID)],
                    body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#))
            #expect(created.status == 201)
            #expect(created.header("apns-request-id") == requestID)
            let first = try #require(created.header("apns-channel-id"))
            #expect(Data(base64Encoded: first)?.count == 16)
            let lowercase = try await client.execute(
                fixture.channelRequest("POST", jwt: jwt, body: #"{"message-storage-policy":1,"push-type":"liveactivity"}"#))
            #expect(lowercase.status == 201)
            let generated = try #require(lowercase.header("apns-request-id"))
            #expect(generated == generated.lowercased() && UUID(uuidString: generated) != nil)
            let second = try #require(lowercase.header("apns-channel-id"))

            let read = try await client.execute(fixture.channelRequest("GET", jwt: jwt, channelID: first))
            #expect(read.status == 200)
            #expect(read.bodyText == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
            #expect(
                try await client.execute(fixture.channelRequest("GET", jwt: jwt, channelID: second)).json?["message-storage-policy"]?.text
                    == "1")
            let list = try await client.execute(fixture.channelRequest("GET", "all-channels", jwt: jwt))
            #expect(list.status == 200)
            #expect(list.json?["channels"]?.arrayElements?.compactMap(\.stringValue) == [first, second])
            // Channels are per app.
            #expect(
                try await client.execute(fixture.channelRequest("GET", "all-channels", app: "com.other.app", jwt: jwt)).bodyText
                    == #"{"channels":[]}"#)
            #expect(
                reason(try await client.execute(fixture.channelRequest("GET", app: "com.other.app", jwt: jwt, channelID: first)))
                    == "ChannelNotRegistered")

            let deleted = try await client.execute(fixture.channelRequest("DELETE", jwt: jwt, channelID: first))
            #expect(deleted.status == 204)
            #expect(deleted.header("apns-request-id") != nil)
            for method in ["GET", "DELETE"] {
                let gone = try await client.execute(fixture.channelRequest(method, jwt: jwt, channelID: first))
                #expect(gone.status == 400)
                #expect(reason(gone) == "ChannelNotRegistered")
            }
            #expect(
                try await client.execute(fixture.channelRequest("GET", "all-channels", jwt: jwt)).json?["channels"]?.arrayElements?.count
                    == 1)
        }
    }

    @Test func channelManagementRefusesWithApplesReasons() async throws {
        try await SandboxFixture.with { fixture, client in
            let jwt = try await fixture.providerToken()
            let forged = try await fixture.providerToken(pem: ES256PrivateKey().pemRepresentation)
            let cases: [(CurlRequest, Int, String)] = [
                (fixture.channelRequest("GET", jwt: jwt), 400, "MissingChannelId"),
                (fixture.channelRequest("DELETE", jwt: jwt), 400, "MissingChannelId"),
                (fixture.channelRequest("GET", jwt: jwt, channelID: "not base64!"), 400, "BadChannelId"),
                (fixture.channelRequest("GET", jwt: jwt, channelID: String(repeating: "A", count: 100)), 400, "BadChannelId"),
                (fixture.channelRequest("GET", jwt: jwt, channelID: "AAAAAAAAAAAAAAAAAAAAAA=="), 400, "ChannelNotRegistered"),
                (fixture.channelRequest("POST", jwt: jwt, body: #"{"message-storage-policy":0}"#), 400, "MissingPushType"),
                (
                    fixture.channelRequest("POST", jwt: jwt, body: #"{"message-storage-policy":0,"push-type":"alert"}"#), 400,
                    "InvalidPushType"
                ),
                (fixture.channelRequest("POST", jwt: jwt, body: #"{"push-type":"LiveActivity"}"#), 400, "BadMessageStoragePolicy"),
                (
                    fixture.channelRequest("POST", jwt: jwt, body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#), 400,
                    "BadMessageStoragePolicy"
                ),
                (fixture.channelRequest("POST", jwt: jwt, body: "nope"), 400, "BadRequest"),
                (fixture.channelRequest("PUT", jwt: jwt), 405, "MethodNotAllowed"),
                (fixture.channelRequest("POST", "all-channels", jwt: jwt), 405, "MethodNotAllowed"),
                (fixture.channelRequest("GET", "everything", jwt: jwt), 404, "BadPath"),
                (fixture.channelRequest("GET", "all-channels", app: "", jwt: jwt), 404, "BadPath"),
                (fixture.channelRequest("GET", "all-channels", jwt: forged), 403, "InvalidProviderToken"),
            ]
            for (request, status, expected) in cases {
                let response = try await client.execute(request)
                #expect(response.status == status, "\(request.method) \(request.url) \(request.headers)")
                #expect(reason(response) == expected, "\(request.method) \(request.url) \(request.headers)")
                #expect(response.header("apns-request-id") != nil)
            }
            var anonymous = fixture.channelRequest("GET", "all-channels", jwt: jwt)
            anonymous.headers.removeAll { $0.name == "authorization" }
            let refused = try await client.execute(anonymous)
            #expect(refused.status == 403)
            #expect(reason(refused) == "MissingProviderToken")
        }
    }

    @Test func theChannelLimitRefusesMoreChannels() async throws {
        try await SandboxFixture.with(channelLimit: 2) { fixture, client in
            let jwt = try await fixture.providerToken()
            let first = try await fixture.createChannel(client, jwt: jwt)
            _ = try await fixture.createChannel(client, jwt: jwt)
            let body = #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#
            let refused = try await client.execute(fixture.channelRequest("POST", jwt: jwt, body: body))
            #expect(refused.status == 400)
            #expect(reason(refused) == "CannotCreateChannelConfig")
            // The limit is per app; a deleted channel frees its place.
            #expect(try await client.execute(fixture.channelRequest("POST", app: "com.other.app", jwt: jwt, body: body)).status == 201)
            #expect(try await client.execute(fixture.channelRequest("DELETE", jwt: jwt, channelID: first)).status == 204)
            #expect(try await client.execute(fixture.channelRequest("POST", jwt: jwt, body: body)).status == 201)
        }
    }

    @Test func aBroadcastReachesEveryRunningActivityOnItsChannel() async throws {
        try await SandboxFixture.with { fixture, client in
            try await fixture.withControl { control in
                let jwt = try await fixture.providerToken()
                let channel = try await fixture.createChannel(client, jwt: jwt, policy: 1)
                let otherChannel = try await fixture.createChannel(client, jwt: jwt)
                let started = await fixture.sandbox.createDevice(.apns)
                let subscribed = await fixture.sandbox.createDevice(.apns)
                let elsewhere = await fixture.sandbox.createDevice(.apns)
                let uninstalled = await fixture.sandbox.createDevice(.apns)

                // One device starts its activity by push with input-push-channel; the others subscribe locally.
                let token = try await fixture.pushToStartToken(control, deviceID: started.id, attributesType: "MatchAttributes")
                let start =
                    #"{"timestamp":1,"event":"start","content-state":{"score":"0-0"},"attributes-type":"MatchAttributes","attributes":{"activityName":"match-7"},"input-push-channel":"\#(channel)"}"#
                #expect(try await client.execute(fixture.liveActivityRequest(token: token, jwt: jwt, aps: start)).status == 200)
                let subscribe = #"{"channelId":"\#(channel)","name":"match-7"}"#
                let first = try await fixture.control(control, "POST", "/devices/\(subscribed.id)/channels", subscribe)
                #expect(first.status == 201)
                let again = try await fixture.control(control, "POST", "/devices/\(subscribed.id)/channels", subscribe)
                #expect(again.status == 200)
                #expect(again.json?["id"] == first.json?["id"])
                #expect(
                    try await fixture.control(control, "POST", "/devices/\(elsewhere.id)/channels", #"{"channelId":"\#(otherChannel)"}"#)
                        .status == 201)
                #expect(try await fixture.control(control, "POST", "/devices/\(uninstalled.id)/channels", subscribe).status == 201)
                await fixture.sandbox.state.setStatus(.uninstalled, deviceID: uninstalled.id)
                #expect(
                    try await fixture.control(
                        control, "POST", "/devices/\(subscribed.id)/channels", #"{"channelId":"AAAAAAAAAAAAAAAAAAAAAA=="}"#
                    ).status == 404)

                let requestID = "8f4d1d2a-6a1b-4c53-9d7e-0b1c2d3e4f50"
                let sent = try await client.execute(
                    fixture.broadcastRequest(
                        channelID: channel, jwt: jwt, aps: #"{"timestamp":10,"event":"update","content-state":{"score":"1-0"}}"#,
                        headers: [("apns-request-id", requestID), ("apns-expiration", "3600"), ("apns-priority", "5")]))
                #expect(sent.status == 200)
                #expect(sent.header("apns-request-id") == requestID)
                let older = fixture.broadcastRequest(
                    channelID: channel, jwt: jwt, aps: #"{"timestamp":9,"event":"update","content-state":{"score":"0-1"}}"#)
                #expect(try await client.execute(older).status == 200)
                for device in [started, subscribed] {
                    let activity = try await fixture.activities(control, deviceID: device.id).first
                    #expect(activity?["name"]?.stringValue == "match-7")
                    #expect(activity?["channel"]?.stringValue == channel)
                    #expect(activity?["updateToken"]?.kind == .null)
                    #expect(activity?["contentState"]?.text == #"{"score":"1-0"}"#)
                    #expect(activity?["updates"]?.text == "1")
                    #expect(activity?["ignored"]?.text == "1")
                }
                #expect(try await fixture.activities(control, deviceID: elsewhere.id).first?["contentState"]?.kind == .null)

                let end = fixture.broadcastRequest(
                    channelID: channel, jwt: jwt, aps: #"{"timestamp":11,"event":"end","content-state":{"score":"2-1"}}"#)
                #expect(try await client.execute(end).status == 200)
                let after = fixture.broadcastRequest(
                    channelID: channel, jwt: jwt, aps: #"{"timestamp":12,"event":"update","content-state":{"score":"3-1"}}"#)
                #expect(try await client.execute(after).status == 200)
                for device in [started, subscribed] {
                    let activity = try await fixture.activities(control, deviceID: device.id).first
                    #expect(activity?["state"]?.stringValue == "ended")
                    #expect(activity?["contentState"]?.text == #"{"score":"2-1"}"#)
                }
                // Each device's inbox: the three broadcasts it was running for (and the start).
                var inboxes: [[ReceivedNotification]] = []
                for device in [started, subscribed, elsewhere, uninstalled] {
                    inboxes.append(await fixture.sandbox.state.inbox(deviceID: device.id))
                }
                #expect(inboxes.map(\.count) == [4, 3, 0, 0])
                #expect(inboxes[1].first?.messageID == requestID)
                #expect(inboxes[1].first?.payload == #"{"aps":{"timestamp":10,"event":"update","content-state":{"score":"1-0"}}}"#)
            }
        }
    }

    @Test func broadcastsAreRefusedWithApplesReasons() async throws {
        try await SandboxFixture.with { fixture, client in
            let jwt = try await fixture.providerToken()
            let noStorage = try await fixture.createChannel(client, jwt: jwt, policy: 0)
            let deleted = try await fixture.createChannel(client, jwt: jwt)
            #expect(try await client.execute(fixture.channelRequest("DELETE", jwt: jwt, channelID: deleted)).status == 204)
            let update = #"{"timestamp":1,"event":"update","content-state":{}}"#
            func broadcast(_ channel: String? = noStorage, aps: String = update, headers: [(String, String)] = []) -> CurlRequest {
                fixture.broadcastRequest(channelID: channel, jwt: jwt, aps: aps, headers: headers)
            }
            let cases: [(CurlRequest, Int, String)] = [
                (broadcast(headers: [("apns-expiration", "3600")]), 400, "BadExpirationDate"),
                (broadcast(headers: [("apns-expiration", "soon")]), 400, "BadExpirationDate"),
                (
                    broadcast(aps: #"{"timestamp":1,"event":"start","content-state":{},"attributes-type":"T","attributes":{}}"#), 400,
                    "BadEvent"
                ),
                (broadcast(aps: #"{"timestamp":1,"event":"update"}"#), 400, "MissingContentState"),
                (broadcast(nil), 400, "MissingChannelId"),
                (broadcast("%%%"), 400, "BadChannelId"),
                (broadcast(deleted), 400, "ChannelNotRegistered"),
                (broadcast(headers: [("apns-push-type", "alert")]), 400, "InvalidPushType"),
                (broadcast(headers: [("apns-priority", "1")]), 400, "BadPriority"),
            ]
            for (request, status, expected) in cases {
                let response = try await client.execute(request)
                #expect(response.status == status, "\(request.headers) \(String(decoding: request.body, as: UTF8.self))")
                #expect(reason(response) == expected, "\(request.headers) \(String(decoding: request.body, as: UTF8.self))")
            }
            for (header, expected) in [
                ("apns-push-type", "MissingPushType"), ("apns-expiration", "BadExpirationDate"), ("apns-priority", "BadPriority"),
            ] {
                var request = broadcast()
                request.headers.removeAll { $0.name == header }
                #expect(reason(try await client.execute(request)) == expected, "\(header)")
            }
            #expect(try await client.execute(broadcast(headers: [("apns-push-type", "Liveactivity")])).status == 200)

            // 5120 bytes at most.
            var request = broadcast()
            let padding = 5120 - request.body.count - #","x":"""#.utf8.count
            request.body = Array(#"{"aps":\#(update),"x":"\#(String(repeating: "x", count: padding))"}"#.utf8)
            #expect(request.body.count == 5120)
            #expect(try await client.execute(request).status == 200)
            request.body = Array(#"{"aps":\#(update),"x":"\#(String(repeating: "x", count: padding + 1))"}"#.utf8)
            let tooLarge = try await client.execute(request)
            #expect(tooLarge.status == 413)
            #expect(reason(tooLarge) == "PayloadTooLarge")
            request.body = []
            #expect(reason(try await client.execute(request)) == "PayloadEmpty")

            request = broadcast()
            request.method = "GET"
            #expect(try await client.execute(request).status == 405)
            request = broadcast()
            request.url = fixture.sandbox.endpoints.apns + "/4/broadcasts/apps/"
            #expect(reason(try await client.execute(request)) == "BadPath")
            request = broadcast()
            request.headers.removeAll { $0.name == "authorization" }
            #expect(reason(try await client.execute(request)) == "MissingProviderToken")
        }
    }

    @Test func faultsAndStatsCoverChannelsAndBroadcasts() async throws {
        try await SandboxFixture.with { fixture, client in
            try await fixture.withControl { control in
                let jwt = try await fixture.providerToken()
                let channel = try await fixture.createChannel(client, jwt: jwt, policy: 0)
                await fixture.sandbox.state.addFault(
                    SandboxFault(
                        service: .apnsChannels, handle: channel,
                        action: .respond(status: 500, reason: "InternalServerError", retryAfterSeconds: nil)))
                let faulted = try await client.execute(fixture.channelRequest("GET", jwt: jwt, channelID: channel))
                #expect(faulted.status == 500)
                #expect(reason(faulted) == "InternalServerError")
                #expect(try await client.execute(fixture.channelRequest("GET", jwt: jwt, channelID: channel)).status == 200)

                let fault =
                    #"{"service":"apnsBroadcast","handle":"\#(channel)","count":2,"action":{"respond":{"status":429,"reason":"TooManyRequests","retryAfterSeconds":2}}}"#
                #expect(try await fixture.control(control, "POST", "/faults", fault).status == 201)
                let update = #"{"timestamp":1,"event":"update","content-state":{}}"#
                for _ in 0..<2 {
                    let response = try await client.execute(fixture.broadcastRequest(channelID: channel, jwt: jwt, aps: update))
                    #expect(response.status == 429)
                    #expect(reason(response) == "TooManyRequests")
                    #expect(response.header("retry-after") == "2")
                }
                #expect(try await client.execute(fixture.broadcastRequest(channelID: channel, jwt: jwt, aps: update)).status == 200)

                let stats = await fixture.sandbox.state.answeredCounts()
                #expect(stats["apns-channels 201"] == 1)
                #expect(stats["apns-channels 500"] == 1)
                #expect(stats["apns-channels 200"] == 1)
                #expect(stats["apns-broadcast 429"] == 2)
                #expect(stats["apns-broadcast 200"] == 1)
            }
        }
    }
}
