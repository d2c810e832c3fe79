import Pushgate
import PushgateSQL

/// The outbox in the same SQLite file as the registrations (schema v4, v5): a page claim reads the
/// audience and records the page in one transaction, so a claim is never half made.
extension SQLiteStore: OutboxStore {
    public func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) {
        let payloads = OutboxPayloadCoding.encode(notification.payloads, delivery: notification.delivery)
        try await run { connection throws(StoreError) in
            try connection.prepare(
                """
                INSERT INTO outbox_notifications (app, id, sender, state, platforms, audience, payloads, secure_id, enqueued_at,
                    deliver_at, started_at, lease_owner, lease_expires, recipient)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            ).bind([
                .text(notification.app.rawValue), .text(notification.id), .text(notification.sender),
                .text((lease == nil ? notification.initialState : .processing).rawValue), .text(notification.selection.description),
                .text(notification.audience.description), .text(payloads), notification.secureID.map(SQLValue.text) ?? .null,
                .real(notification.enqueuedAt.secondsSinceEpoch), .real(notification.deliverAt.secondsSinceEpoch),
                lease == nil ? .null : .real(notification.enqueuedAt.secondsSinceEpoch), lease.map { .text($0.owner) } ?? .null,
                .real(lease?.until.secondsSinceEpoch ?? 0),
                notification.audience.storedRecipient.map(SQLValue.text) ?? .null,
            ]).run()
        }
    }

    public func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover? {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> OutboxTakeover? in
                // Two index walks (a range of due times; the few being cancelled), not one OR that
                // would read every pending row.
                let values: [SQLValue] = [.text(app.rawValue), .real(now.secondsSinceEpoch), .real(now.secondsSinceEpoch)]
                var found: (id: String, expired: Bool)?
                for sql in [
                    """
                    SELECT id, lease_owner FROM outbox_notifications
                    WHERE app = ? AND ended_at IS NULL AND deliver_at <= ? AND lease_expires <= ? ORDER BY deliver_at LIMIT 1
                    """,
                    """
                    SELECT id, lease_owner FROM outbox_notifications
                    WHERE app = ? AND ended_at IS NULL AND cancel_requested = 1 AND deliver_at > ? AND lease_expires <= ? LIMIT 1
                    """,
                ] where found == nil {
                    let due = try connection.prepare(sql).bind(values)
                    if try due.step(), let id = due.text(0) { found = (id, due.text(1) != nil) }
                }
                guard let (id, expired) = found else { return nil }
                try connection.prepare(
                    """
                    UPDATE outbox_notifications SET lease_owner = ?, lease_expires = ?, state = ?, started_at = coalesce(started_at, ?)
                    WHERE app = ? AND id = ?
                    """
                ).bind([
                    .text(lease.owner), .real(lease.until.secondsSinceEpoch), .text(NotificationState.processing.rawValue),
                    .real(now.secondsSinceEpoch), .text(app.rawValue), .text(id),
                ]).run()
                let notification: OutboxNotification?
                do {
                    notification = try Self.outboxNotification(id: id, app: app, connection: connection)
                } catch {
                    // Unreadable (a corrupt row): ended, so that the notifications behind it go out.
                    try connection.prepare(
                        "UPDATE outbox_notifications SET state = ?, ended_at = ?, lease_owner = NULL, lease_expires = 0 WHERE app = ? AND id = ?"
                    ).bind([.text(NotificationState.abandoned.rawValue), .real(now.secondsSinceEpoch), .text(app.rawValue), .text(id)])
                        .run()
                    return nil
                }
                guard let notification else { return nil }
                return OutboxTakeover(notification: notification, leaseExpired: expired)
            }
        }
    }

    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxClaim {
        let size = max(1, pageSize)
        return try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> OutboxClaim in
                let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
                let row = try connection.prepare(
                    """
                    SELECT lease_owner, ended_at, cursor, exhausted, next_page, cancel_requested, platforms, audience, recipient
                    FROM outbox_notifications WHERE app = ? AND id = ?
                    """
                ).bind(key)
                guard try row.step(), row.text(0) == lease.owner, row.double(1) == nil else { return .lost }
                let cursor = row.text(2) ?? ""
                let exhausted = row.int64(3) != 0
                let nextPage = Int(row.int64(4))
                let cancelled = row.int64(5) != 0
                let platforms = row.text(6) ?? ""
                let audience = try StoredAudience.decode(text: row.text(7) ?? "", recipient: row.text(8))
                let query = try Self.audienceWalk(platforms: platforms, audience: audience, app: app, now: now, connection: connection)

                // A page whose lease expired first: its driver died or was stopped. Never the
                // claimer's own (it is on the wire here; a renewal came late under load).
                let expired = try connection.prepare(
                    """
                    SELECT number, after_id, last_id, targets, attempt, claims FROM outbox_pages
                    WHERE app = ? AND notification_id = ? AND done = 0 AND lease_expires <= ? AND lease_owner IS NOT ? LIMIT 1
                    """
                ).bind(key + [.real(now.secondsSinceEpoch), .text(lease.owner)])
                if try expired.step() {
                    let number = Int(expired.int64(0))
                    let after = expired.text(1).flatMap { try? RegistrationID($0) }
                    guard let last = expired.text(2).flatMap({ try? RegistrationID($0) }) else {
                        throw StoreError(.storage, "a stored page range is corrupt")
                    }
                    try connection.prepare(
                        """
                        UPDATE outbox_pages SET lease_owner = ?, lease_expires = ?, claims = claims + 1
                        WHERE app = ? AND notification_id = ? AND number = ?
                        """
                    ).bind([.text(lease.owner), .real(lease.until.secondsSinceEpoch)] + key + [.integer(Int64(number))]).run()
                    let targets: [DispatchTarget]
                    if let stored = expired.text(3) {
                        // A retry page: its own targets, as their registrations are now (a
                        // topic or direct handles: as sent).
                        guard let decoded = OutboxRetry.decode(stored) else { throw StoreError(.storage, "a stored retry page is corrupt") }
                        targets =
                            audience.walksRegistrations
                            ? try Self.currentTargets(decoded, app: app, now: now, connection: connection) : decoded
                    } else {
                        targets = try OutboxPage.targets(after: after, through: last, size: size) { (position, limit) throws(StoreError) in
                            try query(position, limit)
                        }
                    }
                    return .page(
                        OutboxPage(
                            number: number, targets: targets, reclaimed: expired.int64(5) > 0, cancelled: cancelled,
                            attempt: Int(expired.int64(4))))
                }
                if exhausted { return .exhausted }
                let targets = try query(cursor.isEmpty ? nil : try? RegistrationID(cursor), size)
                guard let last = targets.last else {
                    try connection.prepare("UPDATE outbox_notifications SET exhausted = 1 WHERE app = ? AND id = ?").bind(key).run()
                    return .exhausted
                }
                try connection.prepare(
                    "INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires) VALUES (?, ?, ?, ?, ?, ?, ?)"
                ).bind(
                    key + [
                        .integer(Int64(nextPage)), .text(cursor), .text(last.registrationID.rawValue), .text(lease.owner),
                        .real(lease.until.secondsSinceEpoch),
                    ]
                ).run()
                try connection.prepare(
                    """
                    UPDATE outbox_notifications SET cursor = ?, next_page = next_page + 1, exhausted = ?, claimed = claimed + ?
                    WHERE app = ? AND id = ?
                    """
                ).bind([.text(last.registrationID.rawValue), .integer(targets.count < size ? 1 : 0), .integer(Int64(targets.count))] + key)
                    .run()
                return .page(OutboxPage(number: nextPage, targets: targets, reclaimed: false, cancelled: cancelled))
            }
        }
    }

    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?
    ) async throws(StoreError) -> Bool {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
                try connection.prepare("UPDATE outbox_pages SET done = 1 WHERE app = ? AND notification_id = ? AND number = ? AND done = 0")
                    .bind(key + [.integer(Int64(number))]).run()
                guard connection.changes == 1 else { return false }
                if let retry, let last = retry.targets.last {
                    // A page of its own, nobody's until it is due.
                    try connection.prepare(
                        """
                        INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires, claims,
                            targets, attempt)
                        SELECT app, id, next_page, '', ?, NULL, CASE WHEN cancel_requested = 1 THEN 0 ELSE ? END, 0, ?, ?
                        FROM outbox_notifications WHERE app = ? AND id = ?
                        """
                    ).bind(
                        [
                            .text(last.registrationID.rawValue), .real(retry.due.secondsSinceEpoch),
                            .text(OutboxRetry.encode(retry.targets)),
                            .integer(Int64(retry.attempt)),
                        ] + key
                    ).run()
                    try connection.prepare("UPDATE outbox_notifications SET next_page = next_page + 1 WHERE app = ? AND id = ?").bind(key)
                        .run()
                }
                for (platform, outcomes) in counts {
                    for (outcome, count) in outcomes where count > 0 {
                        try connection.prepare(
                            """
                            INSERT INTO outbox_counts (app, notification_id, platform, outcome, count) VALUES (?, ?, ?, ?, ?)
                            ON CONFLICT (app, notification_id, platform, outcome) DO UPDATE SET count = count + excluded.count
                            """
                        ).bind(key + [.text(platform.rawValue), .text(outcome.rawValue), .integer(Int64(count))]).run()
                    }
                }
                for failure in failures {
                    try connection.prepare(
                        """
                        INSERT OR REPLACE INTO outbox_failures (app, notification_id, registration_id, platform, handle, outcome, status,
                            reason, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """
                    ).bind(
                        key + [
                            .text(failure.registrationID.rawValue), .text(failure.platform.rawValue), .text(failure.maskedHandle),
                            .text(failure.outcome.rawValue), failure.statusCode.map { .integer(Int64($0)) } ?? .null,
                            failure.reason.map(SQLValue.text) ?? .null, .integer(Int64(failure.attempts)),
                        ]
                    ).run()
                }
                return true
            }
        }
    }

    public func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> NotificationRecord? in
                let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
                guard var record = try Self.record(id: notificationID, app: app, connection: connection) else { return nil }
                if record.state.isFinal { return record }
                let row = try connection.prepare("SELECT exhausted, lease_owner FROM outbox_notifications WHERE app = ? AND id = ?").bind(
                    key)
                guard try row.step(), row.int64(0) != 0, row.text(1) == owner else { return nil }
                let open = try connection.prepare("SELECT 1 FROM outbox_pages WHERE app = ? AND notification_id = ? AND done = 0 LIMIT 1")
                    .bind(key)
                if try open.step() { return nil }
                record.state = NotificationRecord.finalState(
                    counts: record.counts, selection: record.selection, cancelled: record.cancelRequested)
                record.endedAt = now
                try connection.prepare(
                    "UPDATE outbox_notifications SET state = ?, ended_at = ?, lease_owner = NULL, lease_expires = 0 WHERE app = ? AND id = ?"
                ).bind([.text(record.state.rawValue), .real(now.secondsSinceEpoch)] + key).run()
                try connection.prepare("DELETE FROM outbox_pages WHERE app = ? AND notification_id = ?").bind(key).run()
                return record
            }
        }
    }

    public func parkNotification(
        notificationID: String, app: AppID, owner: String, now: Timestamp
    ) async throws(StoreError) -> Timestamp? {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Timestamp? in
                let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
                let row = try connection.prepare(
                    "SELECT exhausted, lease_owner, cancel_requested FROM outbox_notifications WHERE app = ? AND id = ? AND ended_at IS NULL"
                ).bind(key)
                // Being cancelled: its retries are due at once, nothing is parked.
                guard try row.step(), row.int64(0) != 0, row.text(1) == owner, row.int64(2) == 0 else { return nil }
                // Every open page a retry not yet due: nobody's, its lease in the future.
                let open = try connection.prepare(
                    """
                    SELECT count(*), coalesce(sum(lease_owner IS NOT NULL OR targets IS NULL OR lease_expires <= ?), 0), min(lease_expires)
                    FROM outbox_pages WHERE app = ? AND notification_id = ? AND done = 0
                    """
                ).bind([.real(now.secondsSinceEpoch)] + key)
                guard try open.step(), open.int64(0) > 0, open.int64(1) == 0, let due = open.double(2) else { return nil }
                try connection.prepare("UPDATE outbox_notifications SET lease_owner = NULL, lease_expires = ? WHERE app = ? AND id = ?")
                    .bind([.real(due)] + key).run()
                return Timestamp(secondsSinceEpoch: due)
            }
        }
    }

    public func renewLeases(owner: String, until: Timestamp) async throws(StoreError) {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                let values: [SQLValue] = [.real(until.secondsSinceEpoch), .text(owner)]
                try connection.prepare("UPDATE outbox_notifications SET lease_expires = ? WHERE lease_owner = ? AND ended_at IS NULL")
                    .bind(values).run()
                try connection.prepare("UPDATE outbox_pages SET lease_expires = ? WHERE lease_owner = ? AND done = 0").bind(values).run()
            }
        }
    }

    public func releaseLeases(owner: String, notificationID: String?) async throws(StoreError) {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                // An empty id matches every notification.
                let values: [SQLValue] = [.text(owner), .text(notificationID ?? ""), .text(notificationID ?? "")]
                try connection.prepare(
                    """
                    UPDATE outbox_notifications SET lease_owner = NULL, lease_expires = 0
                    WHERE lease_owner = ? AND ended_at IS NULL AND (? = '' OR id = ?)
                    """
                ).bind(values).run()
                try connection.prepare(
                    """
                    UPDATE outbox_pages SET lease_owner = NULL, lease_expires = 0
                    WHERE lease_owner = ? AND done = 0 AND (? = '' OR notification_id = ?)
                    """
                ).bind(values).run()
            }
        }
    }

    public func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> NotificationRecord? in
                guard let record = try Self.record(id: notificationID, app: app, connection: connection) else { return nil }
                guard !record.state.isFinal else { return record }
                let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
                // Parked work (retries not yet due) is due at once: its targets are counted Cancelled.
                try connection.prepare(
                    """
                    UPDATE outbox_notifications SET cancel_requested = 1,
                        lease_expires = CASE WHEN lease_owner IS NULL THEN 0 ELSE lease_expires END
                    WHERE app = ? AND id = ?
                    """
                ).bind(key).run()
                try connection.prepare(
                    "UPDATE outbox_pages SET lease_expires = 0 WHERE app = ? AND notification_id = ? AND done = 0 AND lease_owner IS NULL"
                ).bind(key).run()
                return record
            }
        }
    }

    public func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord? {
        try await run { connection throws(StoreError) in try Self.record(id: id, app: app, connection: connection) }
    }

    public func failedTargets(
        notificationID: String, app: AppID, after: RegistrationID?, limit: Int
    ) async throws(StoreError) -> [TargetResult] {
        try await run { connection throws(StoreError) in
            let statement = try connection.prepare(
                """
                SELECT \(OutboxRows.failureColumns) FROM outbox_failures
                WHERE app = ? AND notification_id = ? AND registration_id > ? ORDER BY registration_id LIMIT ?
                """
            ).bind([.text(app.rawValue), .text(notificationID), .text(after?.rawValue ?? ""), .integer(Int64(max(0, limit)))])
            var results: [TargetResult] = []
            while try statement.step() { OutboxRows.failure(SQLiteRow(statement: statement)).map { results.append($0) } }
            return results
        }
    }

    public func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord] {
        try await run { connection throws(StoreError) in
            let statement =
                if let sender {
                    try connection.prepare(
                        "SELECT id FROM outbox_notifications WHERE app = ? AND sender = ? ORDER BY enqueued_at DESC, id LIMIT ?"
                    ).bind([.text(app.rawValue), .text(sender), .integer(Int64(max(0, limit)))])
                } else {
                    try connection.prepare("SELECT id FROM outbox_notifications WHERE app = ? ORDER BY enqueued_at DESC, id LIMIT ?")
                        .bind([.text(app.rawValue), .integer(Int64(max(0, limit)))])
                }
            var ids: [String] = []
            while try statement.step() { if let id = statement.text(0) { ids.append(id) } }
            var records: [NotificationRecord] = []
            for id in ids { if let record = try Self.record(id: id, app: app, connection: connection) { records.append(record) } }
            return records
        }
    }

    public func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Int in
                let statement = try connection.prepare(
                    "SELECT app, id FROM outbox_notifications WHERE ended_at IS NOT NULL AND ended_at < ? LIMIT 100"
                ).bind([.real(endedBefore.secondsSinceEpoch)])
                var keys: [[SQLValue]] = []
                while try statement.step() { keys.append([.text(statement.text(0) ?? ""), .text(statement.text(1) ?? "")]) }
                for key in keys {
                    try connection.prepare("DELETE FROM outbox_failures WHERE app = ? AND notification_id = ?").bind(key).run()
                    try connection.prepare("DELETE FROM outbox_counts WHERE app = ? AND notification_id = ?").bind(key).run()
                    try connection.prepare("DELETE FROM outbox_pages WHERE app = ? AND notification_id = ?").bind(key).run()
                    try connection.prepare("DELETE FROM outbox_notifications WHERE app = ? AND id = ?").bind(key).run()
                }
                return keys.count
            }
        }
    }

    public func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth {
        try await run { connection throws(StoreError) in
            let statement = try connection.prepare(
                """
                WITH pending AS (
                    -- Parked (only retries of throttled targets left, not yet due) is not due.
                    SELECT deliver_at <= ? AND NOT (lease_owner IS NULL AND lease_expires > ?) AS due, cancel_requested, deliver_at
                    FROM outbox_notifications WHERE ended_at IS NULL
                )
                SELECT count(*), coalesce(sum(due OR cancel_requested = 1), 0), min(CASE WHEN due THEN deliver_at END) FROM pending
                """
            ).bind([.real(now.secondsSinceEpoch), .real(now.secondsSinceEpoch)])
            guard try statement.step() else { return OutboxDepth(pending: 0, due: 0, oldestDue: nil) }
            return OutboxDepth(
                pending: Int(statement.int64(0)), due: Int(statement.int64(1)),
                oldestDue: statement.double(2).map(Timestamp.init(secondsSinceEpoch:)))
        }
    }

    // MARK: Reading

    /// The walk of a stored audience: its targets after an id, at most a limit.
    static func audienceWalk(
        platforms: String, audience: Audience, app: AppID, now: Timestamp, connection: SQLiteConnection
    ) throws(StoreError) -> (RegistrationID?, Int) throws(StoreError) -> [DispatchTarget] {
        let selection: PlatformSelection
        do { selection = try PlatformSelection(parsing: platforms) } catch {
            throw StoreError(.storage, "a stored platform list is corrupt")
        }
        let query =
            audience.walksRegistrations
            ? try TagQuery(expression: audience.expression, platforms: selection, app: app, now: now, connection: connection) : nil
        return { (after, limit) throws(StoreError) in
            try audience.targets(after: after, limit: limit) { (_, after, limit) throws(StoreError) in
                try query?.targets(after: after?.rawValue ?? "", limit: limit, connection: connection) ?? []
            }
        }
    }

    /// A retry page's targets as they are now: each registration's current handle, the deleted
    /// and expired ones left out.
    static func currentTargets(
        _ targets: [DispatchTarget], app: AppID, now: Timestamp, connection: SQLiteConnection
    ) throws(StoreError) -> [DispatchTarget] {
        var current: [DispatchTarget] = []
        for target in targets {
            let row = try connection.prepare(
                "SELECT platform, handle FROM registrations WHERE app = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)"
            ).bind([.text(app.rawValue), .text(target.registrationID.rawValue), .real(now.secondsSinceEpoch)])
            guard try row.step(), let platform = row.text(0).flatMap(Platform.init(rawValue:)), let handle = row.text(1) else { continue }
            current.append(
                DispatchTarget(registrationID: target.registrationID, handle: DeviceHandle(uncheckedPlatform: platform, value: handle)))
        }
        return current
    }

    static func outboxNotification(id: String, app: AppID, connection: SQLiteConnection) throws(StoreError) -> OutboxNotification? {
        let row = try connection.prepare("SELECT \(OutboxRows.notificationColumns) FROM outbox_notifications WHERE app = ? AND id = ?")
            .bind([.text(app.rawValue), .text(id)])
        guard try row.step() else { return nil }
        return try OutboxRows.notification(id: id, app: app, row: SQLiteRow(statement: row))
    }

    static func record(id: String, app: AppID, connection: SQLiteConnection) throws(StoreError) -> NotificationRecord? {
        let key: [SQLValue] = [.text(app.rawValue), .text(id)]
        let counts = try connection.prepare("SELECT \(OutboxRows.countColumns) FROM outbox_counts WHERE app = ? AND notification_id = ?")
            .bind(key)
        var byPlatform: [Platform: [Outcome: Int]] = [:]
        while try counts.step() { OutboxRows.addCount(SQLiteRow(statement: counts), to: &byPlatform) }
        let row = try connection.prepare("SELECT \(OutboxRows.recordColumns) FROM outbox_notifications WHERE app = ? AND id = ?").bind(key)
        guard try row.step() else { return nil }
        return OutboxRows.record(id: id, app: app, row: SQLiteRow(statement: row), counts: byPlatform)
    }
}
