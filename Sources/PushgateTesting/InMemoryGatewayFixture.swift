import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateGateway
import PushgateLocal
import PushgateServer
import ServiceLifecycle
import Synchronization

/// A gateway with nothing outside the process: the in-memory store, an ``InMemoryPushProvider``
/// per platform (every target answers `Success` unless `answer` says otherwise), a clock that
/// moves when the test says (starting at the wall-clock time, as tests write RFC 3339 times from it),
/// and the router called in process (HummingbirdTesting's router mode). It is assembled by the
/// composition root as a real gateway is, its outbox delivery service running: for route and
/// rule tests, which need neither sockets nor the sandbox. Wire fidelity, crashes and several
/// instances stay with ``GatewayFixture`` and processes.
///
/// Its configuration is the sandbox gateway's (users `alice`, `bob`, `admin` with the demo's
/// password rule, the default templates, the hub `default` with its two keys), every service
/// pointing nowhere.
public struct InMemoryGatewayFixture: GatewayCaller {
    public let server: GatewayServer
    public let store: InMemoryRegistrationStore
    /// The push services, by platform.
    public let providers: [Platform: InMemoryPushProvider]
    public let clock: ManualClock
    /// Where the configuration was written (its hub keys are under `hub-keys/`).
    public let directory: String
    let devices: MemoryDevices
    let client: any TestClientProtocol

    public var gateway: Gateway { server.gateway }
    /// HummingbirdTesting's router mode names `localhost` as every request's authority.
    public var baseURL: String { "http://localhost" }

    /// A key of the default hub (`DefaultListenSharedAccessSignature`, `DefaultFullSharedAccessSignature`).
    public func hubKey(_ rule: String) throws -> String {
        try String(contentsOfFile: directory + "/hub-keys/default.\(rule).key", encoding: .utf8)
    }

    /// A request through the router, as ``GatewayFixture/call(_:_:user:password:body:contentType:accept:headers:)`` makes it.
    public func call(
        _ method: String, _ path: String, user: String?, password: String?, body: String, contentType: String, accept: String?,
        headers: [(name: String, value: String)]
    ) async throws -> CurlResponse {
        try await GatewayFixture.execute(
            client, method, path, user: user, password: password, body: body, contentType: contentType, accept: accept, headers: headers)
    }

