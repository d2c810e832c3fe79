import PostgresNIO
import Pushgate
import PushgateSQL

/// The outbox in PostgreSQL. Several instances share it:
/// - a due notification is taken with `FOR UPDATE SKIP LOCKED` (instances never queue behind
///   each other's row locks, and two never take the same one);
/// - a page claim locks its notification's row for the claim's short transaction, so claims of
///   one notification are serialised while those of different notifications run side by side;
/// - an enqueue (and a cancel) notifies `pushgate_outbox` when it commits, waking idle instances.
extension PostgresStore: OutboxStore, DatabaseStore {
    public func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) {
        let payloads = OutboxPayloadCoding.encode(notification.payloads, delivery: notification.delivery)
        let logger = self.logger
        let recipient = notification.audience.storedRecipient
        let state = (lease == nil ? notification.initialState : .processing).rawValue
        let startedAt: Double? = lease == nil ? nil : notification.enqueuedAt.secondsSinceEpoch
        try await transaction { connection in
            try await connection.query(
                """
                INSERT INTO outbox_notifications (app, id, sender, state, platforms, audience, payloads, secure_id, enqueued_at,
                    deliver_at, started_at, lease_owner, lease_expires, recipient)
                VALUES (\(notification.app.rawValue), \(notification.id), \(notification.sender), \(state),
                    \(notification.selection.description), \(notification.audience.description), \(payloads), \(notification.secureID),
                    \(notification.enqueuedAt.secondsSinceEpoch), \(notification.deliverAt.secondsSinceEpoch), \(startedAt),
                    \(lease?.owner), \(lease?.until.secondsSinceEpoch ?? 0), \(recipient))
                """, logger: logger)
            // Idle instances look for work when this commits (a synchronous send is driven here).
            if lease == nil { try await connection.query("SELECT pg_notify(\(Self.outboxChannel), 'enqueued')", logger: logger) }
        }
    }

    public func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover? {
        let logger = self.logger
        let time = now.secondsSinceEpoch
        return try await transaction { connection in
            // Two index walks (a range of due times; the few being cancelled), each skipping rows
            // another instance is taking right now.
            var found: (id: String, expired: Bool)?
            for condition in ["deliver_at <= \(time)", "cancel_requested AND deliver_at > \(time)"] where found == nil {
                let rows = try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            WITH candidate AS (
                                SELECT app, id, lease_owner FROM outbox_notifications
                                WHERE app = $1 AND ended_at IS NULL AND \(condition) AND lease_expires <= $2
                                ORDER BY deliver_at LIMIT 1 FOR UPDATE SKIP LOCKED
                            )
                            UPDATE outbox_notifications n SET lease_owner = $3, lease_expires = $4, state = $5,
                                started_at = coalesce(n.started_at, $2)
                            FROM candidate c WHERE n.app = c.app AND n.id = c.id
                            RETURNING n.id, c.lease_owner
                            """,
                        binds: Self.bindings(
                            app.rawValue, time, lease.owner, lease.until.secondsSinceEpoch, NotificationState.processing.rawValue)),
                    logger: logger
                ).all((String, String?).self)
                if let row = rows.first { found = (row.0, row.1 != nil) }
            }
            guard let found else { return nil }
            // Read in the same transaction: a failure leaves the lease untaken.
            let notification: OutboxNotification?
            do {
                notification = try await Self.outboxNotification(id: found.id, app: app, connection: connection, logger: logger)
            } catch let error as StoreError where error.kind == .storage {
                // Unreadable (a corrupt row): ended, so that the notifications behind it go out.
                try await connection.query(
                    """
                    UPDATE outbox_notifications SET state = \(NotificationState.abandoned.rawValue), ended_at = \(time), lease_owner = NULL,
                        lease_expires = 0 WHERE app = \(app.rawValue) AND id = \(found.id)
                    """, logger: logger)
                return nil
            }
            return notification.map { OutboxTakeover(notification: $0, leaseExpired: found.expired) }
        }
    }

    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxClaim {
        let (size, logger, time) = (max(1, pageSize), self.logger, now.secondsSinceEpoch)
        let appText = app.rawValue
        return try await transaction { connection in
            guard
                let row = try await connection.query(
                    """
                    SELECT lease_owner, ended_at, cursor, exhausted, next_page, cancel_requested, platforms, audience, recipient
                    FROM outbox_notifications WHERE app = \(appText) AND id = \(notificationID) FOR UPDATE
                    """, logger: logger
                ).all((String?, Double?, String?, Bool, Int, Bool, String, String, String?).self).first,
                row.0 == lease.owner, row.1 == nil
            else { return .lost }
            let (cursor, exhausted, nextPage, cancelled) = (row.2 ?? "", row.3, row.4, row.5)
            let audience = try StoredAudience.decode(text: row.7, recipient: row.8)
            let selection: PlatformSelection
            do { selection = try PlatformSelection(parsing: row.6) } catch {
                throw StoreError(.storage, "a stored platform list is corrupt")
            }
            var query: TagQuery? = nil
            if audience.walksRegistrations {
                query = try await Self.plan(
                    audience.expression, platforms: selection, app: app, now: now, connection: connection, logger: logger)
            }
            func walk(_ after: RegistrationID?, _ limit: Int) async throws -> [DispatchTarget] {
                guard let query else { return audience.targets(after: after, limit: limit) { _, _, _ in [] } }
                return try await Self.targets(query, after: after?.rawValue ?? "", limit: limit, connection: connection, logger: logger)
            }

            // A page whose lease expired first: its driver died or was stopped. Never the
            // claimer's own (it is on the wire here; a renewal came late under load).
            if let expired = try await connection.query(
                """
                SELECT number, after_id, last_id, targets, attempt, claims FROM outbox_pages
                WHERE app = \(appText) AND notification_id = \(notificationID) AND NOT done AND lease_expires <= \(time)
                    AND lease_owner IS DISTINCT FROM \(lease.owner)
                LIMIT 1 FOR UPDATE
                """, logger: logger
            ).all((Int, String, String, String?, Int, Int).self).first {
                guard let last = try? RegistrationID(expired.2) else { throw StoreError(.storage, "a stored page range is corrupt") }
                try await connection.query(
                    """
                    UPDATE outbox_pages SET lease_owner = \(lease.owner), lease_expires = \(lease.until.secondsSinceEpoch), claims = claims + 1
                    WHERE app = \(appText) AND notification_id = \(notificationID) AND number = \(expired.0)
                    """, logger: logger)
                var targets: [DispatchTarget] = []
                if let stored = expired.3 {
                    // A retry page: its own targets, as their registrations are now (a topic or
                    // direct handles: as sent).
                    guard let decoded = OutboxRetry.decode(stored) else { throw StoreError(.storage, "a stored retry page is corrupt") }
                    targets =
                        audience.walksRegistrations
                        ? try await Self.currentTargets(decoded, app: app, now: now, connection: connection, logger: logger) : decoded
                } else {
                    // The range read again, in steps of the page size, until it passes `last`.
                    var position = expired.1.isEmpty ? nil : try? RegistrationID(expired.1)
                    while true {
                        let step = try await walk(position, size)
                        targets += step.prefix { $0.registrationID <= last }
                        guard step.count == size, let tail = step.last, tail.registrationID < last else { break }
                        position = tail.registrationID
                    }
                }
                return .page(
                    OutboxPage(number: expired.0, targets: targets, reclaimed: expired.5 > 0, cancelled: cancelled, attempt: expired.4))
            }
            if exhausted { return .exhausted }
            let targets = try await walk(cursor.isEmpty ? nil : try? RegistrationID(cursor), size)
            guard let last = targets.last else {
                try await connection.query(
                    "UPDATE outbox_notifications SET exhausted = true WHERE app = \(appText) AND id = \(notificationID)", logger: logger)
                return .exhausted
            }
            try await connection.query(
                """
                INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires)
                VALUES (\(appText), \(notificationID), \(nextPage), \(cursor), \(last.registrationID.rawValue), \(lease.owner),
                    \(lease.until.secondsSinceEpoch))
                """, logger: logger)
            try await connection.query(
                """
                UPDATE outbox_notifications SET cursor = \(last.registrationID.rawValue), next_page = next_page + 1,
                    exhausted = \(targets.count < size), claimed = claimed + \(targets.count)
                WHERE app = \(appText) AND id = \(notificationID)
                """, logger: logger)
            return .page(OutboxPage(number: nextPage, targets: targets, reclaimed: false, cancelled: cancelled))
        }
    }

    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?
    ) async throws(StoreError) -> Bool {
        let logger = self.logger
        let appText = app.rawValue
        // Counts in one order, so that two transactions adding to the same rows never deadlock.
        var platforms: [String] = []
        var outcomes: [String] = []
        var numbers: [Int] = []
        for (platform, byOutcome) in counts.sorted(by: { $0.key < $1.key }) {
            for (outcome, count) in byOutcome.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where count > 0 {
                platforms.append(platform.rawValue)
                outcomes.append(outcome.rawValue)
                numbers.append(count)
            }
        }
        // One row per target (the last result wins, as SQLite's INSERT OR REPLACE), in id order.
        var latest: [RegistrationID: TargetResult] = [:]
        for failure in failures { latest[failure.registrationID] = failure }
        let failures = latest.values.sorted { $0.registrationID < $1.registrationID }
        return try await transaction { [platforms, outcomes, numbers] connection in
            // The notification's row first, as every other outbox transaction locks it: one lock order.
            _ = try await connection.query(
                "SELECT 1 FROM outbox_notifications WHERE app = \(appText) AND id = \(notificationID) FOR UPDATE", logger: logger
            ).collect()
            let marked = try await connection.query(
                """
                UPDATE outbox_pages SET done = true
                WHERE app = \(appText) AND notification_id = \(notificationID) AND number = \(number) AND NOT done RETURNING 1
                """, logger: logger
            ).collect()
            guard !marked.isEmpty else { return false }
            if let retry, let last = retry.targets.last {
                // A page of its own, nobody's until it is due.
                try await connection.query(
                    """
                    WITH numbered AS (
                        UPDATE outbox_notifications SET next_page = next_page + 1 WHERE app = \(appText) AND id = \(notificationID)
                        RETURNING next_page - 1 AS number, cancel_requested
                    )
                    INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires, claims, targets,
                        attempt)
                    SELECT \(appText), \(notificationID), number, '', \(last.registrationID.rawValue), NULL,
                        CASE WHEN cancel_requested THEN 0 ELSE \(retry.due.secondsSinceEpoch) END, 0, \(OutboxRetry.encode(retry.targets)),
                        \(retry.attempt)
                    FROM numbered
                    """, logger: logger)
            }
            if !numbers.isEmpty {
                try await connection.query(
                    """
                    INSERT INTO outbox_counts (app, notification_id, platform, outcome, count)
                    SELECT \(appText), \(notificationID), c.platform, c.outcome, c.count
                    FROM unnest(\(platforms)::text[], \(outcomes)::text[], \(numbers)::bigint[]) AS c(platform, outcome, count)
                    ON CONFLICT (app, notification_id, platform, outcome) DO UPDATE SET count = outbox_counts.count + excluded.count
                    """, logger: logger)
            }
            if !failures.isEmpty {
                try await connection.query(
                    """
                    INSERT INTO outbox_failures (app, notification_id, registration_id, platform, handle, outcome, status, reason, attempts)
                    SELECT \(appText), \(notificationID), f.id, f.platform, f.handle, f.outcome, CASE WHEN f.has_status THEN f.status END,
                        CASE WHEN f.has_reason THEN f.reason END, f.attempts
                    FROM unnest(\(failures.map(\.registrationID.rawValue))::text[], \(failures.map(\.platform.rawValue))::text[],
                        \(failures.map(\.maskedHandle))::text[], \(failures.map(\.outcome.rawValue))::text[],
                        \(failures.map { $0.statusCode ?? 0 })::integer[], \(failures.map { $0.statusCode != nil })::boolean[],
                        \(failures.map { $0.reason ?? "" })::text[], \(failures.map { $0.reason != nil })::boolean[],
                        \(failures.map(\.attempts))::integer[])
                        AS f(id, platform, handle, outcome, status, has_status, reason, has_reason, attempts)
                    ON CONFLICT (app, notification_id, registration_id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                        outcome = excluded.outcome, status = excluded.status, reason = excluded.reason, attempts = excluded.attempts
                    """, logger: logger)
            }
            return true
        }
    }

    public func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        let logger = self.logger
        let appText = app.rawValue
        return try await transaction { connection in
            guard
                let row = try await connection.query(
                    "SELECT exhausted, lease_owner FROM outbox_notifications WHERE app = \(appText) AND id = \(notificationID) FOR UPDATE",
                    logger: logger
                ).all((Bool, String?).self).first
            else { return nil }
            guard var record = try await Self.record(id: notificationID, app: app, connection: connection, logger: logger) else {
                return nil
            }
            if record.state.isFinal { return record }
            guard row.0, row.1 == owner else { return nil }
            let open = try await connection.query(
                "SELECT 1 FROM outbox_pages WHERE app = \(appText) AND notification_id = \(notificationID) AND NOT done LIMIT 1",
                logger: logger
            ).collect()
            if !open.isEmpty { return nil }
            record.state = NotificationRecord.finalState(
                counts: record.counts, selection: record.selection, cancelled: record.cancelRequested)
            record.endedAt = now
            try await connection.query(
                """
                UPDATE outbox_notifications SET state = \(record.state.rawValue), ended_at = \(now.secondsSinceEpoch), lease_owner = NULL,
                    lease_expires = 0 WHERE app = \(appText) AND id = \(notificationID)
                """, logger: logger)
            try await connection.query(
                "DELETE FROM outbox_pages WHERE app = \(appText) AND notification_id = \(notificationID)", logger: logger)
            return record
        }
    }

    public func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> Timestamp? {
        let (logger, appText, time) = (self.logger, app.rawValue, now.secondsSinceEpoch)
        return try await transaction { connection in
            // Being cancelled: its retries are due at once, nothing is parked.
            guard
                let row = try await connection.query(
                    """
                    SELECT exhausted, lease_owner, cancel_requested FROM outbox_notifications
                    WHERE app = \(appText) AND id = \(notificationID) AND ended_at IS NULL FOR UPDATE
                    """, logger: logger
                ).all((Bool, String?, Bool).self).first, row.0, row.1 == owner, !row.2
            else { return nil }
            // Every open page a retry not yet due: nobody's, its lease in the future.
            guard
                let open = try await connection.query(
                    """
                    SELECT count(*), count(*) FILTER (WHERE lease_owner IS NOT NULL OR targets IS NULL OR lease_expires <= \(time)),
                        min(lease_expires)
                    FROM outbox_pages WHERE app = \(appText) AND notification_id = \(notificationID) AND NOT done
                    """, logger: logger
                ).all((Int, Int, Double?).self).first, open.0 > 0, open.1 == 0, let due = open.2
            else { return nil }
            try await connection.query(
                "UPDATE outbox_notifications SET lease_owner = NULL, lease_expires = \(due) WHERE app = \(appText) AND id = \(notificationID)",
                logger: logger)
            return Timestamp(secondsSinceEpoch: due)
        }
    }

    public func renewLeases(owner: String, until: Timestamp) async throws(StoreError) {
        let logger = self.logger
        try await transaction { connection in
            try await connection.query(
                "UPDATE outbox_notifications SET lease_expires = \(until.secondsSinceEpoch) WHERE lease_owner = \(owner) AND ended_at IS NULL",
                logger: logger)
            try await connection.query(
                "UPDATE outbox_pages SET lease_expires = \(until.secondsSinceEpoch) WHERE lease_owner = \(owner) AND NOT done",
                logger: logger)
        }
    }

    public func releaseLeases(owner: String, notificationID: String?) async throws(StoreError) {
        let logger = self.logger
        let id = notificationID ?? ""
        try await transaction { connection in
            try await connection.query(
                """
                UPDATE outbox_notifications SET lease_owner = NULL, lease_expires = 0
                WHERE lease_owner = \(owner) AND ended_at IS NULL AND (\(id) = '' OR id = \(id))
                """, logger: logger)
            try await connection.query(
                """
                UPDATE outbox_pages SET lease_owner = NULL, lease_expires = 0
                WHERE lease_owner = \(owner) AND NOT done AND (\(id) = '' OR notification_id = \(id))
                """, logger: logger)
            // Released work is due at once: another instance may take it.
            try await connection.query("SELECT pg_notify(\(Self.outboxChannel), 'released')", logger: logger)
        }
    }

    public func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        let (logger, appText) = (self.logger, app.rawValue)
        return try await transaction { connection in
            let locked = try await connection.query(
                "SELECT 1 FROM outbox_notifications WHERE app = \(appText) AND id = \(notificationID) FOR UPDATE", logger: logger
            ).collect()
            guard !locked.isEmpty, let record = try await Self.record(id: notificationID, app: app, connection: connection, logger: logger)
            else { return nil }
            guard !record.state.isFinal else { return record }
            // Parked work (retries not yet due) is due at once: its targets are counted Cancelled.
            try await connection.query(
                """
                UPDATE outbox_notifications SET cancel_requested = true,
                    lease_expires = CASE WHEN lease_owner IS NULL THEN 0 ELSE lease_expires END
                WHERE app = \(appText) AND id = \(notificationID)
                """, logger: logger)
            try await connection.query(
                """
                UPDATE outbox_pages SET lease_expires = 0
                WHERE app = \(appText) AND notification_id = \(notificationID) AND NOT done AND lease_owner IS NULL
                """, logger: logger)
            try await connection.query("SELECT pg_notify(\(Self.outboxChannel), 'cancelled')", logger: logger)
            return record
        }
    }

    public func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord? {
        let logger = self.logger
        return try await perform { connection in try await Self.record(id: id, app: app, connection: connection, logger: logger) }
    }

    public func failedTargets(
        notificationID: String, app: AppID, after: RegistrationID?, limit: Int
    ) async throws(StoreError) -> [TargetResult] {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                """
                SELECT \(unescaped: OutboxRows.failureColumns) FROM outbox_failures
                WHERE app = \(app.rawValue) AND notification_id = \(notificationID) AND registration_id > \(after?.rawValue ?? "")
                ORDER BY registration_id LIMIT \(max(0, limit))
                """, logger: logger
            ).rows().compactMap(OutboxRows.failure)
        }
    }

    public func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord] {
        let logger = self.logger
        return try await perform { connection in
            let ids =
                if let sender {
                    try await connection.query(
                        """
                        SELECT id FROM outbox_notifications WHERE app = \(app.rawValue) AND sender = \(sender)
                        ORDER BY enqueued_at DESC, id LIMIT \(max(0, limit))
                        """, logger: logger
                    ).all(String.self)
                } else {
                    try await connection.query(
                        "SELECT id FROM outbox_notifications WHERE app = \(app.rawValue) ORDER BY enqueued_at DESC, id LIMIT \(max(0, limit))",
                        logger: logger
                    ).all(String.self)
                }
            var records: [NotificationRecord] = []
            for id in ids {
                if let record = try await Self.record(id: id, app: app, connection: connection, logger: logger) { records.append(record) }
            }
            return records
        }
    }

    public func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int {
        let logger = self.logger
        return try await transaction { connection in
            let keys = try await connection.query(
                """
                SELECT app, id FROM outbox_notifications WHERE ended_at IS NOT NULL AND ended_at < \(endedBefore.secondsSinceEpoch)
                LIMIT 100 FOR UPDATE SKIP LOCKED
                """, logger: logger
            ).all((String, String).self)
            for (app, id) in keys {
                try await connection.query("DELETE FROM outbox_failures WHERE app = \(app) AND notification_id = \(id)", logger: logger)
                try await connection.query("DELETE FROM outbox_counts WHERE app = \(app) AND notification_id = \(id)", logger: logger)
                try await connection.query("DELETE FROM outbox_pages WHERE app = \(app) AND notification_id = \(id)", logger: logger)
                try await connection.query("DELETE FROM outbox_notifications WHERE app = \(app) AND id = \(id)", logger: logger)
            }
            return keys.count
        }
    }

    public func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth {
        let (logger, time) = (self.logger, now.secondsSinceEpoch)
        return try await perform { connection in
            guard
                let row = try await connection.query(
                    """
                    WITH pending AS (
                        -- Parked (only retries of throttled targets left, not yet due) is not due.
                        SELECT deliver_at <= \(time) AND NOT (lease_owner IS NULL AND lease_expires > \(time)) AS due, cancel_requested,
                            deliver_at
                        FROM outbox_notifications WHERE ended_at IS NULL
                    )
                    SELECT count(*), count(*) FILTER (WHERE due OR cancel_requested), min(deliver_at) FILTER (WHERE due) FROM pending
                    """, logger: logger
                ).all((Int, Int, Double?).self).first
            else { return OutboxDepth(pending: 0, due: 0, oldestDue: nil) }
            return OutboxDepth(pending: row.0, due: row.1, oldestDue: row.2.map(Timestamp.init(secondsSinceEpoch:)))
        }
    }

    // MARK: Reading

    /// A retry page's targets as they are now: each registration's current handle, the deleted
    /// and expired ones left out.
    static func currentTargets(
        _ targets: [DispatchTarget], app: AppID, now: Timestamp, connection: PostgresConnection, logger: Logger
    ) async throws -> [DispatchTarget] {
        let ids = targets.map(\.registrationID.rawValue)
        var current: [String: DeviceHandle] = [:]
        if !ids.isEmpty {
            for (id, platformText, handle) in try await connection.query(
                """
                SELECT id, platform, handle FROM registrations
                WHERE app = \(app.rawValue) AND id = ANY(\(ids)) AND (expires_at IS NULL OR expires_at > \(now.secondsSinceEpoch))
                """, logger: logger
            ).all((String, String, String).self) {
                if let platform = Platform(rawValue: platformText) {
                    current[id] = DeviceHandle(uncheckedPlatform: platform, value: handle)
                }
            }
        }
        return targets.compactMap { target in
            current[target.registrationID.rawValue].map { DispatchTarget(registrationID: target.registrationID, handle: $0) }
        }
    }

    static func outboxNotification(
        id: String, app: AppID, connection: PostgresConnection, logger: Logger
    ) async throws
        -> OutboxNotification?
    {
        guard
            let row = try await connection.query(
                "SELECT \(unescaped: OutboxRows.notificationColumns) FROM outbox_notifications WHERE app = \(app.rawValue) AND id = \(id)",
                logger: logger
            ).rows().first
        else { return nil }
        return try OutboxRows.notification(id: id, app: app, row: row)
    }

    static func record(id: String, app: AppID, connection: PostgresConnection, logger: Logger) async throws -> NotificationRecord? {
        var counts: [Platform: [Outcome: Int]] = [:]
        for row in try await connection.query(
            "SELECT \(unescaped: OutboxRows.countColumns) FROM outbox_counts WHERE app = \(app.rawValue) AND notification_id = \(id)",
            logger: logger
        ).rows() {
            OutboxRows.addCount(row, to: &counts)
        }
        guard
            let row = try await connection.query(
                "SELECT \(unescaped: OutboxRows.recordColumns) FROM outbox_notifications WHERE app = \(app.rawValue) AND id = \(id)",
                logger: logger
            ).rows().first
        else { return nil }
        return OutboxRows.record(id: id, app: app, row: row, counts: counts)
    }

    /// How many pages are claimed and not yet recorded (each at most a page size of targets): a
    /// dead driver's in-flight window, for tests.
    package func unfinishedPages(notificationID: String, app: AppID) async throws(StoreError) -> Int {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                "SELECT count(*) FROM outbox_pages WHERE app = \(app.rawValue) AND notification_id = \(notificationID) AND NOT done",
                logger: logger
            ).all(Int.self).first ?? 0
        }
    }

    static func bindings(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values { bindings.append(value) }
        return bindings
    }
}
