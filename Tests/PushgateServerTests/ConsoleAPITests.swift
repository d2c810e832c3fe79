import Foundation
import PNSSandbox
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateGateway
import PushgateServer
import PushgateTesting
import Testing

/// The API the web console uses beyond the tutorial's: who am I, my registrations, streamed sends,
/// the sandbox bridge, and the page itself.
@Suite struct ConsoleAPITests {
    @Test func usersSeeOnlyTheirOwnRegistrationsAndFiltersAreChecked() async throws {
        try await GatewayFixture.inProcess { fixture in
            let aliceDevices = [await fixture.sandbox.createDevice(.apns), await fixture.sandbox.createDevice(.wns)]
            var aliceIDs: [String] = []
            for device in aliceDevices { aliceIDs.append(try await fixture.register(device, user: "alice")) }
            let bobDevice = await fixture.sandbox.createDevice(.fcm)
            let bobID = try await fixture.register(bobDevice, user: "bob", tags: ["news"])

            let me = try await fixture.call("GET", "/api/me")
            #expect(me.status == 200)
            let platforms = Platform.allCases.map { #""\#($0.rawValue)""# }.joined(separator: ",")
            #expect(me.bodyText == #"{"admin":false,"platforms":[\#(platforms)],"sandbox":true,"user":"alice"}"#)

            let alice = try JSONParser.parse(try await fixture.call("GET", "/api/registrations").body).arrayElements ?? []
            #expect(alice.compactMap { $0["id"]?.stringValue } == aliceIDs.sorted())
            // The owner sees the handles in full (they are the owner's own devices).
            #expect(Set(alice.compactMap { $0["handle"]?.stringValue }) == Set(aliceDevices.map(\.handle)))
            let bob = try await fixture.call("GET", "/api/registrations?tags=news", user: "bob")
            #expect((try JSONParser.parse(bob.body).arrayElements ?? []).compactMap { $0["id"]?.stringValue } == [bobID])
            // A tag of someone else's registration finds nothing for alice.
            #expect(try await fixture.call("GET", "/api/registrations?tags=news").bodyText == "[]")
            #expect(try await fixture.call("GET", "/api/registrations?limit=1").bodyText.components(separatedBy: "\"id\"").count == 2)

            let badExpression = try await fixture.call("GET", "/api/registrations?tags=news%20%26%26%20(")
            #expect(badExpression.status == 400)
            #expect(badExpression.bodyText.contains("tags: ") && badExpression.bodyText.contains("position"))
            #expect(
                try await fixture.call("GET", "/api/registrations?limit=0").bodyText.contains("limit must be between 1 and 1000, not 0"))
            #expect(try await fixture.call("GET", "/api/registrations?limit=ten").bodyText.contains("limit must be a number, not 'ten'"))
            let long = try await fixture.call("GET", "/api/notifications?limit=" + String(repeating: "9x", count: 500))
            #expect(long.status == 400 && long.bodyText.contains("limit must be a number, not '\(String(repeating: "9x", count: 20))'"))
            #expect(try await fixture.call("GET", "/api/registrations", user: nil).status == 401)
        }
    }

