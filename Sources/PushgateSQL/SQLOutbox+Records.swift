import Pushgate

/// A notification's end (finishing, parking, cancelling), its leases, its telemetry and the
/// housekeeping, with the statements they share.
extension SQLOutbox {
    package func finish(
        notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents = .none
    ) async throws(StoreError) -> NotificationRecord? {
        let dialect = self.dialect
        return try await database.transaction { session -> NotificationRecord? in
            try await Self.finishing(
                notificationID: notificationID, app: app, owner: owner, now: now, completion: completion, dialect: dialect, session: session
            )
        }
    }

    /// Ends the notification in the caller's transaction when its audience is exhausted and every
    /// page is done (its record; a final one as it is); nil while pages are left or `owner` does
    /// not hold it.
    static func finishing(
        notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents, dialect: SQLDialect,
        session: Database.Session
    ) async throws -> NotificationRecord? {
        let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
        guard
            let row = try await session.rows(
                "SELECT exhausted, lease_owner FROM outbox_notifications WHERE app = ? AND id = ?\(dialect.lockRows)", key
            ).first, var record = try await Self.record(id: notificationID, app: app, session: session)
        else { return nil }
        if record.state.isFinal { return record }
        guard row.bool(0), row.text(1) == owner else { return nil }
        let open = try await session.rows(
            "SELECT 1 FROM outbox_pages WHERE app = ? AND notification_id = ? AND \(dialect.openPage) LIMIT 1", key)
        guard open.isEmpty else { return nil }
        record.state = NotificationRecord.finalState(counts: record.counts, selection: record.selection, cancelled: record.cancelRequested)
        record.endedAt = now
        _ = try await session.rows("DELETE FROM outbox_pages WHERE app = ? AND notification_id = ?", key)
        try await end(record.state, at: now, key: key, session: session)
        try await insertRows(completion.rows(for: record, now: now), page: 0, key: key, session: session)
        return record
    }

    /// Stores a notification's end (its final state and time, no lease) and drops the answers
    /// its pages' records hold now, in the caller's transaction.
    static func end(_ state: NotificationState, at time: Timestamp, key: [SQLValue], session: Database.Session) async throws {
        _ = try await session.rows(endSQL, [.text(state.rawValue), .real(time.secondsSinceEpoch)] + key)
        _ = try await session.rows(dropAnswersSQL, key)
    }

    /// A notification's end: its final state and time (the first two values), no lease.
    static var endSQL: String {
        "UPDATE outbox_notifications SET state = ?, ended_at = ?, lease_owner = NULL, lease_expires = 0 WHERE app = ? AND id = ?"
    }

    /// Drops every answer of a notification's pages.
    static var dropAnswersSQL: String { "DELETE FROM outbox_answers WHERE app = ? AND notification_id = ?" }

    package func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> Timestamp?
    {
        let dialect = self.dialect
        return try await database.transaction { session -> Timestamp? in
            let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
            // Being cancelled: its retries are due at once, nothing is parked.
            guard
                let row = try await session.rows(
                    """
                    SELECT exhausted, lease_owner, cancel_requested FROM outbox_notifications
                    WHERE app = ? AND id = ? AND ended_at IS NULL\(dialect.lockRows)
                    """, key
                ).first, row.bool(0), row.text(1) == owner, !row.bool(2)
            else { return nil }
            // Every open page a retry not yet due: nobody's, its lease in the future.
            guard
                let open = try await session.rows(
                    """
                    SELECT count(*), count(*) FILTER (WHERE lease_owner IS NOT NULL OR targets IS NULL OR lease_expires <= ?),
                        min(lease_expires)
                    FROM outbox_pages WHERE app = ? AND notification_id = ? AND \(dialect.openPage)
                    """, [.real(now.secondsSinceEpoch)] + key
                ).first, (open.integer(0) ?? 0) > 0, open.integer(1) == 0, let due = open.double(2)
            else { return nil }
            _ = try await session.rows(
                "UPDATE outbox_notifications SET lease_owner = NULL, lease_expires = ? WHERE app = ? AND id = ?", [.real(due)] + key)
            return Timestamp(secondsSinceEpoch: due)
        }
    }

