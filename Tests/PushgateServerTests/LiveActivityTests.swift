import Foundation
import Logging
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateDispatch
import PushgateGateway
import PushgateServer
import PushgateTesting
import Testing

/// Live Activities through the tutorial API, against the sandbox's ActivityKit devices: a start
/// to a push-to-start token, the update token the device then issues registered as the app
/// would, updates in order, an older timestamp refused, an end that retires the tokens; and the
/// walls between an activity's tokens, ordinary sends and other users.
@Suite struct LiveActivityTests {
    static let type = "DeliveryAttributes"

    /// A fresh registration id of `user`'s.
    static func reserve(_ fixture: GatewayFixture, user: String) async throws -> String {
        let response = try await fixture.call("POST", "/api/register", user: user)
        return try #require(try JSONParser.parse(response.body).stringValue, "\(response.bodyText)")
    }

    /// Registers `token` as `user`'s Live Activity token of `kind`.
    static func register(_ fixture: GatewayFixture, user: String, token: String, kind: String, extra: String) async throws {
        let id = try await reserve(fixture, user: user)
        let response = try await fixture.call(
            "PUT", "/api/register/\(id)", user: user,
            body: #"{"Platform":"apns","Handle":"\#(token)","Kind":"\#(kind)",\#(extra)}"#)
        #expect(response.status == 200, "\(response.bodyText)")
    }

    /// `user`'s phone with a push-to-start token registered, started as `name` through the API;
    /// the update token the start made the device issue registered under `name`, as the app does.
    static func started(_ fixture: GatewayFixture, user: String, name: String) async throws -> (device: SandboxDevice, updateToken: String)
    {
        let phone = await fixture.sandbox.createDevice(.apns)
        let startToken = fixture.sandbox.state.liveActivities.issuePushToStartToken(deviceID: phone.id, attributesType: type)
        try await register(fixture, user: user, token: startToken, kind: "pushToStart", extra: #""AttributesType":"\#(type)""#)
        let start = try await fixture.call(
            "POST", "/api/liveactivities/\(name)?event=start", user: user,
            body: #"""
                {"attributes-type":"DeliveryAttributes","attributes":{"orderId":"4711"},"content-state":{"status":"packed"},
                 "alert":{"title":"Your order","body":"Packed"},"input-push-token":1}
                """#)
        #expect(start.status == 200, "\(start.bodyText)")
        #expect(try JSONParser.parse(start.body)["success"]?.kind == .number("1"), "\(start.bodyText)")
        let activity = try #require(fixture.sandbox.state.liveActivities.activities(deviceID: phone.id).first)
        #expect(activity.name == name, "the start carries the name under attributes.activityName")
        let updateToken = try #require(activity.updateToken, "input-push-token: 1 makes the device issue an update token")
        try await register(fixture, user: user, token: updateToken, kind: "liveActivity", extra: #""Activity":"\#(name)""#)
        return (phone, updateToken)
    }

    @Test func aStartTwoUpdatesAndAnEndReachTheDeviceInOrderAndTheEndRetiresTheTokens() async throws {
        try await GatewayFixture.inProcess { fixture in
            let laptop = await fixture.sandbox.createDevice(.apns)
            _ = try await fixture.register(laptop, user: "alice")
            let (phone, updateToken) = try await Self.started(fixture, user: "alice", name: "order-4711")
            let activities = fixture.sandbox.state.liveActivities
            for state in [#"{"status":"shipped"}"#, #"{"status":"out for delivery","eta":1.50}"#] {
                let update = try await fixture.call(
                    "POST", "/api/liveactivities/order-4711?event=update&priority=5", body: #"{"content-state":\#(state)}"#)
                #expect(update.status == 200, "\(update.bodyText)")
                #expect(try JSONParser.parse(update.body)["success"]?.kind == .number("1"), "\(update.bodyText)")
            }
            var shown = try #require(activities.activity(updateToken: updateToken))
            #expect(shown.contentState?.serialized() == Array(#"{"status":"out for delivery","eta":1.50}"#.utf8))
            #expect(shown.updates == 2 && shown.ignored == 0)
            // A timestamp older than the activity's newest: refused, so the device never sees it.
            let older = try await fixture.call(
                "POST", "/api/liveactivities/order-4711?event=update", body: #"{"content-state":{"status":"lost"},"timestamp":1000}"#)
            #expect(older.status == 409, "\(older.bodyText)")
            let end = try await fixture.call(
                "POST", "/api/liveactivities/order-4711?event=end", body: #"{"content-state":{"status":"delivered"}}"#)
            #expect(end.status == 200, "\(end.bodyText)")
            shown = try #require(activities.activity(updateToken: updateToken))
            #expect(shown.contentState?.serialized() == Array(#"{"status":"delivered"}"#.utf8))
            #expect(activities.state(of: shown) == .ended)
            // Retired once sent: the activity has no device left, and an update reaches nobody.
            let record = try await fixture.call("GET", "/api/liveactivities/order-4711")
            let body = try JSONParser.parse(record.body)
            #expect(body["devices"]?.arrayElements?.isEmpty == true, "\(record.bodyText)")
            #expect(body["event"]?.stringValue == "end")
            #expect(body["sends"]?.kind == .number("4"))
            #expect(body["immediateSends"]?.kind == .number("2"), "the start and the end at 10, the updates at 5")
            #expect(body["contentState"]?.stringValue == #"{"status":"delivered"}"#)
            let after = try await fixture.call(
                "POST", "/api/liveactivities/order-4711?event=update", body: #"{"content-state":{"status":"again"}}"#)
            #expect(after.status == 404, "\(after.bodyText)")
            // An ordinary send to alice reaches her laptop only, never a Live Activity token.
            let ordinary = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""hello""#)
            #expect(try JSONParser.parse(ordinary.body)["success"]?.kind == .number("1"), "\(ordinary.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: laptop.id).count == 1)
            #expect(await fixture.sandbox.state.inbox(deviceID: phone.id).count == 4, "start, two updates, end")
        }
    }

    @Test func bobCanNeitherFollowNorSendToAlicesActivity() async throws {
        try await GatewayFixture.inProcess { fixture in
            let (_, alicesToken) = try await Self.started(fixture, user: "alice", name: "order-4711")
            // bob registers a token under the same name: it is his own activity of that name.
            let (_, bobsToken) = try await Self.started(fixture, user: "bob", name: "order-4711")
            let update = try await fixture.call(
                "POST", "/api/liveactivities/order-4711?event=update", user: "bob", body: #"{"content-state":{"status":"bob's"}}"#)
            #expect(try JSONParser.parse(update.body)["success"]?.kind == .number("1"), "\(update.bodyText)")
            let activities = fixture.sandbox.state.liveActivities
            #expect(activities.activity(updateToken: bobsToken)?.contentState?.serialized() == Array(#"{"status":"bob's"}"#.utf8))
            #expect(activities.activity(updateToken: alicesToken)?.contentState?.serialized() == Array(#"{"status":"packed"}"#.utf8))
            // Each sees their own activity only.
            let alices = try await fixture.call("GET", "/api/liveactivities/order-4711", user: "alice")
            #expect(try JSONParser.parse(alices.body)["sends"]?.kind == .number("1"), "\(alices.bodyText)")
            #expect(try await fixture.call("GET", "/api/liveactivities", user: "carol").bodyText == "[]")
            // A user cannot name another owner; a Live Activity token is an APNs token.
            #expect(
                try await fixture.call(
                    "PUT", "/api/register/\(try await Self.reserve(fixture, user: "bob"))", user: "bob",
                    body: #"{"Platform":"fcm","Handle":"abcdefghijklmnopqrstuvwxyz","Kind":"liveActivity","Activity":"order-4711"}"#
                ).status == 400)
        }
    }

    /// `properties` fill the app's `liveactivity` template: the content state it renders.
    @Test func propertiesFillTheAppsLiveActivityTemplate() async throws {
        let template: @Sendable (inout [String: Any]) -> Void = { config in
            var apps = config["apps"] as? [String: Any] ?? [:]
            var app = apps["default"] as? [String: Any] ?? [:]
            var templates = app["templates"] as? [String: Any] ?? [:]
            templates["liveactivity"] = ["apns": ["body": ##"{"status":"$(status)","note":"{'Order ' + $(order)}","eta":"#(eta)"}"##]]
            app["templates"] = templates
            apps["default"] = app
            config["apps"] = apps
        }
        try await GatewayFixture.inProcess(rewrite: template) { fixture in
            let (_, token) = try await Self.started(fixture, user: "alice", name: "order-7")
            let update = try await fixture.call(
                "POST", "/api/liveactivities/order-7?event=update", body: #"{"properties":{"status":"shipped","order":"7","eta":"1.5"}}"#)
            #expect(update.status == 200, "\(update.bodyText)")
            let shown = fixture.sandbox.state.liveActivities.activity(updateToken: token)
            #expect(shown?.contentState?.serialized() == Array(#"{"status":"shipped","note":"Order 7","eta":1.5}"#.utf8))
            let notStrings = try await fixture.call(
                "POST", "/api/liveactivities/order-7?event=update", body: #"{"properties":{"order":7}}"#)
            #expect(notStrings.status == 400, "\(notStrings.bodyText)")
        }
    }

    @Test func badSendsAreRefusedNamingTheField() async throws {
        try await GatewayFixture.inProcess { fixture in
            for (query, body, fragment) in [
                ("event=start", #"{"content-state":{}}"#, "attributes-type and attributes"),
                ("event=update", #"{}"#, "content-state"),
                ("event=update", #"{"content-state":{},"attributes":{}}"#, "belong to a start"),
                ("event=stop", #"{}"#, "event is required"),
                ("event=update&priority=7", #"{"content-state":{}}"#, "priority"),
                ("event=update", #"{"content-state":{},"colour":"red"}"#, "colour"),
                ("event=end", #"{"dismissal-date":"soon"}"#, "dismissal-date"),
            ] {
                let response = try await fixture.call("POST", "/api/liveactivities/order-4711?\(query)", body: body)
                #expect(response.status == 400, "\(query) \(body): \(response.bodyText)")
                #expect(response.bodyText.contains(fragment), "\(query) \(body): \(response.bodyText)")
            }
            let big = String(repeating: "x", count: 4200)
            let large = try await fixture.call(
                "POST", "/api/liveactivities/order-4711?event=update", body: #"{"content-state":{"note":"\#(big)"}}"#)
            #expect(large.status == 413, "\(large.bodyText)")
            #expect(try await fixture.call("POST", "/api/liveactivities/bad%20name?event=end", body: "{}").status == 400)
            for (query, body, status, fragment) in [
                (
                    "event=start", #"{"attributes-type":"A","attributes":{"activityName":"other"},"content-state":{}}"#, 400,
                    "names another activity"
                ),
                (
                    "event=start", #"{"attributes-type":"A","attributes":{},"content-state":{},"input-push-channel":"nope"}"#, 400,
                    "channels"
                ),
                ("event=start", #"{"attributes-type":"A","attributes":{},"content-state":{}}"#, 404, "push-to-start token"),
                ("event=update", #"{"content-state":{}}"#, 404, "no update token"),
            ] {
                let response = try await fixture.call("POST", "/api/liveactivities/order-4711?\(query)", body: body)
                #expect(response.status == status, "\(query) \(body): \(response.bodyText)")
                #expect(response.bodyText.contains(fragment), "\(query) \(body): \(response.bodyText)")
            }
            // Nothing refused was stamped: the activity does not exist.
            #expect(try await fixture.call("GET", "/api/liveactivities/order-4711").status == 404)
        }
    }

    @Test func aCertificateOnlyAppIsRefusedWithAClearError() async throws {
        // The sandbox's APNs client certificate (its PEM holds the key too) instead of the .p8 key.
        try await GatewayFixture.inProcess(
            rewrite: GatewayFixture.service("apns") { apns in
                let directory = ((apns["caFile"] as? String ?? "") as NSString).deletingLastPathComponent
                let pem = ["file": directory + "/apns-client.pem"]
                apns["token"] = nil
                apns["certificate"] = ["certificate": pem, "privateKey": pem]
            }
        ) { fixture in
            let response = try await fixture.call("POST", "/api/liveactivities/order-4711?event=end", body: "{}")
            #expect(response.status == 500, "the app's configuration is at fault: \(response.bodyText)")
            #expect(response.bodyText.contains("token authentication"), "\(response.bodyText)")
        }
    }

    /// The hub API's extension: a Listen key registers the tokens (as the app would), a Send key
    /// starts, updates and ends the hub's activity; a Listen key cannot send.
    @Test func theHubAPIRegistersTokensAndSendsByActivity() async throws {
        try await GatewayFixture.inProcess { fixture in
            let hub = try HubAPITests.Client(fixture)
            let listen = hub.token(rule: SharedAccessRule.defaultListenName)
            func reserve() async throws -> String {
                let reserved = try await hub.call("POST", "registrationIDs", authorization: listen)
                let location = try #require(reserved.header("Location"), "\(reserved.bodyText)")
                return try #require(location.split(separator: "/").last?.split(separator: "?").first.map(String.init))
            }
            let phone = await fixture.sandbox.createDevice(.apns)
            let activities = fixture.sandbox.state.liveActivities
            let startToken = activities.issuePushToStartToken(deviceID: phone.id, attributesType: Self.type)
            let put = try await hub.call(
                "PUT", "liveactivitytokens/\(try await reserve())",
                body: #"{"kind":"pushToStart","attributesType":"DeliveryAttributes","token":"\#(startToken)","tags":["fan-42"]}"#,
                authorization: listen)
            #expect(put.status == 200, "\(put.bodyText)")
            let refused = try await hub.call(
                "POST", "liveactivities/match-42?event=update", body: #"{"content-state":{}}"#, authorization: listen)
            #expect(refused.status == 401 || refused.status == 403, "a Listen key cannot send: \(refused.bodyText)")
            let start = try await hub.call(
                "POST", "liveactivities/match-42?event=start",
                body: #"{"attributes-type":"DeliveryAttributes","attributes":{},"content-state":{"score":"0-0"},"input-push-token":1}"#,
                headers: [("ServiceBusNotification-Tags", "fan-42")])
            #expect(start.status == 201, "\(start.bodyText)")
            let started = try await eventually {
                activities.activities(deviceID: phone.id)
            } until: {
                $0.first?.updateToken != nil
            }
            let updateToken = try #require(started.first?.updateToken)
            #expect(started.first?.name == "match-42")
            let registered = try await hub.call(
                "PUT", "liveactivitytokens/\(try await reserve())",
                body: #"{"kind":"liveActivity","activity":"match-42","token":"\#(updateToken)"}"#, authorization: listen)
            #expect(registered.status == 200, "\(registered.bodyText)")
            let update = try await hub.call("POST", "liveactivities/match-42?event=update", body: #"{"content-state":{"score":"1-0"}}"#)
            #expect(update.status == 201, "\(update.bodyText)")
            let shown = try await eventually {
                activities.activity(updateToken: updateToken)
            } until: {
                $0?.contentState?.serialized() == Array(#"{"score":"1-0"}"#.utf8)
            }
            #expect(shown?.contentState?.serialized() == Array(#"{"score":"1-0"}"#.utf8))
            // alice's activity of the same name is hers: the hub reaches it only by naming her.
            let alices = try await hub.call(
                "POST", "liveactivities/match-42?event=update&owner=alice", body: #"{"content-state":{"score":"9-9"}}"#)
            #expect(alices.status == 404, "alice has no activity of that name: \(alices.bodyText)")
            #expect(activities.activity(updateToken: updateToken)?.contentState?.serialized() == Array(#"{"score":"1-0"}"#.utf8))
            // The token routes touch Live Activity tokens only.
            let laptop = await fixture.sandbox.createDevice(.apns)
            let deviceID = try await fixture.register(laptop, user: "alice")
            #expect(try await hub.call("DELETE", "liveactivitytokens/\(deviceID)").status == 404)
        }
    }

    /// A channel created through Pushgate, two devices on it (one by a start with
    /// `input-push-channel`, one subscribed at the sandbox), one broadcast: both show it; a
    /// deleted channel answers as Apple documents; Apple's limits checked before the wire.
    @Test func aBroadcastReachesEveryDeviceOnItsChannelInOneRequest() async throws {
        try await GatewayFixture.inProcess(rewrite: ChannelManagementTests.carolIsAdmin) { fixture in
            let created = try await fixture.call("POST", "/api/channels", user: "carol", body: #"{"name":"scores","storagePolicy":0}"#)
            #expect(created.status == 201, "\(created.bodyText)")
            let channelID = try #require(try JSONParser.parse(created.body)["channelId"]?.stringValue, "\(created.bodyText)")
            let activities = fixture.sandbox.state.liveActivities
            // One device starts its activity on the channel (a start to its push-to-start token, naming
            // the channel as Pushgate keeps it).
            let first = await fixture.sandbox.createDevice(.apns)
            let startToken = activities.issuePushToStartToken(deviceID: first.id, attributesType: Self.type)
            try await Self.register(
                fixture, user: "carol", token: startToken, kind: "pushToStart", extra: #""AttributesType":"\#(Self.type)""#)
            let start = try await fixture.call(
                "POST", "/api/liveactivities/match-42?event=start", user: "carol",
                body:
                    #"{"attributes-type":"DeliveryAttributes","attributes":{},"content-state":{"score":"0-0"},"input-push-channel":"scores"}"#
            )
            #expect(try JSONParser.parse(start.body)["success"]?.kind == .number("1"), "\(start.bodyText)")
            // Another is subscribed at the sandbox.
            let second = await fixture.sandbox.createDevice(.apns)
            _ = activities.subscribe(deviceID: second.id, channelID: channelID, name: "match-42")
            let broadcast = try await fixture.call(
                "POST", "/api/liveactivities/match-42?event=update&channel=scores", user: "carol",
                body: #"{"content-state":{"score":"1-0"}}"#)
            #expect(broadcast.status == 200, "\(broadcast.bodyText)")
            let result = try JSONParser.parse(broadcast.body)
            #expect(result["success"]?.kind == .number("1"), "one request, whatever the audience: \(broadcast.bodyText)")
            for device in [first, second] {
                let shown = activities.activities(deviceID: device.id).first
                #expect(shown?.contentState?.serialized() == Array(#"{"score":"1-0"}"#.utf8), "\(device.id)")
            }
            // Apple's limits, before the wire: a broadcast cannot start; 5,120 bytes; admins only.
            let startRefused = try await fixture.call(
                "POST", "/api/liveactivities/match-42?event=start&channel=scores", user: "carol",
                body: #"{"attributes-type":"A","attributes":{},"content-state":{}}"#)
            #expect(startRefused.status == 400, "\(startRefused.bodyText)")
            let big = String(repeating: "x", count: 5200)
            let tooLarge = try await fixture.call(
                "POST", "/api/liveactivities/match-42?event=update&channel=scores", user: "carol",
                body: #"{"content-state":{"note":"\#(big)"}}"#)
            #expect(tooLarge.status == 413, "\(tooLarge.bodyText)")
            let notAdmin = try await fixture.call(
                "POST", "/api/liveactivities/match-42?event=update&channel=scores", user: "alice", body: #"{"content-state":{}}"#)
            #expect(notAdmin.status == 403, "\(notAdmin.bodyText)")
            // Deleted at Apple behind Pushgate's back: the broadcast's target answers BadChannel.
            let apple = try await ChannelManagementTests.appleClient(fixture)
            try await apple.delete(channelID)
            await apple.close()
            let gone = try await fixture.call(
                "POST", "/api/liveactivities/match-42?event=end&channel=scores", user: "carol", body: #"{"content-state":{"score":"1-0"}}"#)
            #expect(
                try JSONParser.parse(gone.body)["targets"]?.arrayElements?.first?["outcome"]?.stringValue == "BadChannel",
                "\(gone.bodyText)")
        }
    }

    /// The loop's hooks, on a store: an update stamped before a newer one is superseded when its
    /// page is claimed; an end retires the activity's tokens unless the name was started again.
    @Test func theHooksSupersedeOlderUpdatesAndRetireTokensAfterAnEnd() async throws {
        let store = InMemoryRegistrationStore()
        let hooks = LiveActivityHooks(store: store, logger: Logger(label: "test"))
        let now = Timestamp(secondsSinceEpoch: 1_800_000_000)
        let key = LiveActivityKey(app: .default, owner: .user("alice"), name: try ActivityName("order-4711"))
        let token = DeviceHandle(uncheckedPlatform: .apns, value: String(repeating: "ab", count: 32))
        let registration = try Registration(
            id: try RegistrationID("t1"), handle: token, tags: [], owner: "alice", kind: .liveActivity(name: key.name))
        try await store.restore([registration], now: now)
        func notification(_ event: LiveActivityEvent) async throws -> OutboxNotification {
            let record = try await store.stamp(
                key, LiveActivityStamping(event: event, requested: nil, priority: 10, contentState: nil, now: now))
            let message = LiveActivityMessage(event: event, contentState: JSONValue(.object([])))
            return OutboxNotification(
                id: UUID().uuidString, app: .default, sender: "alice", selection: PlatformSelection([.apns]),
                audience: .tokens(key.updateTokens),
                payloads: [
                    .apns: RenderedNotification(
                        platform: .apns, body: message.payload(timestamp: record.stamp, name: key.name), headers: [],
                        contentType: "application/json")
                ], secureID: nil, enqueuedAt: now, deliverAt: now)
        }
        let target = DispatchTarget(registrationID: registration.id, handle: token)
        let first = try await notification(.update)
        #expect(hooks.concerns(first))
        #expect(await hooks.superseded([target], of: first).isEmpty, "the newest is sent")
        let second = try await notification(.update)
        #expect(await hooks.superseded([target], of: first)[registration.id]?.outcome == .superseded)
        #expect(await hooks.superseded([target], of: second).isEmpty)
        // An end, then the name started again before the end's page was recorded: its tokens stay.
        let sent = [DeliveryReport(target: target, verdict: DeliveryVerdict(outcome: .success), attempts: 1, latencyMilliseconds: 1)]
        let end = try await notification(.end)
        _ = try await notification(.start)
        await hooks.recorded(sent, page: 1, of: end)
        #expect(try await store.registration(id: registration.id, app: .default) != nil)
        let lastEnd = try await notification(.end)
        // A page retires the tokens it reached: none here…
        await hooks.recorded([], page: 1, of: lastEnd)
        #expect(try await store.registration(id: registration.id, app: .default) != nil)
        // …this one, the activity's token.
        await hooks.recorded(sent, page: 2, of: lastEnd)
        #expect(try await store.registration(id: registration.id, app: .default) == nil)
        // An ordinary send is none of their business.
        var ordinary = first
        ordinary.audience = .tags(.tag(try Tag("username:alice")))
        #expect(!hooks.concerns(ordinary))
    }
}
