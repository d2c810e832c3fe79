import Foundation
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateGateway
import PushgateServer
import PushgateTesting
import Testing

/// APNs broadcast channel management through `/api/channels`: created at the sandbox's Apple and
/// kept under a name, listed beside what Apple lists, shown, deleted; the app's limit checked
/// before the wire; admins only; token authentication required.
@Suite struct ChannelManagementTests {
    /// carol is an admin (demo passwords: the name is the password).
    static let carolIsAdmin: @Sendable (inout [String: Any]) -> Void = { config in
        var auth = config["auth"] as? [String: Any] ?? [:]
        auth["admins"] = ["carol"]
        config["auth"] = auth
    }

    static func object(_ response: CurlResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.bodyText)")
    }

    static func array(_ response: CurlResponse) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]], "\(response.bodyText)")
    }

    /// A client of the sandbox's channel management with the gateway's own credentials: what
    /// other software managing the same app would do.
    static func appleClient(_ fixture: GatewayFixture) async throws -> APNSChannelClient {
        let access = await GatewayAssembly.channelAccess(
            for: fixture.local.server.gateway.app, secrets: SecretResolver(baseDirectory: fixture.directory), clock: SystemClock())
        guard case .apple(let settings) = access else {
            Issue.record("the sandbox gateway has no channel access: \(access)")
            throw CancellationError()
        }
        return try APNSChannelClient.open(settings)
    }

    @Test func aChannelIsCreatedAtAppleListedBesideOthersShownAndDeleted() async throws {
        try await GatewayFixture.inProcess(rewrite: Self.carolIsAdmin) { fixture in
            let created = try await fixture.call("POST", "/api/channels", user: "carol", body: #"{"name":"scores","storagePolicy":1}"#)
            #expect(created.status == 201, "\(created.bodyText)")
            let channel = try Self.object(created)
            let channelID = try #require(channel["channelId"] as? String)
            #expect(channel["name"] as? String == "scores" && channel["storagePolicy"] as? Int == 1 && channel["managed"] as? Bool == true)
            #expect((channel["requestId"] as? String).map { $0 == $0.lowercased() && UUID(uuidString: $0) != nil } == true)
            #expect(try await fixture.store.channel(app: .default, name: "scores")?.channelID == channelID)

            // A channel created at Apple by something else: listed, marked not Pushgate's.
            let apple = try await Self.appleClient(fixture)
            let foreign = try await apple.create(storagePolicy: 0).channelID
            let listed = try Self.array(try await fixture.call("GET", "/api/channels", user: "carol"))
            #expect(listed.count == 2, "\(listed)")
            #expect(listed.first?["name"] as? String == "scores" && listed.first?["atApple"] as? Bool == true)
            #expect(listed.last?["channelId"] as? String == foreign && listed.last?["managed"] as? Bool == false)
            #expect(listed.last?["name"] == nil && (listed.last?["note"] as? String)?.contains("not Pushgate's") == true)

            let shown = try await fixture.call("GET", "/api/channels/scores", user: "carol")
            let shownChannel = try Self.object(shown)
            #expect(shown.status == 200 && shownChannel["atApple"] as? Bool == true, "\(shown.bodyText)")
            #expect(shownChannel["storagePolicy"] as? Int == 1)

            let deleted = try await fixture.call("DELETE", "/api/channels/scores", user: "carol")
            let deletion = try Self.object(deleted)
            #expect(deleted.status == 200 && deletion["deletedAtApple"] as? Bool == true, "\(deleted.bodyText)")
            do {
                _ = try await apple.read(channelID)
                Issue.record("the sandbox still knows the deleted channel")
            } catch let error as APNSChannelError {
                #expect(error.isChannelNotRegistered, "\(error)")
            }
            #expect(try await fixture.store.channel(app: .default, name: "scores") == nil)
            #expect(try await fixture.call("GET", "/api/channels/scores", user: "carol").status == 404)
            await apple.close()
        }
    }

    @Test func aChannelAppleNoLongerKnowsIsShownAsSuchAndStillDeletedHere() async throws {
        try await GatewayFixture.inProcess(rewrite: Self.carolIsAdmin) { fixture in
            let created = try await fixture.call("POST", "/api/channels", user: "carol", body: #"{"name":"news"}"#)
            let channel = try Self.object(created)
            #expect(created.status == 201 && channel["storagePolicy"] as? Int == 1, "\(created.bodyText)")
            let channelID = try #require(channel["channelId"] as? String)
            let apple = try await Self.appleClient(fixture)
            try await apple.delete(channelID)
            await apple.close()

            let shown = try Self.object(try await fixture.call("GET", "/api/channels/news", user: "carol"))
            #expect(shown["atApple"] as? Bool == false && shown["note"] != nil, "\(shown)")
            let listed = try Self.array(try await fixture.call("GET", "/api/channels", user: "carol"))
            #expect(listed.count == 1 && listed.first?["atApple"] as? Bool == false, "\(listed)")
            let deleted = try await fixture.call("DELETE", "/api/channels/news", user: "carol")
            #expect(deleted.status == 200, "\(deleted.bodyText)")
            let deletion = try Self.object(deleted)
            #expect(deletion["deletedAtApple"] as? Bool == false && (deletion["note"] as? String)?.contains("ChannelNotRegistered") == true)
            #expect(try await fixture.store.channel(app: .default, name: "news") == nil)
        }
    }

    @Test func theAppsLimitAndATakenNameAreRefusedBeforeApple() async throws {
        let rewrite: @Sendable (inout [String: Any]) -> Void = { config in
            Self.carolIsAdmin(&config)
            GatewayFixture.service("apns") { $0["maxChannels"] = 1 }(&config)
        }
        try await GatewayFixture.inProcess(rewrite: rewrite) { fixture in
            #expect(try await fixture.call("POST", "/api/channels", user: "carol", body: #"{"name":"one"}"#).status == 201)
            let taken = try await fixture.call("POST", "/api/channels", user: "carol", body: #"{"name":"one"}"#)
            #expect(taken.status == 409, "\(taken.bodyText)")
            let second = try await fixture.call("POST", "/api/channels", user: "carol", body: #"{"name":"two","storagePolicy":0}"#)
            #expect(second.status == 429, "\(second.bodyText)")
            #expect(second.bodyText.contains("apns.maxChannels"))
            // Apple was asked to create one channel only.
            let answered = await fixture.sandbox.state.answeredCounts()
            #expect(answered["apns-channels 201"] == 1 && answered.keys.filter { $0.hasPrefix("apns-channels") }.count == 1, "\(answered)")
            #expect(try await fixture.store.channels(app: .default).map(\.name) == ["one"])
        }
    }

    @Test func onlyAdminsManageChannelsAndRequestsAreReadStrictly() async throws {
        try await InMemoryGatewayFixture.with(rewrite: Self.carolIsAdmin) { fixture in
            for (method, path) in [
                ("GET", "/api/channels"), ("POST", "/api/channels"), ("GET", "/api/channels/x"), ("DELETE", "/api/channels/x"),
            ] {
                let refused = try await fixture.call(method, path, user: "alice", body: #"{"name":"x"}"#)
                #expect(refused.status == 403, "\(method) \(path): \(refused.bodyText)")
            }
            let cases: [(String, String)] = [
                (#"{"name":"scores","storagePolicy":2}"#, "storagePolicy"),
                (#"{"name":"scores","storagePolicy":"1"}"#, "storagePolicy"),
                (#"{"name":"scores","policy":1}"#, "unknown member"),
                (#"{"storagePolicy":1}"#, "is required"),
                (#"{"name":"no spaces"}"#, "channel name"),
                (#"{"name":"\#(String(repeating: "a", count: 65))"}"#, "channel name"),
                ("[]", "JSON object"),
            ]
            for (body, message) in cases {
                let refused = try await fixture.call("POST", "/api/channels", user: "carol", body: body)
                #expect(refused.status == 400 && refused.bodyText.contains(message), "\(body): \(refused.bodyText)")
            }
            #expect(try await fixture.call("GET", "/api/channels?limit=5", user: "carol").status == 400)
        }
    }

    @Test func aCertificateOnlyAppIsToldChannelsNeedTokenAuthentication() async throws {
        let rewrite: @Sendable (inout [String: Any]) -> Void = { config in
            Self.carolIsAdmin(&config)
            GatewayFixture.service("apns") { apns in
                apns["token"] = nil
                apns["certificate"] = ["certificate": ["file": "apns-cert.pem"], "privateKey": ["file": "apns-key.pem"]]
            }(&config)
        }
        try await InMemoryGatewayFixture.with(rewrite: rewrite) { fixture in
            for (method, path, body) in [("GET", "/api/channels", ""), ("POST", "/api/channels", #"{"name":"scores"}"#)] {
                let refused = try await fixture.call(method, path, user: "carol", body: body)
                #expect(refused.status == 500, "\(refused.bodyText)")
                #expect(
                    refused.bodyText.contains("token authentication") && refused.bodyText.contains("certificate"), "\(refused.bodyText)")
            }
        }
    }
}

extension ChannelManagementTests {
    /// The store refusing a channel Apple already created (another create took the name or the
    /// last place meanwhile): the channel is deleted at Apple again, and the refusal answered.
    @Test func aChannelTheStoreRefusesAfterAppleCreatedItIsDeletedAtApple() async throws {
        try await GatewayFixture.inProcess { fixture in
            let gateway = fixture.local.server.gateway
            let channels = Channels(
                store: RefusingChannelStore(base: fixture.store), app: { gateway.app }, clock: SystemClock(), logger: gateway.logger)
            channels.connect(
                await GatewayAssembly.channelAccess(
                    for: gateway.app, secrets: SecretResolver(baseDirectory: fixture.directory), clock: SystemClock()))
            await #expect(throws: GatewayError.self) { _ = try await channels.create(name: "late", storagePolicy: 1) }
            let answered = await fixture.sandbox.state.answeredCounts()
            #expect(answered["apns-channels 201"] == 1 && answered["apns-channels 204"] == 1, "\(answered)")
            let apple = try await Self.appleClient(fixture)
            #expect(try await apple.list().isEmpty)
            await apple.close()
        }
    }
}

/// A store whose `addChannel` refuses as a concurrent create would have made it.
struct RefusingChannelStore: LiveActivityStore {
    let base: any LiveActivityStore

    func stamp(_ key: LiveActivityKey, _ send: LiveActivityStamping) async throws(StoreError) -> LiveActivityRecord {
        try await base.stamp(key, send)
    }
    func activity(_ key: LiveActivityKey) async throws(StoreError) -> LiveActivityRecord? { try await base.activity(key) }
    func activities(app: AppID, owner: RegistrationOwner?, limit: Int) async throws(StoreError) -> [LiveActivityRecord] {
        try await base.activities(app: app, owner: owner, limit: limit)
    }
    func retireTokens(of key: LiveActivityKey, ids: [RegistrationID]) async throws(StoreError) -> Int {
        try await base.retireTokens(of: key, ids: ids)
    }
    func channels(app: AppID) async throws(StoreError) -> [APNSChannel] { try await base.channels(app: app) }
    func addChannel(_ channel: APNSChannel, maximum: Int) async throws(StoreError) { throw APNSChannel.nameTaken(channel.name) }
    func removeChannel(app: AppID, name: String) async throws(StoreError) -> Bool { try await base.removeChannel(app: app, name: name) }
}
