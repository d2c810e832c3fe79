import Foundation
import PNSSandbox
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateTesting
import Testing

/// UnifiedPush end to end against the sandbox's distributor (ntfy's behaviour): a subscription on
/// an allowed host registered through the tutorial API (its discovery answer checked) gets the
/// message encrypted for it, signed only when it asks; an endpoint whose host resolves to a
/// loopback address without an explicit `host:port` entry is refused at registration, and a
/// stored one at send without being contacted; an endpoint that is no UnifiedPush server is
/// refused at registration, naming its host.
@Suite struct UnifiedPushTests {
    /// A `rewrite` adding `hosts` to the default app's `handles.unifiedPushHosts`.
    static func allowing(_ hosts: [String]) -> (inout [String: Any]) -> Void {
        { config in
            var apps = config["apps"] as? [String: Any] ?? [:]
            var app = apps["default"] as? [String: Any] ?? [:]
            var handles = app["handles"] as? [String: Any] ?? [:]
            handles["unifiedPushHosts"] = (handles["unifiedPushHosts"] as? [String] ?? []) + hosts
            app["handles"] = handles
            apps["default"] = app
            config["apps"] = apps
        }
    }

    func json(_ response: CurlResponse) throws -> JSONValue { try JSONParser.parse(response.body) }

