import Pushgate

/// Webhook events' delivery (``WebhookEventStore``) on the outbox's rows, once for every SQL store:
/// a claim leases due rows to one poster (`FOR UPDATE SKIP LOCKED` where rows are locked), so
/// instances sharing a database never post an event at once.
extension SQLOutbox {
    static var deliveryColumns: String { "sequence, notification_id, page, kind, body, attempts, first_failed_at, parked_at, last_error" }

    static func delivery(_ row: Database.Session.Row) throws -> WebhookDelivery {
        guard let sequence = row.integer(0), let id = row.text(1), let page = row.integer(2), let kind = row.text(3),
            let body = row.text(4)
        else { throw StoreError(.storage, "a stored webhook event is corrupt") }
        return WebhookDelivery(
            row: StoredOutboxRow(sequence: Int64(sequence), notificationID: id, page: page, row: OutboxRecordRow(kind: kind, body: body)),
            attempts: row.integer(5) ?? 0, firstFailedAt: row.double(6).map(Timestamp.init(secondsSinceEpoch:)),
            parkedAt: row.double(7).map(Timestamp.init(secondsSinceEpoch:)), lastError: row.text(8))
    }

    static func sequenceList(_ sequences: [Int64]) -> (sql: String, values: [SQLValue]) {
        (Array(repeating: "?", count: sequences.count).joined(separator: ", "), sequences.map { .integer($0) })
    }

    package func claimWebhookEvents(
        app: AppID, receiver: String, owner: String, until: Timestamp, now: Timestamp, limit: Int
    ) async throws(StoreError) -> [WebhookDelivery] {
        let dialect = self.dialect
        return try await database.transaction { session -> [WebhookDelivery] in
            try await session.rows(
                """
                UPDATE outbox_rows SET lease_owner = ?, lease_expires = ? WHERE sequence IN (
                    SELECT sequence FROM outbox_rows
                    WHERE app = ? AND kind = ? AND posted_at IS NULL AND parked_at IS NULL AND due_at <= ? AND lease_expires <= ?
                    ORDER BY sequence LIMIT ?\(dialect.skipLocked))
                RETURNING \(Self.deliveryColumns)
                """,
                [
                    .text(owner), .real(until.secondsSinceEpoch), .text(app.rawValue),
                    .text(WebhookSubscriptions.rowKind(receiver: receiver)), .real(now.secondsSinceEpoch), .real(now.secondsSinceEpoch),
                    .integer(Int64(max(0, limit))),
                ]
            ).map(Self.delivery).sorted { $0.row.sequence < $1.row.sequence }
        }
    }

    package func webhookEventsPosted(app: AppID, sequences: [Int64], now: Timestamp) async throws(StoreError) {
        guard !sequences.isEmpty else { return }
        let list = Self.sequenceList(sequences)
        try await database.transaction { session in
            _ = try await session.rows(
                "UPDATE outbox_rows SET posted_at = ?, lease_owner = NULL, lease_expires = 0 WHERE app = ? AND sequence IN (\(list.sql))",
                [.real(now.secondsSinceEpoch), .text(app.rawValue)] + list.values)
        }
    }

    package func webhookEventsFailed(
        app: AppID, sequences: [Int64], error: String, retryAt: Timestamp?, now: Timestamp
    ) async throws(StoreError) {
        guard !sequences.isEmpty else { return }
        let list = Self.sequenceList(sequences)
        let time = now.secondsSinceEpoch
        try await database.transaction { session in
            _ = try await session.rows(
                """
                UPDATE outbox_rows SET attempts = attempts + 1, first_failed_at = coalesce(first_failed_at, ?), last_error = ?,
                    lease_owner = NULL, lease_expires = 0, due_at = ?, parked_at = ?
                WHERE app = ? AND sequence IN (\(list.sql))
                """,
                [
                    .real(time), .text(String(error.prefix(500))), .real(retryAt?.secondsSinceEpoch ?? time),
                    retryAt == nil ? .real(time) : .null, .text(app.rawValue),
                ] + list.values)
        }
    }

