import Foundation
import Hummingbird
import Logging
import PNSSandbox
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateSQLite
import PushgateServer
import ServiceLifecycle

/// The push-service sandbox and a gateway configured against it (generated `config.json`, SQLite
/// store, demo users whose password is their name) in a temporary folder, listening on a free
/// port, plus an HTTP client for the gateway's API. Used by `pushgate demo` and by the tests.
public struct LocalGateway: Sendable {
    public let sandbox: PushSandbox
    public let directory: String
    public let baseURL: String
    /// The gateway's HTTPS listener (`listener.tls`, a certificate from the sandbox's CA), or nil.
    public let secureBaseURL: String?
    /// The port the gateway listens on (127.0.0.1).
    public var port: Int { Int(baseURL.split(separator: ":").last ?? "") ?? 0 }
    public let client: CurlHTTPClient
    public let store: SQLiteStore
    public let server: GatewayServer
    let services: ServiceGroup
    let serverTask: Task<Void, any Error>

    /// Starts both. `retryPolicy` applies to every provider; `adjust` may change the generated
    /// configuration (limits, timeouts) before the gateway is assembled; `clock` is the gateway's
    /// (tests move a ``ManualClock`` past a backoff).
    /// `rewrite` edits the written `config.json` as JSON before it is loaded: what `adjust`
    /// cannot do, such as adding an app (a second hub).
    ///
    /// `listening: false` starts everything but the HTTP listener: the caller calls the router in
    /// process (`server.application`), and ``baseURL`` is
    /// `http://localhost`, the authority the router mode gives every request (nothing listens).
    public static func start(
        retryPolicy: RetryPolicy = RetryPolicy(), clock: any PushgateClock = SystemClock(),
        rewrite: ((inout [String: Any]) -> Void)? = nil,
        adjust: @Sendable (inout PushgateConfiguration) -> Void = { _ in }, listening: Bool = true
    ) async throws -> LocalGateway {
        let sandbox = try await PushSandbox.start()
        let directory = NSTemporaryDirectory() + "pushgate-demo-" + UUID().uuidString.prefix(8)
        let configPath = try sandbox.writeGatewayConfiguration(to: directory, listenerPort: 0, listenerTLSPort: 0)
        if let rewrite {
            let url = URL(fileURLWithPath: configPath)
            var object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
            rewrite(&object)
            try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]).write(
                to: url)
        }
        var loaded = try ConfigurationLoader.load(file: configPath)
        var configuration = loaded.configuration
        adjust(&configuration)
        loaded = loaded.replacing(configuration)
        let store = try await SQLiteStore.open(path: directory + "/pushgate.sqlite")
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let (securePorts, securePortContinuation) = AsyncStream.makeStream(of: Int.self)
        let server = try await GatewayServer.assemble(
            configuration: loaded, app: loaded.defaultApp, store: store, health: store.health, policy: retryPolicy, port: 0, securePort: 0,
            logger: Logger(label: "pushgate.local"), clock: clock, onListening: { portContinuation.yield($0) },
            onListeningSecurely: { securePortContinuation.yield($0) })
        let services = server.serviceGroup(listening: listening)
        // Ended by ``stop()``: graceful shutdown, then awaited.
        let serverTask = Task { try await services.run() }
        guard listening else {
            // No socket: HummingbirdTesting's router mode names `localhost` as every request's authority.
            return LocalGateway(
                sandbox: sandbox, directory: directory, baseURL: "http://localhost", secureBaseURL: nil,
                client: try CurlHTTPClient(configuration: .init(httpVersion: .http1, maximumConnectionsPerHost: 4)), store: store,
                server: server, services: services, serverTask: serverTask)
        }
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        var secureBaseURL: String?
        if configuration.listener.tls?.port != nil {
            var secureIterator = securePorts.makeAsyncIterator()
            secureBaseURL = "https://127.0.0.1:\(await secureIterator.next() ?? 0)"
        }
        return LocalGateway(
            sandbox: sandbox, directory: directory, baseURL: "http://127.0.0.1:\(port)", secureBaseURL: secureBaseURL,
            client: try CurlHTTPClient(configuration: .init(httpVersion: .http1, maximumConnectionsPerHost: 4)), store: store,
            server: server, services: services, serverTask: serverTask)
    }

    /// Stops the gateway gracefully (its curl pools and sandbox bridge close with it), then the
    /// sandbox, and removes the folder.
    public func stop() async {
        await services.triggerGracefulShutdown()
        _ = try? await serverTask.value
        await client.shutdown()
        try? await sandbox.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A call to the gateway as the tutorial client makes it: Basic credentials (demo users:
    /// password = name unless given; none when `user` is nil), JSON content type.
    public func call(
        _ method: String, _ path: String, user: String?, password: String? = nil, body: String = "",
        contentType: String = "application/json; charset=utf-8", accept: String? = nil, headers extra: [(name: String, value: String)] = []
    ) async throws -> CurlResponse {
        let headers = Self.headers(user: user, password: password, contentType: contentType, accept: accept, extra: extra)
        return try await client.execute(CurlRequest(method: method, url: baseURL + path, headers: headers, body: Array(body.utf8)))
    }

    /// The header fields of a ``call(_:_:user:password:body:contentType:accept:headers:)``.
    public static func headers(
        user: String?, password: String?, contentType: String, accept: String?, extra: [(name: String, value: String)]
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Content-Type", contentType)] + extra
        if let user {
            headers.append(("Authorization", "Basic " + Data("\(user):\(password ?? user)".utf8).base64EncodedString()))
        }
        if let accept { headers.append(("Accept", accept)) }
        return headers
    }

    /// Registers `device` the way the tutorial client does (POST for an id, PUT the device with a
    /// pretty-printed body); returns the registration id.
    public func register(_ device: SandboxDevice, user: String, tags: [String] = []) async throws -> String {
        try await Self.register(device, tags: tags) { method, path, body in try await call(method, path, user: user, body: body) }
    }

    /// The tutorial client's registration through `call` (method, path, body).
    public static func register(
        _ device: SandboxDevice, tags: [String], call: (String, String, String) async throws -> CurlResponse
    ) async throws -> String {
        try await register(device.platform, handle: device.handle, tags: tags, call: call)
    }

    /// ``register(_:tags:call:)`` for a device given by its platform and handle.
    public static func register(
        _ platform: Platform, handle deviceHandle: String, tags: [String], call: (String, String, String) async throws -> CurlResponse
    ) async throws -> String {
        // A browser is looked up by its subscription's endpoint and registered with the
        // subscription as the object `PushSubscription.toJSON()` gives.
        let subscription = platform.isWebPush ? WebPushSubscription(handleValue: deviceHandle) : nil
        let lookup = subscription?.endpoint ?? deviceHandle
        let encodedHandle = lookup.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? lookup
        let created = try await call("POST", "/api/register?handle=\(encodedHandle)", "")
        guard created.status == 200 else { throw LocalGatewayError(description: "POST /api/register answered \(created.status)") }
        let id = String(created.bodyText.dropFirst().dropLast())
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ", ")
        let handle = subscription == nil ? "\"\(deviceHandle)\"" : deviceHandle
        let body = "{\n  \"Platform\": \"\(platform.rawValue)\",\n  \"Handle\": \(handle),\n  \"Tags\": [\(tagList)]\n}"
        let updated = try await call("PUT", "/api/register/\(id)", body)
        guard updated.status == 200 else {
            throw LocalGatewayError(description: "PUT /api/register answered \(updated.status): \(updated.bodyText)")
        }
        return id
    }
}

/// A step against the local gateway did not answer as expected.
public struct LocalGatewayError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}