    @Test func aStreamedSendReportsProgressAfterEveryBatchThenTheResult() async throws {
        try await GatewayFixture.inProcess { fixture in
            // 1,100 devices written straight into the store (an import), registered to carol.
            let devices = try await RegistrationSeeds.sandboxDevices(1100, .fcm, in: fixture.sandbox, user: "carol")
            try await fixture.store.restore(devices, now: RegistrationSeeds.now)

            let response = try await fixture.call(
                "POST", "/api/notifications?pns=all&to_tag=carol", user: "bob", body: #""Hello, all of you""#,
                accept: "application/x-ndjson")
            #expect(response.status == 200)
            #expect(response.header("Content-Type")?.hasPrefix("application/x-ndjson") == true)
            let lines = response.bodyText.split(separator: "\n").map { try? JSONParser.parse(String($0)) }
            let progress = lines.compactMap { $0?["progress"] }.map { value -> Int in
                if case .number(let text)? = value["processed"]?.kind { return Int(text) ?? -1 }
                return -1
            }
            // One line per batch of targets read from the store (500, 500 and 100, answered in
            // whatever order the pipelined batches finish), counting up to every target.
            #expect(progress.count == 3)
            #expect(progress == progress.sorted() && progress.last == 1100)
            #expect(zip([0] + progress, progress).map { $1 - $0 }.sorted() == [100, 500, 500])
            let last = try #require(lines.last ?? nil)
            #expect(last["status"].map { $0.kind == .number("200") } == true)
            #expect(last["result"]?["success"]?.kind == .number("1100"))
            #expect(last["result"]?["failure"]?.kind == .number("0"))

            // Refusals come before any streaming, as ordinary errors.
            let refused = try await fixture.call(
                "POST", "/api/notifications?pns=mpns&to_tag=carol", user: "bob", body: #""x""#, accept: "application/x-ndjson")
            #expect(refused.status == 400)
            #expect(refused.bodyText.contains("mpns"))
            // Nobody to send to: the last line says 404.
            let nobody = try await fixture.call(
                "POST", "/api/notifications?pns=all&to_tag=nobody", user: "bob", body: #""x""#, accept: "application/x-ndjson")
            #expect(nobody.status == 200)
            #expect(nobody.bodyText.hasSuffix(#""status":404}"# + "\n"))
        }
    }

    @Test func theConsolePageAndTheSandboxBridge() async throws {
        try await GatewayFixture.inProcess { fixture in
            let page = try await fixture.call("GET", "/console", user: nil)
            #expect(page.status == 200)
            #expect(page.header("Content-Type") == "text/html; charset=utf-8")
            let policy = try #require(page.header("Content-Security-Policy"))
            #expect(
                policy.contains("default-src 'self'") && policy.contains("script-src 'sha256-") && !policy.contains("script-src 'unsafe"))
            #expect(page.bodyText.contains("<title>Pushgate console</title>"))
            let root = try await fixture.call("GET", "/", user: nil)
            #expect(root.status == 302 && root.header("Location") == "/console")

            // Refused logins: a challenge for HTTP clients, none for scripts (no browser dialog).
            let plain = try await fixture.call("GET", "/api/me", user: "alice", password: "wrong")
            #expect(plain.status == 401 && plain.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
            let script = try await fixture.call(
                "GET", "/api/me", user: "alice", password: "wrong", headers: [("X-Requested-With", "XMLHttpRequest")])
            #expect(script.status == 401 && script.header("WWW-Authenticate") == nil)
            #expect(script.bodyText.contains("wrong user name or password"))

            let created = try await fixture.call("POST", "/api/sandbox/devices", body: #"{"platform":"gcm"}"#)
            #expect(created.status == 201)
            let device = try JSONDecoder().decode(SandboxDevice.self, from: Data(created.body))
            #expect(device.platform == .gcm)
            _ = try await fixture.register(device, user: "alice")
            _ = try await fixture.call("POST", "/api/notifications?pns=gcm&to_tag=alice", user: "bob", body: #""ping""#)
            let inbox = try await fixture.call("GET", "/api/sandbox/devices/\(device.id)/inbox")
            #expect(inbox.status == 200)
            let received = try JSONDecoder().decode([ReceivedNotification].self, from: Data(inbox.body))
            #expect(received.count == 1 && received[0].payload.contains("ping"))
            let listed = try await fixture.call("GET", "/api/sandbox/devices")
            #expect(listed.bodyText.contains(device.handle))
            // Another user lists only their own devices: alice's is neither listed nor readable.
            let bobsList = try await fixture.call("GET", "/api/sandbox/devices", user: "bob")
            #expect(bobsList.status == 200 && !bobsList.bodyText.contains(device.handle) && !bobsList.bodyText.contains(device.id))
            #expect(try await fixture.call("GET", "/api/sandbox/devices/\(device.id)/inbox", user: "bob").status == 404)
            let uninstalled = try await fixture.call("POST", "/api/sandbox/devices/\(device.id)/uninstall")
            #expect(uninstalled.status == 200 && uninstalled.bodyText.contains(#""status":"uninstalled""#))

            let badPlatform = try await fixture.call("POST", "/api/sandbox/devices", body: #"{"platform":"mpns"}"#)
            #expect(badPlatform.status == 400 && badPlatform.bodyText.contains("apns|fcm|gcm|wns"))
            let badID = try await fixture.call("GET", "/api/sandbox/devices/..%2Fstats/inbox")
            #expect(badID.status == 400 && badID.bodyText.contains("is not a sandbox device id"))
            let badAction = try await fixture.call("POST", "/api/sandbox/devices/\(device.id)/explode")
            #expect(badAction.status == 404 && badAction.bodyText.contains("no device action 'explode'"))
            #expect(try await fixture.call("GET", "/api/sandbox/devices/unknown-9/inbox").status == 404)
            #expect(try await fixture.call("GET", "/api/sandbox/devices", user: nil).status == 401)
        }
    }

    /// The console's Live Activities section: the list and the detail it reads (always naming the
    /// owner, as the page does), an admin's view of everyone's, and the page inserting text only.
    @Test func theConsoleListsActivitiesAndShowsOneWithItsDevices() async throws {
        try await GatewayFixture.inProcess(rewrite: ChannelManagementTests.carolIsAdmin) { fixture in
            let (_, token) = try await LiveActivityTests.started(fixture, user: "alice", name: "order-4711")
            let page = try await fixture.call("GET", "/console", user: nil).bodyText
            #expect(page.contains(#"<table id="activities""#) && page.contains(#"api("GET", "/api/liveactivities?limit=50")"#))
            #expect(!page.contains("innerHTML") && !page.contains("insertAdjacentHTML"), "server values go into the DOM as text")

            let alices = try JSONParser.parse(try await fixture.call("GET", "/api/liveactivities?limit=50").body).arrayElements ?? []
            #expect(
                alices.map { [$0["name"]?.stringValue, $0["owner"]?.stringValue, $0["event"]?.stringValue] } == [
                    ["order-4711", "alice", "start"]
                ])
            #expect(alices.first?["devices"] == nil, "a list carries no devices")
            let everyone = try await fixture.call("GET", "/api/liveactivities?limit=50", user: "carol")
            #expect(everyone.bodyText.contains(#""owner":"alice""#), "\(everyone.bodyText)")

            for user in ["alice", "carol"] {
                let shown = try await fixture.call("GET", "/api/liveactivities/order-4711?owner=alice", user: user)
                #expect(shown.status == 200, "\(user): \(shown.bodyText)")
                let body = try JSONParser.parse(shown.body)
                #expect(body["contentState"]?.stringValue == #"{"status":"packed"}"#)
                let devices = body["devices"]?.arrayElements?.compactMap(\.stringValue) ?? []
                #expect(devices.count == 1 && devices[0] != token && token.hasPrefix(devices[0].prefix(4)), "\(devices)")
            }
            #expect(try await fixture.call("GET", "/api/liveactivities/order-4711?owner=alice", user: "bob").status == 403)
            #expect(try await fixture.call("GET", "/api/liveactivities/order-4711?owner=%24hub", user: "carol").status == 404)
        }
    }
}

/// `Gateway.registrations` without HTTP: an admin sees everyone's; a user only their own.
@Suite struct RegistrationListingTests {
    @Test func anAdminSeesEveryRegistrationAndAUserOnlyTheirOwn() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let loaded = try ConfigurationLoader.load(file: root.appendingPathComponent("config.json").path)
        let store = InMemoryRegistrationStore()
        let gateway = Gateway(app: loaded.defaultApp, store: store, dispatcher: Dispatcher(providers: []))
        let owners = ["alice", "bob", "alice", "carol"]
        var registrations: [Registration] = []
        for (index, owner) in owners.enumerated() {
            registrations.append(
                try Registration(
                    id: .random(), handle: DeviceHandle(uncheckedPlatform: .apns, value: String(repeating: "\(index)", count: 64)),
                    tags: [try .username(owner)] + (index == 3 ? [try Tag("vip")] : []), owner: owner))
        }
        // alice's tag on a registration bob owns (an admin registered it for her) is not hers to list.
        registrations.append(
            try Registration(
                id: .random(), handle: DeviceHandle(uncheckedPlatform: .fcm, value: String(repeating: "f", count: 40)),
                tags: [try .username("alice")], owner: "bob"))
        try await store.restore(registrations, now: Timestamp(secondsSinceEpoch: 0))

        let admin = AuthenticatedUser(name: "root", isAdmin: true)
        #expect(try await gateway.registrations.list(user: admin, tagExpression: nil, limit: 100).count == 5)
        #expect(try await gateway.registrations.list(user: admin, tagExpression: "vip", limit: 100).map(\.owner) == [.user("carol")])
        #expect(try await gateway.registrations.list(user: admin, tagExpression: nil, limit: 2).count == 2)
        let alice = try await gateway.registrations.list(
            user: AuthenticatedUser(name: "alice", isAdmin: false), tagExpression: nil, limit: 100)
        #expect(alice.count == 2 && alice.allSatisfy { $0.owner == .user("alice") })
        #expect(
            try await gateway.registrations.list(user: AuthenticatedUser(name: "dave", isAdmin: false), tagExpression: nil, limit: 100)
                .isEmpty)
        await #expect(throws: GatewayError.self) { try await gateway.registrations.list(user: admin, tagExpression: "a &&", limit: 10) }
    }
}
