import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateDispatch
import PushgateLocal
import PushgateStore

/// The local gateway (sandbox + gateway on a free port) with the tests' defaults: alice calls
/// unless told otherwise, few retries.
public struct GatewayFixture: Sendable {
    public let local: LocalGateway

    public var sandbox: PushSandbox { local.sandbox }
    public var store: SQLiteStore { local.store }

    public func call(
        _ method: String, _ path: String, user: String? = "alice", password: String? = nil, body: String = "",
        contentType: String = "application/json", accept: String? = nil, headers: [(name: String, value: String)] = []
    ) async throws -> CurlResponse {
        try await local.call(
            method, path, user: user, password: password, body: body, contentType: contentType, accept: accept, headers: headers)
    }

    public func register(_ device: SandboxDevice, user: String, tags: [String] = []) async throws -> String {
        try await local.register(device, user: user, tags: tags)
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
}
