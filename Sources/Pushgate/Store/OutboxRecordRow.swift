/// A row another feature writes with a page's record (an outcome webhook's event): it commits or
/// fails with the page's outcomes, so that it exists exactly when they do. The outbox stores it
/// beside the notification; its feature reads and removes it (``OutboxStore/recordedRows(app:after:limit:)``).
public struct OutboxRecordRow: Sendable, Hashable, Codable {
    /// What the row is, in its feature's words (`webhook.delivery.failed`).
    public var kind: String
    /// Its content, in its feature's form (JSON, as a rule); at most ``maximumBodyBytes``.
    public var body: String

    /// The largest body a row holds: a row is an event, not a payload.
    public static let maximumBodyBytes = 16_384

    public init(kind: String, body: String) {
        self.kind = kind
        self.body = body
    }

    /// Why a store refuses `rows` (a body past ``maximumBodyBytes``), nil when it takes them: the
    /// in-memory store's check, which the SQL stores' tables make with a CHECK constraint.
    public static func refusal(_ rows: [OutboxRecordRow]) -> StoreError? {
        guard let long = rows.first(where: { $0.body.utf8.count > maximumBodyBytes }) else { return nil }
        return StoreError(.storage, "an outbox row of kind \(long.kind) is \(long.body.utf8.count) bytes; at most \(maximumBodyBytes)")
    }
}

/// A row as the store keeps it: in the order rows were recorded (`sequence`, increasing per
/// store), with the notification and page whose record wrote it.
public struct StoredOutboxRow: Sendable, Hashable {
    public var sequence: Int64
    public var notificationID: String
    public var page: Int
    public var row: OutboxRecordRow

    public init(sequence: Int64, notificationID: String, page: Int, row: OutboxRecordRow) {
        self.sequence = sequence
        self.notificationID = notificationID
        self.page = page
        self.row = row
    }
}
