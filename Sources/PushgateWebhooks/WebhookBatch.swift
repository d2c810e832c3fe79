import Pushgate

/// The body of one POST: `{"events":[…]}`, events in the store's order (`sequence`), each with its
/// `sequence` added; the signature covers these exact bytes.
public struct WebhookBatch: Sendable, Hashable {
    public var deliveries: [WebhookDelivery]

    public init(_ deliveries: [WebhookDelivery]) { self.deliveries = deliveries }

    public var sequences: [Int64] { deliveries.map(\.row.sequence) }

    /// `{"events":[…]}`.
    public var body: [UInt8] {
        var body = Array("{\"events\":[".utf8)
        for (index, delivery) in deliveries.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: WebhookEvent.posted(body: delivery.row.row.body, sequence: delivery.row.sequence).utf8)
        }
        body.append(contentsOf: "]}".utf8)
        return body
    }

    /// Claimed events split into POSTs of at most `maximumBytes` of body each, in order (an event
    /// larger than that alone goes alone).
    public static func split(_ deliveries: [WebhookDelivery], maximumBytes: Int) -> [WebhookBatch] {
        var batches: [WebhookBatch] = []
        var current: [WebhookDelivery] = []
        var bytes = "{\"events\":[]}".utf8.count
        for delivery in deliveries {
            // The event, its `"sequence":N,` and a comma.
            let size = delivery.row.row.body.utf8.count + 32
            if !current.isEmpty, bytes + size > maximumBytes {
                batches.append(WebhookBatch(current))
                current = []
                bytes = "{\"events\":[]}".utf8.count
            }
            current.append(delivery)
            bytes += size
        }
        if !current.isEmpty { batches.append(WebhookBatch(current)) }
        return batches
    }
}