    package func parkedWebhookEvents(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [WebhookDelivery] {
        try await database.read { session -> [WebhookDelivery] in
            try await session.rows(
                """
                SELECT \(Self.deliveryColumns) FROM outbox_rows
                WHERE app = ? AND parked_at IS NOT NULL AND posted_at IS NULL AND sequence > ? ORDER BY sequence LIMIT ?
                """, [.text(app.rawValue), .integer(sequence), .integer(Int64(max(0, limit)))]
            ).map(Self.delivery)
        }
    }

    package func retryParkedWebhookEvents(app: AppID, sequences: [Int64]?, now: Timestamp) async throws(StoreError) -> Int {
        let list = sequences.map(Self.sequenceList)
        return try await database.transaction { session -> Int in
            try await session.rows(
                """
                UPDATE outbox_rows SET parked_at = NULL, attempts = 0, first_failed_at = NULL, due_at = ?
                WHERE app = ? AND parked_at IS NOT NULL AND posted_at IS NULL\(list.map { " AND sequence IN (\($0.sql))" } ?? "")
                RETURNING sequence
                """, [.real(now.secondsSinceEpoch), .text(app.rawValue)] + (list?.values ?? [])
            ).count
        }
    }

    package func pruneWebhookEvents(postedBefore: Timestamp, limit: Int) async throws(StoreError) -> Int {
        try await database.transaction { session -> Int in
            try await session.rows(
                """
                DELETE FROM outbox_rows WHERE sequence IN (
                    SELECT sequence FROM outbox_rows WHERE posted_at IS NOT NULL AND posted_at < ? LIMIT ?)
                RETURNING sequence
                """, [.real(postedBefore.secondsSinceEpoch), .integer(Int64(max(0, limit)))]
            ).count
        }
    }

    package func webhookEventCounts(app: AppID) async throws(StoreError) -> WebhookEventCounts {
        try await database.read { session -> WebhookEventCounts in
            let row = try await session.rows(
                """
                SELECT count(*) FILTER (WHERE parked_at IS NULL), count(*) FILTER (WHERE parked_at IS NOT NULL) FROM outbox_rows
                WHERE app = ? AND posted_at IS NULL AND kind LIKE 'webhook:%'
                """, [.text(app.rawValue)]
            ).first
            return WebhookEventCounts(pending: row?.integer(0) ?? 0, parked: row?.integer(1) ?? 0)
        }
    }
}

extension SQLOutboxStore {
    public func claimWebhookEvents(
        app: AppID, receiver: String, owner: String, until: Timestamp, now: Timestamp, limit: Int
    ) async throws(StoreError) -> [WebhookDelivery] {
        try await outbox.claimWebhookEvents(app: app, receiver: receiver, owner: owner, until: until, now: now, limit: limit)
    }

    public func webhookEventsPosted(app: AppID, sequences: [Int64], now: Timestamp) async throws(StoreError) {
        try await outbox.webhookEventsPosted(app: app, sequences: sequences, now: now)
    }

    public func webhookEventsFailed(
        app: AppID, sequences: [Int64], error: String, retryAt: Timestamp?, now: Timestamp
    ) async throws(StoreError) {
        try await outbox.webhookEventsFailed(app: app, sequences: sequences, error: error, retryAt: retryAt, now: now)
    }

    public func parkedWebhookEvents(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [WebhookDelivery] {
        try await outbox.parkedWebhookEvents(app: app, after: sequence, limit: limit)
    }

    public func retryParkedWebhookEvents(app: AppID, sequences: [Int64]?, now: Timestamp) async throws(StoreError) -> Int {
        try await outbox.retryParkedWebhookEvents(app: app, sequences: sequences, now: now)
    }

    public func pruneWebhookEvents(postedBefore: Timestamp, limit: Int) async throws(StoreError) -> Int {
        try await outbox.pruneWebhookEvents(postedBefore: postedBefore, limit: limit)
    }

    public func webhookEventCounts(app: AppID) async throws(StoreError) -> WebhookEventCounts {
        try await outbox.webhookEventCounts(app: app)
    }
}
