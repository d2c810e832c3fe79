import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateDispatch
import Testing

/// A sandbox, and providers of every platform configured against it with a manual gateway clock.
struct DispatchFixture {
    let sandbox: PushSandbox
    let directory: String
    let files: [String: String]
    let clock: ManualClock
    let sandboxClock: ManualClock
    let apns: APNSProvider
    let apnsTokens: APNSTokenManager
    let fcm: FCMProvider
    let gcm: GCMProvider
    let wns: WNSProvider
    let browser: WebPushProvider
    let hms: HMSProvider
    /// UnifiedPush to the sandbox's distributor (its explicit host:port admits 127.0.0.1).
    let unifiedPush: WebPushProvider

    static func start(
        policy: RetryPolicy = RetryPolicy(maximumAttempts: 3, initialBackoffSeconds: 0.05, jitter: 0)
    ) async throws -> DispatchFixture {
        let now = Date().timeIntervalSince1970
        let sandboxClock = ManualClock(secondsSinceEpoch: now)
        let sandbox = try await PushSandbox.start(configuration: SandboxConfiguration(clock: sandboxClock))
        let directory = NSTemporaryDirectory() + "pushgate-dispatch-" + UUID().uuidString
        let files = try sandbox.writeGatewayFiles(to: directory)
        let clock = ManualClock(secondsSinceEpoch: now)
        let credentials = sandbox.credentials
        let ca = files["ca"]
        func transport(_ version: CurlHTTPClientConfiguration.HTTPVersion, connections: Int = 1) throws -> CurlPushTransport {
            try CurlPushTransport(
                configuration: .init(
                    httpVersion: version, caFile: ca, maximumConnectionsPerHost: connections, maximumStreamsPerConnection: 500))
        }
        let apnsTokens = try await APNSTokenManager(
            keyID: credentials.apnsKeyID, teamID: credentials.apnsTeamID, privateKeyPEM: credentials.apnsPrivateKeyPEM, clock: clock)
        let apns = APNSProvider(
            endpoint: sandbox.endpoints.apns, topic: credentials.apnsTopic, tokens: apnsTokens, transport: try transport(.http2),
            policy: policy,
            clock: clock)
        let account = try await GoogleServiceAccount(json: credentials.serviceAccountJSON(tokenURI: sandbox.endpoints.googleToken))
        let fcm = FCMProvider(
            endpoint: sandbox.endpoints.fcm, account: account, transport: try transport(.http2), policy: policy, clock: clock)
        let gcm = GCMProvider(
            endpoint: sandbox.endpoints.gcm, serverKey: credentials.gcmServerKey, transport: try transport(.http2), policy: policy,
            clock: clock,
            batchSize: 500)
        let wns = WNSProvider(
            tokenEndpoint: sandbox.endpoints.wnsToken, clientID: credentials.wnsClientID, clientSecret: credentials.wnsClientSecret,
            handles: HandlePolicy(wnsChannelHosts: [sandbox.endpoints.wnsChannelHost]), transport: try transport(.http1, connections: 8),
            policy: policy, clock: clock)
        let signer = try await VAPIDSigner(
            subject: "mailto:push@example.com", publicKey: credentials.vapidPublicKey, privateKey: credentials.vapidPrivateKey, clock: clock
        )
        let browser = WebPushProvider(
            signer: signer, handles: HandlePolicy(webPushHosts: [sandbox.endpoints.webPushHost]), transport: try transport(.http2),
            policy: policy, clock: clock)
        let outbound = OutboundGuard(clock: clock)
        let unifiedPush = WebPushProvider(
            unifiedPush: UnifiedPushRules(
                outbound: outbound, discovery: UnifiedPushDiscovery(transport: try transport(.http1), outbound: outbound, clock: clock),
                noActiveSubscriber: .keep),
            signer: signer, handles: HandlePolicy(unifiedPushHosts: [sandbox.endpoints.webPushHost]), transport: try transport(.http2),
            policy: policy, clock: clock)
        let hms = HMSProvider(
            endpoint: sandbox.endpoints.hms, tokenEndpoint: sandbox.endpoints.hmsToken, appID: credentials.hmsAppID,
            appSecret: credentials.hmsAppSecret, transport: try transport(.http2), policy: policy, clock: clock)
        return DispatchFixture(
            sandbox: sandbox, directory: directory, files: files, clock: clock, sandboxClock: sandboxClock, apns: apns,
            apnsTokens: apnsTokens,
            fcm: fcm, gcm: gcm, wns: wns, browser: browser, hms: hms, unifiedPush: unifiedPush)
    }

    var dispatcher: Dispatcher { Dispatcher(providers: [apns, fcm, gcm, wns, browser]) }

    func stop() async throws {
        for provider in [apns, fcm, gcm, wns, browser, unifiedPush] as [any PushProvider] { await provider.shutdown() }
        try await sandbox.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Moves the gateway's and the sandbox's clocks together.
    func advance(seconds: Double) {
        clock.advance(seconds: seconds)
        sandboxClock.advance(seconds: seconds)
    }

    /// A sandbox device registered as a dispatch target.
    func target(_ platform: Platform, anotherApp: Bool = false) async -> (SandboxDevice, DispatchTarget) {
        let device = await sandbox.createDevice(platform, belongsToAnotherApp: anotherApp)
        return (device, DispatchTarget(registrationID: .random(), handle: DeviceHandle(uncheckedPlatform: platform, value: device.handle)))
    }

    static func with(_ body: (DispatchFixture) async throws -> Void) async throws {
        let fixture = try await DispatchFixture.start()
        do { try await body(fixture) } catch {
            try await fixture.stop()
            throw error
        }
        try await fixture.stop()
    }
}

/// The shipped tutorial payloads, rendered.
enum Payloads {
    static let properties: TemplateProperties = ["user": "bob", "message": "hi"]

    static func notify(_ platform: Platform) throws -> RenderedNotification {
        switch platform {
        case .apns:
            try PlatformTemplate(
                platform: .apns, template: try Template(json: #"{"aps":{"alert":"{'From ' + $(user) + ': ' + $(message)}"}}"#),
                headers: [("apns-push-type", "alert")]
            ).render(properties)
        case .fcm, .gcm:
            try PlatformTemplate(
                platform: platform, template: try Template(json: #"{"data":{"message":"{'From ' + $(user) + ': ' + $(message)}"}}"#)
            ).render(properties)
        case .hms:
            try PlatformTemplate(
                platform: .hms,
                template: try Template(
                    json: #"{"android":{"notification":{"title":"{'From ' + $(user)}","body":"$(message)","click_action":{"type":3}}}}"#)
            ).render(properties)
        case .wns:
            try PlatformTemplate(
                platform: .wns, template: try Template(raw: "{'From ' + $(user) + ': ' + $(message)}"), headers: [("X-WNS-Type", "wns/raw")]
            ).render(properties)
        case .browser, .unifiedpush:
            try PlatformTemplate(
                platform: platform, template: try Template(json: #"{"title":"{'From ' + $(user) + ': ' + $(message)}"}"#),
                headers: [("TTL", "60")]
            ).render(properties)
        }
    }

    static var all: [Platform: RenderedNotification] {
        get throws { Dictionary(uniqueKeysWithValues: try Platform.allCases.map { ($0, try notify($0)) }) }
    }
}
