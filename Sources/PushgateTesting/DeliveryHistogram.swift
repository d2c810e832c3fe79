import Foundation
import PushgateCurl
import PushgateLocal

/// How many devices received a send how often, as the sandbox's `GET /stats/inboxes` counts them
/// (`{"1": devices that got it once, "2": twice, …, "total": messages}`), and the crash tests'
/// check of the outbox's promise: after a `kill -9`, every device got the message, and those that
/// got it twice are at most the requests that were on the wire.
public struct DeliveryHistogram: Sendable, CustomStringConvertible {
    public let counts: [String: Int]

    public init(counts: [String: Int]) { self.counts = counts }

    /// The sandbox's histogram at `control` (its control API's base URL).
    public static func read(from control: String, client: CurlHTTPClient) async throws -> DeliveryHistogram {
        let answer = try await client.execute(CurlRequest(method: "GET", url: control + "/stats/inboxes"))
        guard let counts = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Int] else {
            throw LocalGatewayError(description: "GET \(control)/stats/inboxes: \(answer.status) \(answer.bodyText)")
        }
        return DeliveryHistogram(counts: counts)
    }

    /// Devices that received it at least once.
    public var reached: Int { counts.filter { $0.key != "total" }.values.reduce(0, +) }
    /// Devices that received it more than once.
    public var receivedMoreThanOnce: Int { counts.filter { $0.key != "total" && $0.key != "1" }.values.reduce(0, +) }

    /// What breaks the promise for an audience of `audience` devices with at most `onTheWire`
    /// requests on the wire at the crash (none twice beyond them, none three times); nil when it holds.
    public func violation(audience: Int, onTheWire bound: Int) -> String? {
        if reached != audience { return "devices that received nothing: \(audience - reached); \(self)" }
        if receivedMoreThanOnce > bound {
            return "\(receivedMoreThanOnce) devices received the message more than once (bound \(bound)): \(self)"
        }
        if !counts.keys.allSatisfy({ ["total", "1", "2"].contains($0) }) { return "a device received it three times or more: \(self)" }
        return nil
    }

    public var description: String { counts.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") }
}
