import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateDispatch
import PushgateLocal
import PushgateSQLite

/// The local gateway (sandbox + gateway on a free port) with the tests' defaults: alice calls
/// unless told otherwise, few retries. ``inProcess(clock:rewrite:adjust:_:)`` calls the router
/// in process instead (HummingbirdTesting's router mode): no listener, no socket, no HTTP parsing
/// on the way in; the sandbox still answers the pushes.
public struct GatewayFixture: GatewayCaller {
    public let local: LocalGateway
    /// The router's test client, in process mode.
    let router: (any TestClientProtocol)?

    init(local: LocalGateway, router: (any TestClientProtocol)? = nil) {
        self.local = local
        self.router = router
    }

    public var sandbox: PushSandbox { local.sandbox }
    public var store: SQLiteStore { local.store }
    public var baseURL: String { local.baseURL }
    public var directory: String { local.directory }

    public func call(
        _ method: String, _ path: String, user: String?, password: String?, body: String, contentType: String, accept: String?,
        headers: [(name: String, value: String)]
    ) async throws -> CurlResponse {
        guard let router else {
            return try await local.call(
                method, path, user: user, password: password, body: body, contentType: contentType, accept: accept, headers: headers)
        }
        return try await Self.execute(
            router, method, path, user: user, password: password, body: body, contentType: contentType, accept: accept, headers: headers)
    }

    /// A request made to a router in process, answered as a ``CurlResponse`` (what the tests read).
    static func execute(
        _ router: any TestClientProtocol, _ method: String, _ path: String, user: String?, password: String?, body: String,
        contentType: String, accept: String?, headers: [(name: String, value: String)]
    ) async throws -> CurlResponse {
        var fields = HTTPFields()
        for (name, value) in LocalGateway.headers(user: user, password: password, contentType: contentType, accept: accept, extra: headers)
        {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        let response = try await router.execute(
            uri: path, method: HTTPRequest.Method(rawValue: method) ?? .get, headers: fields, body: ByteBuffer(string: body))
        return CurlResponse(
            status: response.status.code, headers: response.headers.map { ($0.name.rawName, $0.value) },
            body: Array(response.body.readableBytesView), httpVersion: "1.1")
    }

    public func register(_ device: SandboxDevice, user: String, tags: [String] = []) async throws -> String {
        try await LocalGateway.register(device, tags: tags) { method, path, body in try await call(method, path, user: user, body: body) }
    }

    public static func with(
        clock: any PushgateClock = SystemClock(), rewrite: ((inout [String: Any]) -> Void)? = nil,
        adjust: @Sendable (inout PushgateConfiguration) -> Void = { _ in }, _ body: (GatewayFixture) async throws -> Void
    ) async throws {
        let fixture = GatewayFixture(
            local: try await LocalGateway.start(
                retryPolicy: RetryPolicy(maximumAttempts: 2, initialBackoffSeconds: 0.05), clock: clock, rewrite: rewrite, adjust: adjust))
        do { try await body(fixture) } catch {
            await fixture.local.stop()
            throw error
        }
        await fixture.local.stop()
    }

    /// A `rewrite` that changes the default app's `services.<name>` object of the configuration.
    public static func service(_ name: String, _ change: @escaping (inout [String: Any]) -> Void) -> (inout [String: Any]) -> Void {
        { config in
            var apps = config["apps"] as? [String: Any] ?? [:]
            var app = apps["default"] as? [String: Any] ?? [:]
            var services = app["services"] as? [String: Any] ?? [:]
            var service = services[name] as? [String: Any] ?? [:]
            change(&service)
            services[name] = service
            app["services"] = services
            apps["default"] = app
            config["apps"] = apps
        }
    }

    /// ``with(clock:rewrite:adjust:_:)`` with the calls made to the router in process.
    public static func inProcess(
        clock: any PushgateClock = SystemClock(), rewrite: ((inout [String: Any]) -> Void)? = nil,
        adjust: @Sendable (inout PushgateConfiguration) -> Void = { _ in }, _ body: @Sendable (GatewayFixture) async throws -> Void
    ) async throws {
        let local = try await LocalGateway.start(
            retryPolicy: RetryPolicy(maximumAttempts: 2, initialBackoffSeconds: 0.05), clock: clock, rewrite: rewrite, adjust: adjust,
            listening: false)
        do {
            try await local.server.application.test(.router) { client in try await body(GatewayFixture(local: local, router: client)) }
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}

/// What a test calls a gateway through: ``GatewayFixture`` (the sandbox, over HTTP or in process)
/// or ``InMemoryGatewayFixture`` (nothing outside the process). Helpers take `some GatewayCaller`.
public protocol GatewayCaller: Sendable {
    /// How clients reach it (`http://localhost` in process): the resource URI hub tokens sign.
    var baseURL: String { get }
    /// Where its configuration is (hub keys under `hub-keys/`).
    var directory: String { get }
    func call(
        _ method: String, _ path: String, user: String?, password: String?, body: String, contentType: String, accept: String?,
        headers: [(name: String, value: String)]
    ) async throws -> CurlResponse
}

extension GatewayCaller {
    /// ``call(_:_:user:password:body:contentType:accept:headers:)`` with the fixtures' defaults, written once for
    /// both: alice calls, a JSON body.
    public func call(
        _ method: String, _ path: String, user: String? = "alice", password: String? = nil, body: String = "",
        contentType: String = "application/json", accept: String? = nil, headers: [(name: String, value: String)] = []
    ) async throws -> CurlResponse {
        try await call(method, path, user: user, password: password, body: body, contentType: contentType, accept: accept, headers: headers)
    }
}