    /// `PUT /api/register/{id}` of a UnifiedPush subscription (JSON) for alice.
    func register(_ handle: String, _ fixture: GatewayFixture) async throws -> CurlResponse {
        let reserved = try await fixture.call("POST", "/api/register")
        let id = String(reserved.bodyText.dropFirst().dropLast())
        return try await fixture.call("PUT", "/api/register/\(id)", body: #"{"Platform":"unifiedpush","Handle":\#(handle),"Tags":[]}"#)
    }

    /// The sandbox device's subscription with its endpoint moved to `origin`.
    func moved(_ device: SandboxDevice, to origin: String) throws -> WebPushSubscription {
        var subscription = try #require(WebPushSubscription(handleValue: device.handle))
        let path = subscription.endpoint.dropFirst("https://".count).drop { $0 != "/" }
        subscription.endpoint = origin + path
        return subscription
    }

    @Test func aSubscriptionOnAnAllowedHostGetsTheMessageEncryptedAndSignedOnlyWhenItAsks() async throws {
        try await GatewayFixture.inProcess { fixture in
            let unsigned = await fixture.sandbox.createUnifiedPushDevice()
            let signed = await fixture.sandbox.createUnifiedPushDevice(vapid: true)
            _ = try await fixture.register(unsigned, user: "alice")
            _ = try await fixture.register(signed, user: "alice")
            let sent = try await fixture.call("POST", "/api/notifications?pns=unifiedpush&to_tag=alice", body: #""Hello, distributor""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            let platform = try json(sent)["platforms"]?.arrayElements?.first { $0["platform"]?.stringValue == "unifiedpush" }
            #expect(platform?["outcomes"]?["Success"]?.kind == .number("2"), "\(sent.bodyText)")
            for device in [unsigned, signed] {
                let received = try #require(await fixture.sandbox.state.inbox(deviceID: device.id).first)
                #expect(received.platform == .unifiedpush)
                // The app's own JSON (templates/notify.unifiedpush.json), decrypted by the sandbox.
                let payload = try JSONParser.parse(received.payload)
                #expect(payload["message"]?.stringValue == "Hello, distributor", "\(received.payload)")
                #expect(payload["title"]?.stringValue == "From alice", "\(received.payload)")
                #expect(received.header("Content-Encoding") == "aes128gcm")
                #expect(received.header("Authorization") == (device.id == signed.id ? "vapid" : nil), "\(device.id)")
            }
            // One discovery request for the two registrations (the answer is kept per host),
            // then the two messages (ntfy answers 200 to both).
            #expect(await fixture.sandbox.state.answeredCounts()["unifiedpush 200"] == 3)
        }
    }

    @Test func anExplicitHostAndPortEntryAdmitsLocalhost() async throws {
        try await GatewayFixture.inProcess(rewrite: { config in
            // The sandbox's port, under the name localhost.
            let apps = config["apps"] as? [String: Any]
            let handles = (apps?["default"] as? [String: Any])?["handles"] as? [String: Any]
            let port = ((handles?["unifiedPushHosts"] as? [String])?.first ?? "").split(separator: ":").last.map(String.init) ?? ""
            Self.allowing(["localhost:\(port)"])(&config)
        }) { fixture in
            let device = await fixture.sandbox.createUnifiedPushDevice()
            let port = try #require(URL(string: fixture.sandbox.endpoints.webPush)?.port)
            let local = try moved(device, to: "https://localhost:\(port)")
            let registered = try await register(local.handleValue, fixture)
            #expect(registered.status == 200, "\(registered.bodyText)")
            let sent = try await fixture.call("POST", "/api/notifications?pns=unifiedpush&to_tag=alice", body: #""via localhost""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1, "\(sent.bodyText)")
        }
    }

    @Test func anEndpointResolvingToLoopbackIsRefusedAtRegistrationNamingItsHost() async throws {
        // A bare host entry admits port 443 of a public address only: localhost resolves to 127.0.0.1.
        try await GatewayFixture.inProcess(rewrite: Self.allowing(["localhost"])) { fixture in
            let device = await fixture.sandbox.createUnifiedPushDevice()
            let refused = try await register(try moved(device, to: "https://localhost").handleValue, fixture)
            #expect(refused.status == 400, "\(refused.bodyText)")
            // The host, the address and its range: "host 'localhost' resolves to 127.0.0.1, a loopback (127.0.0.0/8) address; …".
            #expect(refused.bodyText.contains("'localhost' resolves to"), "\(refused.bodyText)")
            #expect(refused.bodyText.contains("a loopback ("), "\(refused.bodyText)")
            #expect(refused.bodyText.contains("'localhost:443' exactly"), "\(refused.bodyText)")
            #expect(try await fixture.store.registrationIDs(handle: device.handle, app: .default).isEmpty)
        }
    }

    @Test func anEndpointThatIsNoUnifiedPushServerIsRefusedAtRegistration() async throws {
        try await GatewayFixture.inProcess(rewrite: { config in
            let apps = config["apps"] as? [String: Any]
            let handles = (apps?["default"] as? [String: Any])?["handles"] as? [String: Any]
            // The sandbox's WNS listener: https on an allowed host:port, but no discovery answer.
            let wns = (handles?["wnsChannelHosts"] as? [String])?.first ?? ""
            Self.allowing([wns])(&config)
        }) { fixture in
            let device = await fixture.sandbox.createUnifiedPushDevice()
            let host = fixture.sandbox.endpoints.wnsChannelHost
            let refused = try await register(try moved(device, to: "https://\(host)").handleValue, fixture)
            #expect(refused.status == 400, "\(refused.bodyText)")
            #expect(refused.bodyText.contains("\(host)") && refused.bodyText.contains("discovery"), "\(refused.bodyText)")
            // The refusal is kept a little: a second registration is refused again at once.
            let again = try await register(try moved(device, to: "https://\(host)").handleValue, fixture)
            #expect(again.status == 400 && again.bodyText == refused.bodyText, "\(again.bodyText)")
        }
    }

    @Test func aStoredEndpointThatNowResolvesToLoopbackIsRefusedAtSendWithoutContact() async throws {
        try await GatewayFixture.inProcess(rewrite: Self.allowing(["localhost"])) { fixture in
            let good = await fixture.sandbox.createUnifiedPushDevice()
            _ = try await fixture.register(good, user: "alice")
            // A registration that never passed the registration check (stored under other
            // rules, or written to the store directly): https://localhost, on the allow-list by
            // name, resolving to 127.0.0.1.
            let bad = await fixture.sandbox.createUnifiedPushDevice()
            // An id reserved as the API reserves one, the row written past the API's checks.
            let reserved = try await fixture.call("POST", "/api/register")
            let stored = try Registration(
                id: try RegistrationID(String(reserved.bodyText.dropFirst().dropLast())),
                handle: DeviceHandle(uncheckedPlatform: .unifiedpush, value: try moved(bad, to: "https://localhost").handleValue),
                tags: [try .username("alice")], owner: "alice")
            try await fixture.store.upsert(stored, now: Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970))
            let before = await fixture.sandbox.state.answeredCounts()["unifiedpush 200"] ?? 0

            let sent = try await fixture.call("POST", "/api/notifications?pns=unifiedpush&to_tag=alice", body: #""only the good one""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            let targets = try json(sent)["targets"]?.arrayElements ?? []
            let refused = try #require(targets.first { $0["registrationId"]?.stringValue == stored.id.rawValue }, "\(sent.bodyText)")
            #expect(refused["outcome"]?.stringValue == "BadChannel", "\(sent.bodyText)")
            let reason = refused["reason"]?.stringValue ?? ""
            #expect(
                reason.contains("not contacted") && reason.contains("localhost") && reason.lowercased().contains("loopback"), "\(reason)")
            #expect(refused["attempts"]?.kind == .number("0"), "\(sent.bodyText)")
            // The good one was delivered; the distributor saw its request only.
            #expect(await fixture.sandbox.state.inbox(deviceID: good.id).count == 1)
            #expect(await fixture.sandbox.state.inbox(deviceID: bad.id).isEmpty)
            #expect(await fixture.sandbox.state.answeredCounts()["unifiedpush 200"] == before + 1)
            // Refused, not pruned: the rules may change back.
            #expect(try await fixture.store.registration(id: stored.id, app: .default) != nil)
        }
    }

    /// A registration admitted under one configuration (`localhost:<port>` named exactly) and
    /// reloaded under another (a bare `localhost` entry: port 443 only, and never a loopback
    /// address) is refused at send without being contacted, and kept.
    @Test func aRegistrationStoredUnderRulesSinceReloadedIsRefusedAtSend() async throws {
        try await GatewayFixture.inProcess { fixture in
            let configPath = fixture.local.directory + "/config.json"
            func setHosts(_ hosts: [String]) async throws {
                var config = try #require(
                    try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configPath))) as? [String: Any])
                var apps = try #require(config["apps"] as? [String: Any])
                var app = try #require(apps["default"] as? [String: Any])
                var handles = app["handles"] as? [String: Any] ?? [:]
                handles["unifiedPushHosts"] = hosts
                app["handles"] = handles
                apps["default"] = app
                config["apps"] = apps
                try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
                _ = try await fixture.local.server.reload(try ConfigurationLoader.load(file: configPath))
            }
            let port = try #require(URL(string: fixture.sandbox.endpoints.webPush)?.port)
            try await setHosts(["localhost:\(port)"])
            let device = await fixture.sandbox.createUnifiedPushDevice()
            let registered = try await register(try moved(device, to: "https://localhost:\(port)").handleValue, fixture)
            #expect(registered.status == 200, "\(registered.bodyText)")
            let first = try await fixture.call("POST", "/api/notifications?pns=unifiedpush&to_tag=alice", body: #""before""#)
            #expect(try json(first)["success"]?.kind == .number("1"), "\(first.bodyText)")

            try await setHosts(["localhost"])
            let posts = await fixture.sandbox.state.answeredCounts()["unifiedpush 200"]
            let sent = try await fixture.call("POST", "/api/notifications?pns=unifiedpush&to_tag=alice", body: #""after""#)
            let target = try #require(try json(sent)["targets"]?.arrayElements?.first, "\(sent.bodyText)")
            #expect(target["outcome"]?.stringValue == "BadChannel", "\(sent.bodyText)")
            #expect(target["reason"]?.stringValue?.hasPrefix("not contacted: ") == true, "\(sent.bodyText)")
            #expect(target["reason"]?.stringValue?.contains("port \(port) is not allowed") == true, "\(sent.bodyText)")
            #expect(await fixture.sandbox.state.answeredCounts()["unifiedpush 200"] == posts)
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).map(\.payload).count == 1)
            let ids = try await fixture.store.registrationIDs(
                handle: try moved(device, to: "https://localhost:\(port)").handleValue, app: .default)
            #expect(ids.count == 1, "kept")
        }
    }

    /// Without `services.unifiedpush` an endpoint cannot be checked: the registration is refused,
    /// even on an allowed host.
    @Test func withoutTheServiceARegistrationIsRefused() async throws {
        try await GatewayFixture.inProcess(rewrite: { config in
            var apps = config["apps"] as? [String: Any] ?? [:]
            var app = apps["default"] as? [String: Any] ?? [:]
            var services = app["services"] as? [String: Any] ?? [:]
            services["unifiedpush"] = nil
            app["services"] = services
            var templates = app["templates"] as? [String: [String: Any]] ?? [:]
            for purpose in templates.keys { templates[purpose]?["unifiedpush"] = nil }
            app["templates"] = templates
            apps["default"] = app
            config["apps"] = apps
        }) { fixture in
            let device = await fixture.sandbox.createUnifiedPushDevice()
            let refused = try await register(device.handle, fixture)
            #expect(refused.status == 400, "\(refused.bodyText)")
            #expect(refused.bodyText.contains("UnifiedPush is not configured for this app (services.unifiedpush)"), "\(refused.bodyText)")
            #expect(await fixture.sandbox.state.answeredCounts().keys.filter { $0.hasPrefix("unifiedpush") }.isEmpty)
        }
    }

    /// The hub API takes no UnifiedPush installation, registration description or native send (its
    /// registration paths make no discovery check): it does not name the platform.
    @Test func theHubAPITakesNoUnifiedPush() async throws {
        try await GatewayFixture.inProcess { fixture in
            let device = await fixture.sandbox.createUnifiedPushDevice()
            let client = try HubAPITests.Client(fixture)
            let installation = try await client.call(
                "PUT", "installations/up-1", body: #"{"platform":"unifiedpush","pushChannel":\#(Escaping.jsonString(device.handle))}"#)
            #expect(installation.status == 400, "\(installation.bodyText)")
            #expect(installation.bodyText.contains("platform 'unifiedpush' is not supported"), "\(installation.bodyText)")
            let description = try await client.call(
                "POST", "registrations",
                body:
                    #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><UnifiedPushRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><Endpoint>https://ntfy.example.com/up</Endpoint></UnifiedPushRegistrationDescription></content></entry>"#,
                contentType: "application/atom+xml;type=entry;charset=utf-8")
            #expect(description.status == 400, "\(description.bodyText)")
            #expect(description.bodyText.contains("UnifiedPushRegistrationDescription&gt; is not supported"), "\(description.bodyText)")
            let send = try await client.call(
                "POST", "messages", body: "{}", headers: [("ServiceBusNotification-Format", "unifiedpush")])
            #expect(send.status == 400, "\(send.bodyText)")
            #expect(await fixture.sandbox.state.answeredCounts().keys.filter { $0.hasPrefix("unifiedpush") }.isEmpty)
        }
    }
}