    package func renewLeases(owner: String, until: Timestamp) async throws(StoreError) {
        let dialect = self.dialect
        try await database.transaction { session in
            let values: [SQLValue] = [.real(until.secondsSinceEpoch), .text(owner)]
            _ = try await session.rows(
                "UPDATE outbox_notifications SET lease_expires = ? WHERE lease_owner = ? AND ended_at IS NULL", values)
            _ = try await session.rows("UPDATE outbox_pages SET lease_expires = ? WHERE lease_owner = ? AND \(dialect.openPage)", values)
        }
    }

    package func releaseLeases(owner: String, notificationID: String?) async throws(StoreError) {
        let dialect = self.dialect
        try await database.transaction { session in
            // An empty id matches every notification.
            let values: [SQLValue] = [.text(owner), .text(notificationID ?? ""), .text(notificationID ?? "")]
            _ = try await session.rows(
                """
                UPDATE outbox_notifications SET lease_owner = NULL, lease_expires = 0
                WHERE lease_owner = ? AND ended_at IS NULL AND (? = '' OR id = ?)
                """, values)
            _ = try await session.rows(
                """
                UPDATE outbox_pages SET lease_owner = NULL, lease_expires = 0
                WHERE lease_owner = ? AND \(dialect.openPage) AND (? = '' OR notification_id = ?)
                """, values)
            // Released work is due at once: another instance may take it.
            try await session.announceOutboxWork("released")
        }
    }