    /// A new device of `platform` (APNs, FCM, GCM or Huawei): a handle of the service's shape, never used before.
    public func device(_ platform: Platform) -> MemoryDevice {
        var generator = SystemRandomNumberGenerator()
        let handle =
            switch platform {
            case .apns: (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
            case .fcm, .gcm, .hms:
                "d" + String((0..<140).map { _ in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".randomElement()! })
            default: preconditionFailure("the in-memory gateway makes APNs, FCM, GCM and Huawei devices")
            }
        return MemoryDevice(platform: platform, handle: handle)
    }

    /// Makes `device`'s service answer as for an uninstalled app from now on (`ExpiredChannel`,
    /// the registration removed).
    public func uninstall(_ device: MemoryDevice) { devices.uninstall(device.handle) }

    /// Notifications `device` has received.
    public func delivered(to device: MemoryDevice) -> Int { providers[device.platform]?.delivered[device.handle] ?? 0 }

    /// What `device` received, in order.
    public func inbox(_ device: MemoryDevice) -> [MemoryMessage] {
        (providers[device.platform]?.received(by: device.handle) ?? []).map(MemoryMessage.init)
    }

    /// Registers `device` for `user` through the API; returns its registration id.
    @discardableResult
    public func register(_ device: MemoryDevice, user: String, tags: [String] = []) async throws -> String {
        try await register(device.platform, handle: device.handle, user: user, tags: tags)
    }

    /// Registers a device of `platform` with `handle` for `user`, as the tutorial client does
    /// (``LocalGateway/register(_:handle:tags:call:)``); returns its registration id.
    @discardableResult
    public func register(_ platform: Platform, handle: String, user: String, tags: [String] = []) async throws -> String {
        try await LocalGateway.register(platform, handle: handle, tags: tags) { method, path, body in
            try await call(method, path, user: user, body: body)
        }
    }

    /// Runs `body` against a fresh in-memory gateway; `rewrite` changes its `config.json` and
    /// `adjust` its loaded configuration first. `answer` answers each target of a device not
    /// uninstalled (``uninstall(_:)``).
    public static func with(
        clock: ManualClock = ManualClock(),
        answer: @escaping @Sendable (DispatchTarget) -> DeliveryVerdict = { _ in DeliveryVerdict(outcome: .success) },
        rewrite: ((inout [String: Any]) -> Void)? = nil, adjust: @Sendable (inout PushgateConfiguration) -> Void = { _ in },
        _ body: @Sendable (InMemoryGatewayFixture) async throws -> Void
    ) async throws {
        let directory = NSTemporaryDirectory() + "pushgate-memory-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let nowhere = "https://127.0.0.1:9"
        let configPath = try SandboxGatewayConfiguration(
            apnsEndpoint: nowhere, apnsTopic: "com.example.app", apnsKeyID: "KEYID12345", apnsTeamID: "TEAMID1234", fcmEndpoint: nowhere,
            gcmEndpoint: nowhere, wnsTokenEndpoint: nowhere, wnsClientID: "ms-app://pushgate", wnsChannelHost: "127.0.0.1:9",
            webPushHost: "127.0.0.1:9", vapidPublicKey: nil, files: [:], listenerPort: 0, listenerTLSPort: nil
        ).write(to: directory)
        if let rewrite {
            let url = URL(fileURLWithPath: configPath)
            var object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
            rewrite(&object)
            try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).write(to: url)
        }
        var loaded = try ConfigurationLoader.load(file: configPath)
        var configuration = loaded.configuration
        adjust(&configuration)
        loaded = loaded.replacing(configuration)
        let store = InMemoryRegistrationStore()
        let devices = MemoryDevices()
        let providers = Dictionary(
            uniqueKeysWithValues: Platform.allCases.map { platform in
                (
                    platform,
                    InMemoryPushProvider(platform) { target in
                        devices.isUninstalled(target.handle.value)
                            ? DeliveryVerdict(outcome: .expiredChannel, statusCode: 410, reason: "Unregistered", handleChange: .remove)
                            : answer(target)
                    }
                )
            })
        let server = try await GatewayServer.assemble(
            configuration: loaded, app: loaded.defaultApp, store: store, logger: Logger(label: "pushgate.memory"), clock: clock,
            providers: { _ in Array(providers.values) })
        let services = server.serviceGroup(listening: false)
        // Ended below: graceful shutdown once the test's body has run.
        let running = Task { try await services.run() }
        do {
            try await server.application.test(.router) { client in
                try await body(
                    InMemoryGatewayFixture(
                        server: server, store: store, providers: providers, clock: clock, directory: directory, devices: devices,
                        client: client))
            }
        } catch {
            await services.triggerGracefulShutdown()
            _ = try? await running.value
            throw error
        }
        await services.triggerGracefulShutdown()
        _ = try? await running.value
    }
}

/// A device of the in-memory gateway: its platform and handle.
public struct MemoryDevice: Sendable, Hashable {
    public let platform: Platform
    public let handle: String
}

/// A notification a device received: its payload and headers as the provider got them.
public struct MemoryMessage: Sendable {
    public let notification: RenderedNotification

    public var payload: String { String(decoding: notification.body, as: UTF8.self) }

    /// A header's value (names compared case-insensitively).
    public func header(_ name: String) -> String? {
        notification.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// The devices whose app is uninstalled.
final class MemoryDevices: Sendable {
    private let uninstalled = Mutex<Set<String>>([])

    func uninstall(_ handle: String) { _ = uninstalled.withLock { $0.insert(handle) } }

    func isUninstalled(_ handle: String) -> Bool { uninstalled.withLock { $0.contains(handle) } }
}
