import Foundation
import Pushgate
import PushgateCurl

/// The web console's window on a push-service sandbox: forwards a few control-API calls (create a
/// device, list devices, read an inbox, uninstall) so the browser never needs the sandbox's own
/// address or CA. Only built when `console.sandboxControl` is configured.
public final class SandboxBridge: Sendable {
    /// Device actions the console may trigger.
    static let actions: Set<String> = ["uninstall", "reinstall", "expire"]

    public let controlURL: String
    private let client: CurlHTTPClient

    /// `controlURL`: the sandbox control API, e.g. `http://127.0.0.1:9443`.
    public init(controlURL: String) throws {
        self.controlURL = controlURL.hasSuffix("/") ? String(controlURL.dropLast()) : controlURL
        client = try CurlHTTPClient(
            configuration: .init(httpVersion: .http1, connectTimeoutMilliseconds: 2000, totalTimeoutMilliseconds: 10_000))
    }

    /// The sandbox's answer to `method path` (status and JSON body), or 502 naming why it could not
    /// be reached.
    func forward(_ method: String, _ path: String, body: [UInt8] = []) async -> (status: Int, body: String) {
        do {
            let response = try await client.execute(
                CurlRequest(method: method, url: controlURL + path, headers: [("Content-Type", "application/json")], body: body))
            return (response.status, response.bodyText)
        } catch {
            let message = "the sandbox control API at \(controlURL) did not answer: \(error.message)"
            return (502, #"{"error":\#(Escaping.jsonString(message)),"status":502}"#)
        }
    }

    /// Whether `id` can be a sandbox device id (letters, digits, `-`), so it cannot steer the path.
    static func isDeviceID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 64 && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    public func shutdown() async { await client.shutdown() }
}