    package func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        let dialect = self.dialect
        return try await database.transaction { session -> NotificationRecord? in
            let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
            guard !(try await session.rows("SELECT 1 FROM outbox_notifications WHERE app = ? AND id = ?\(dialect.lockRows)", key)).isEmpty,
                let record = try await Self.record(id: notificationID, app: app, session: session)
            else { return nil }
            guard !record.state.isFinal else { return record }
            // Parked work (retries not yet due) is due at once: its targets are counted Cancelled.
            _ = try await session.rows(
                """
                UPDATE outbox_notifications SET cancel_requested = ?,
                    lease_expires = CASE WHEN lease_owner IS NULL THEN 0 ELSE lease_expires END
                WHERE app = ? AND id = ?
                """, [.bool(true)] + key)
            _ = try await session.rows(
                "UPDATE outbox_pages SET lease_expires = 0 WHERE app = ? AND notification_id = ? AND \(dialect.openPage) AND lease_owner IS NULL",
                key)
            try await session.announceOutboxWork("cancelled")
            return record
        }
    }

    package func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord? {
        try await database.read { session in try await Self.record(id: id, app: app, session: session) }
    }

    package func failedTargets(
        notificationID: String, app: AppID, after: RegistrationID?, limit: Int
    ) async throws(StoreError) -> [TargetResult] {
        try await database.read { session in
            try await session.rows(
                """
                SELECT \(OutboxRows.failureColumns) FROM outbox_failures
                WHERE app = ? AND notification_id = ? AND registration_id > ? ORDER BY registration_id LIMIT ?
                """, [.text(app.rawValue), .text(notificationID), .text(after?.rawValue ?? ""), .integer(Int64(max(0, limit)))]
            ).compactMap(OutboxRows.failure)
        }
    }

    package func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord] {
        try await database.read { session in
            let ids =
                if let sender {
                    try await session.rows(
                        "SELECT id FROM outbox_notifications WHERE app = ? AND sender = ? ORDER BY enqueued_at DESC, id LIMIT ?",
                        [.text(app.rawValue), .text(sender), .integer(Int64(max(0, limit)))])
                } else {
                    try await session.rows(
                        "SELECT id FROM outbox_notifications WHERE app = ? ORDER BY enqueued_at DESC, id LIMIT ?",
                        [.text(app.rawValue), .integer(Int64(max(0, limit)))])
                }
            var records: [NotificationRecord] = []
            for row in ids {
                if let id = row.text(0), let record = try await Self.record(id: id, app: app, session: session) { records.append(record) }
            }
            return records
        }
    }

    package func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int {
        let dialect = self.dialect
        return try await database.transaction { session -> Int in
            let keys = try await session.rows(
                "SELECT app, id FROM outbox_notifications WHERE ended_at IS NOT NULL AND ended_at < ? LIMIT 100\(dialect.skipLocked)",
                [.real(endedBefore.secondsSinceEpoch)]
            ).map { row -> [SQLValue] in [.text(row.text(0) ?? ""), .text(row.text(1) ?? "")] }
            for key in keys {
                _ = try await session.rows("DELETE FROM outbox_failures WHERE app = ? AND notification_id = ?", key)
                _ = try await session.rows("DELETE FROM outbox_counts WHERE app = ? AND notification_id = ?", key)
                _ = try await session.rows("DELETE FROM outbox_pages WHERE app = ? AND notification_id = ?", key)
                _ = try await session.rows(Self.dropAnswersSQL, key)
                _ = try await session.rows("DELETE FROM outbox_notifications WHERE app = ? AND id = ?", key)
            }
            // Live Activities not stamped since (an activity lives 12 hours at most): kept as long
            // as the notifications that stamped them.
            let activities = try await session.rows(
                """
                DELETE FROM live_activities WHERE (app, owner_kind, owner, name) IN
                    (SELECT app, owner_kind, owner, name FROM live_activities WHERE updated_at < ? LIMIT 100)
                RETURNING 1
                """, [.real(endedBefore.secondsSinceEpoch)]
            ).count
            return keys.count + activities
        }
    }

    // MARK: Rows written with records

    package func recordedRows(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [StoredOutboxRow] {
        try await database.read { session -> [StoredOutboxRow] in
            try await session.rows(
                "SELECT sequence, notification_id, page, kind, body FROM outbox_rows WHERE app = ? AND sequence > ? ORDER BY sequence LIMIT ?",
                [.text(app.rawValue), .integer(sequence), .integer(Int64(max(0, limit)))]
            ).map { row in
                guard let sequence = row.integer(0), let id = row.text(1), let page = row.integer(2), let kind = row.text(3),
                    let body = row.text(4)
                else { throw StoreError(.storage, "a stored outbox row is corrupt") }
                return StoredOutboxRow(
                    sequence: Int64(sequence), notificationID: id, page: page, row: OutboxRecordRow(kind: kind, body: body))
            }
        }
    }

    package func removeRecordedRows(app: AppID, through sequence: Int64) async throws(StoreError) -> Int {
        try await database.transaction { session -> Int in
            try await session.rows(
                "DELETE FROM outbox_rows WHERE app = ? AND sequence <= ? RETURNING sequence", [.text(app.rawValue), .integer(sequence)]
            ).count
        }
    }

    package func appendRows(_ rows: [OutboxRecordRow], notificationID: String, page: Int, app: AppID) async throws(StoreError) {
        guard !rows.isEmpty else { return }
        try await database.transaction { session in
            try await Self.insertRows(rows, page: page, key: [.text(app.rawValue), .text(notificationID)], session: session)
        }
    }

    package func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth {
        try await database.read { session -> OutboxDepth in
            let time = now.secondsSinceEpoch
            guard
                let row = try await session.rows(
                    """
                    WITH pending AS (
                        -- Parked (only retries of throttled targets left, not yet due) is not due.
                        SELECT deliver_at <= ? AND NOT (lease_owner IS NULL AND lease_expires > ?) AS due, cancel_requested, deliver_at
                        FROM outbox_notifications WHERE ended_at IS NULL
                    )
                    SELECT count(*), count(*) FILTER (WHERE due OR cancel_requested), min(deliver_at) FILTER (WHERE due) FROM pending
                    """, [.real(time), .real(time)]
                ).first
            else { return OutboxDepth(pending: 0, due: 0, oldestDue: nil) }
            return OutboxDepth(
                pending: row.integer(0) ?? 0, due: row.integer(1) ?? 0, oldestDue: row.double(2).map(Timestamp.init(secondsSinceEpoch:)))
        }
    }

    // MARK: Reading

    /// A retry page's targets as they are now: each registration's current handle, the deleted
    /// and expired ones left out.
    static func current(
        _ targets: [DispatchTarget], app: AppID, now: Timestamp, session: Database.Session
    ) async throws -> [DispatchTarget] {
        // Only registrations are read again; other targets go as they were sent.
        let registrations = targets.filter(\.isRegistration)
        guard !registrations.isEmpty else { return targets }
        var handles: [String: DeviceHandle] = [:]
        var start = registrations.startIndex
        while start < registrations.endIndex {
            let chunk = registrations[start..<min(start + 500, registrations.endIndex)]
            let rows = try await session.rows(
                """
                SELECT id, platform, handle FROM registrations
                WHERE app = ? AND (expires_at IS NULL OR expires_at > ?) AND id IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ", ")))
                """, [.text(app.rawValue), .real(now.secondsSinceEpoch)] + chunk.map { .text($0.registrationID.rawValue) })
            for row in rows {
                if let id = row.text(0), let platform = row.text(1).flatMap(Platform.init(rawValue:)), let handle = row.text(2) {
                    handles[id] = DeviceHandle(uncheckedPlatform: platform, value: handle)
                }
            }
            start += chunk.count
        }
        return targets.compactMap { target in
            guard target.isRegistration else { return target }
            return handles[target.registrationID.rawValue].map { DispatchTarget(registrationID: target.registrationID, handle: $0) }
        }
    }

    static func notification(id: String, app: AppID, session: Database.Session) async throws -> OutboxNotification? {
        guard
            let row = try await session.rows(
                "SELECT \(OutboxRows.notificationColumns) FROM outbox_notifications WHERE app = ? AND id = ?",
                [.text(app.rawValue), .text(id)]
            ).first
        else { return nil }
        return try OutboxRows.notification(id: id, app: app, row: row)
    }

    static func record(id: String, app: AppID, session: Database.Session) async throws -> NotificationRecord? {
        let key: [SQLValue] = [.text(app.rawValue), .text(id)]
        var counts: [Platform: [Outcome: Int]] = [:]
        for row in try await session.rows("SELECT \(OutboxRows.countColumns) FROM outbox_counts WHERE app = ? AND notification_id = ?", key)
        {
            OutboxRows.addCount(row, to: &counts)
        }
        guard
            let row = try await session.rows("SELECT \(OutboxRows.recordColumns) FROM outbox_notifications WHERE app = ? AND id = ?", key)
                .first
        else { return nil }
        return OutboxRows.record(id: id, app: app, row: row, counts: counts)
    }

    /// One row per failed target (the last result wins), in id order.
    static func failureRows(_ failures: [TargetResult]) -> [[SQLValue]] {
        var latest: [RegistrationID: TargetResult] = [:]
        for failure in failures { latest[failure.registrationID] = failure }
        return latest.values.sorted { $0.registrationID < $1.registrationID }.map { failure in
            [
                .text(failure.registrationID.rawValue), .text(failure.platform.rawValue), .text(failure.maskedHandle),
                .text(failure.outcome.rawValue), failure.statusCode.map { .integer(Int64($0)) } ?? .null,
                failure.reason.map(SQLValue.text) ?? .null, .integer(Int64(failure.attempts)),
            ]
        }
    }

    /// Lists failed targets (``failureRows(_:)``), in chunks within every database's limit on bound values.
    static func upsertFailures(_ rows: [[SQLValue]], key: [SQLValue], session: Database.Session) async throws {
        var start = rows.startIndex
        while start < rows.endIndex {
            let chunk = rows[start..<min(start + 500, rows.endIndex)]
            _ = try await session.rows(
                """
                INSERT INTO outbox_failures (app, notification_id, registration_id, platform, handle, outcome, status, reason, attempts)
                VALUES \(Self.placeholders(rows: chunk.count, row: "(?, ?, ?, ?, ?, ?, CAST(? AS INTEGER), CAST(? AS TEXT), ?)"))
                ON CONFLICT (app, notification_id, registration_id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                    outcome = excluded.outcome, status = excluded.status, reason = excluded.reason, attempts = excluded.attempts
                """, chunk.flatMap { key + $0 })
            start += chunk.count
        }
    }

    static func placeholders(rows: Int, row: String) -> String {
        Array(repeating: row, count: rows).joined(separator: ", ")
    }
}
