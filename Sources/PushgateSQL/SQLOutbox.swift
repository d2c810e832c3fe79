import Pushgate

/// What the outbox needs of a database, inside one transaction: statements with `?` placeholders,
/// the audience walk in the database's own tag-query form, and a wake-up for the other instances.
package protocol SQLSession {
    associatedtype Row: SQLRowReading
    /// Runs `sql` with `values` bound to its `?` placeholders, in order; its rows.
    func rows(_ sql: String, _ values: [SQLValue]) async throws -> [Row]
    /// The query of `audience` (a walk of registrations) on `selection`, planned on this database
    /// (an `&&` weighs its sides' tags).
    func plan(_ audience: Audience, selection: PlatformSelection, app: AppID, now: Timestamp) async throws -> TagQuery
    /// The delivery targets of a planned audience after `after`, at most `limit`, in id order.
    func targets(_ query: TagQuery, after: RegistrationID?, limit: Int) async throws -> [DispatchTarget]
    /// Tells the other instances there is outbox work, when the transaction commits (PostgreSQL's
    /// NOTIFY); nothing where one instance is all there is.
    func announceOutboxWork(_ event: String) async throws
}

/// What differs between the SQL dialects in the outbox's statements.
package struct SQLDialect: Sendable {
    /// A page not yet done, as the partial indexes spell it.
    package var openPage: String
    /// A notification being cancelled, as the partial index spells it.
    package var cancelling: String
    /// Locks the rows read until the transaction ends (` FOR UPDATE`), where rows are locked.
    package var lockRows: String
    /// Locks the rows read, skipping those another transaction holds (` FOR UPDATE SKIP LOCKED`).
    package var skipLocked: String
    /// Inequality that treats NULL as a value (`IS NOT`, `IS DISTINCT FROM`).
    package var isDistinctFrom: String

    /// One connection, whose transactions run one at a time: nothing to lock.
    package static let sqlite = SQLDialect(
        openPage: "done = 0", cancelling: "cancel_requested = 1", lockRows: "", skipLocked: "", isDistinctFrom: "IS NOT")
    package static let postgres = SQLDialect(
        openPage: "NOT done", cancelling: "cancel_requested", lockRows: " FOR UPDATE", skipLocked: " FOR UPDATE SKIP LOCKED",
        isDistinctFrom: "IS DISTINCT FROM")
}

/// A database the outbox runs its transactions on.
package protocol SQLDatabase: Sendable {
    associatedtype Session: SQLSession
    var dialect: SQLDialect { get }
    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws (its
    /// failure answered as the store's error).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (Session) async throws -> T) async throws(StoreError) -> T
    /// Runs `body`, which only reads, on one snapshot and without a write lock.
    func read<T: Sendable>(_ body: @escaping @Sendable (Session) async throws -> T) async throws(StoreError) -> T
}

/// The outbox (``OutboxStore``) written once for every SQL store: its rules — an expired page
/// first, pages as keyset ranges of the audience, a page recorded once, retry pages nobody owns
/// until due, parking, finishing, cancelling — as statements both SQLite and PostgreSQL run.
/// Every transaction that changes a notification's pages reads its notification's row first
/// (and locks it, where rows are locked): one lock order, so concurrent instances never deadlock.
package struct SQLOutbox<Database: SQLDatabase>: Sendable {
    package let database: Database

    package init(_ database: Database) { self.database = database }

    private var dialect: SQLDialect { database.dialect }

    package func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) -> OutboxEnqueued {
        let payloads = OutboxPayloadCoding.encode(notification.payloads, delivery: notification.delivery)
        let idempotency = notification.idempotencyKey
        let values: [SQLValue] = [
            .text(notification.app.rawValue), .text(notification.id), .text(notification.sender),
            .text((lease == nil ? notification.initialState : .processing).rawValue), .text(notification.selection.description),
            .text(notification.audience.description), .text(payloads), notification.secureID.map(SQLValue.text) ?? .null,
            .real(notification.enqueuedAt.secondsSinceEpoch), .real(notification.deliverAt.secondsSinceEpoch),
            lease == nil ? .null : .real(notification.enqueuedAt.secondsSinceEpoch), lease.map { .text($0.owner) } ?? .null,
            .real(lease?.until.secondsSinceEpoch ?? 0), notification.audience.storedRecipient.map(SQLValue.text) ?? .null,
            // Asynchronous (no caller waits for its targets): other instances may help deliver it.
            .bool(lease == nil), idempotency.map { .text($0.key) } ?? .null, idempotency.map { .text($0.fingerprint) } ?? .null,
        ]
        return try await database.transaction { session -> OutboxEnqueued in
            if let idempotency {
                // A holder past the window gives the key up; a live one is the answer.
                _ = try await session.rows(
                    """
                    UPDATE outbox_notifications SET idempotency_key = NULL
                    WHERE app = ? AND sender = ? AND idempotency_key = ? AND enqueued_at < ?
                    """,
                    [
                        .text(notification.app.rawValue), .text(notification.sender), .text(idempotency.key),
                        .real(idempotency.storedSince.secondsSinceEpoch),
                    ])
            }
            if notification.initialState == .scheduled, let cap = notification.maximumScheduledPerSender {
                // A repeat of a key is answered before the cap is counted.
                if let idempotency,
                    let holder = try await Self.keyHolder(idempotency, app: notification.app, sender: notification.sender, session)
                {
                    return .existing(holder)
                }
                let waiting = try await session.rows(
                    """
                    SELECT count(*) FROM (SELECT 1 FROM outbox_notifications
                        WHERE app = ? AND sender = ? AND ended_at IS NULL AND state = ? LIMIT ?) waiting
                    """,
                    [
                        .text(notification.app.rawValue), .text(notification.sender), .text(NotificationState.scheduled.rawValue),
                        .integer(Int64(cap)),
                    ])
                if let refusal = notification.refusal(scheduledWaiting: waiting.first?.integer(0) ?? 0) { throw refusal }
            }
            // With a key, a concurrent enqueue of the same key waits for this one (the unique
            // index) and then stores nothing.
            let inserted = try await session.rows(
                """
                INSERT INTO outbox_notifications (app, id, sender, state, platforms, audience, payloads, secure_id, enqueued_at,
                    deliver_at, started_at, lease_owner, lease_expires, recipient, shared, idempotency_key, idempotency_fingerprint)
                VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), ?, CAST(? AS TEXT), ?,
                    CAST(? AS TEXT), CAST(? AS TEXT))
                """
                    + (idempotency == nil
                        ? "" : " ON CONFLICT (app, sender, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING id"),
                values)
            if let idempotency, inserted.isEmpty {
                guard let holder = try await Self.keyHolder(idempotency, app: notification.app, sender: notification.sender, session)
                else { throw StoreError(.storage, "the idempotency key's notification could not be read") }
                return .existing(holder)
            }
            // Idle instances look for work when this commits (a synchronous send is driven here).
            if lease == nil { try await session.announceOutboxWork("enqueued") }
            return .stored
        }
    }

    package func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) async throws(StoreError) -> OutboxKeyHolder? {
        try await database.read { session in try await Self.keyHolder(key, app: app, sender: sender, session) }
    }

    private static func keyHolder(
        _ key: IdempotencyKey, app: AppID, sender: String, _ session: Database.Session
    ) async throws -> OutboxKeyHolder? {
        guard
            let row = try await session.rows(
                """
                SELECT id, idempotency_fingerprint FROM outbox_notifications
                WHERE app = ? AND sender = ? AND idempotency_key = ? AND enqueued_at >= ?
                """, [.text(app.rawValue), .text(sender), .text(key.key), .real(key.storedSince.secondsSinceEpoch)]
            ).first, let id = row.text(0)
        else { return nil }
        return OutboxKeyHolder(notificationID: id, fingerprint: row.text(1) ?? "")
    }

    package func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover? {
        let dialect = self.dialect
        return try await database.transaction { session -> OutboxTakeover? in
            // Two index walks (a range of due times; the few being cancelled), not one OR that
            // would read every pending row; each skips rows another instance is taking right now.
            let time = now.secondsSinceEpoch
            var found: (id: String, expired: Bool)?
            for sql in [
                """
                SELECT id, lease_owner FROM outbox_notifications
                WHERE app = ? AND ended_at IS NULL AND deliver_at <= ? AND lease_expires <= ? ORDER BY deliver_at LIMIT 1\(dialect.skipLocked)
                """,
                """
                SELECT id, lease_owner FROM outbox_notifications
                WHERE app = ? AND ended_at IS NULL AND \(dialect.cancelling) AND deliver_at > ? AND lease_expires <= ?
                LIMIT 1\(dialect.skipLocked)
                """,
            ] where found == nil {
                if let row = try await session.rows(sql, [.text(app.rawValue), .real(time), .real(time)]).first, let id = row.text(0) {
                    found = (id, row.text(1) != nil)
                }
            }
            guard let (id, expired) = found else { return nil }
            let key: [SQLValue] = [.text(app.rawValue), .text(id)]
            _ = try await session.rows(
                """
                UPDATE outbox_notifications SET lease_owner = ?, lease_expires = ?, state = ?, started_at = coalesce(started_at, ?)
                WHERE app = ? AND id = ?
                """,
                [.text(lease.owner), .real(lease.until.secondsSinceEpoch), .text(NotificationState.processing.rawValue), .real(time)] + key)
            let notification: OutboxNotification?
            do {
                notification = try await Self.notification(id: id, app: app, session: session)
            } catch let error as StoreError where error.kind == .storage {
                // Unreadable (a corrupt row): ended, so that the notifications behind it go out.
                _ = try await session.rows(
                    "UPDATE outbox_notifications SET state = ?, ended_at = ?, lease_owner = NULL, lease_expires = 0 WHERE app = ? AND id = ?",
                    [.text(NotificationState.abandoned.rawValue), .real(time)] + key)
                return nil
            }
            return notification.map { OutboxTakeover(notification: $0, leaseExpired: expired) }
        }
    }

    package func takeRunningNotification(app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> OutboxNotification? {
        try await database.read { session -> OutboxNotification? in
            guard
                let id = try await session.rows(
                    """
                    SELECT id FROM outbox_notifications
                    WHERE app = ? AND ended_at IS NULL AND deliver_at <= ? AND shared AND NOT exhausted AND NOT cancel_requested
                        AND lease_owner IS NOT NULL AND lease_owner <> ? AND lease_expires > ?
                    ORDER BY deliver_at LIMIT 1
                    """, [.text(app.rawValue), .real(now.secondsSinceEpoch), .text(owner), .real(now.secondsSinceEpoch)]
                ).first?.text(0)
            else { return nil }
            return try await Self.notification(id: id, app: app, session: session)
        }
    }

    package func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError) -> OutboxClaim {
        let (size, dialect) = (max(1, pageSize), self.dialect)
        return try await database.transaction { session -> OutboxClaim in
            let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
            guard
                let row = try await session.rows(
                    """
                    SELECT lease_owner, ended_at, cursor, exhausted, next_page, cancel_requested, platforms, audience, recipient,
                        lease_expires, shared
                    FROM outbox_notifications WHERE app = ? AND id = ?\(dialect.lockRows)
                    """, key
                ).first, row.double(1) == nil
            else { return .lost }
            if helping {
                // Helping: while a live holder that is not the claimer has it, and it is shared.
                guard row.bool(10), let holder = row.text(0), holder != lease.owner, (row.double(9) ?? 0) > now.secondsSinceEpoch else {
                    return .lost
                }
            } else {
                guard row.text(0) == lease.owner else { return .lost }
            }
            let cursor = row.text(2) ?? ""
            let (exhausted, nextPage, cancelled) = (row.bool(3), row.integer(4) ?? 0, row.bool(5))
            let selection: PlatformSelection
            do { selection = try PlatformSelection(parsing: row.text(6) ?? "") } catch {
                throw StoreError(.storage, "a stored platform list is corrupt")
            }
            let audience = try StoredAudience.decode(text: row.text(7) ?? "", recipient: row.text(8))
            // Planned once per claim.
            let query = audience.walksRegistrations ? try await session.plan(audience, selection: selection, app: app, now: now) : nil
            func walk(_ after: RegistrationID?, _ limit: Int) async throws -> [DispatchTarget] {
                guard let query else { return audience.targets(after: after, limit: limit) { _, _, _ in [] } }
                return try await session.targets(query, after: after, limit: limit)
            }

            // A page whose lease expired first: its driver died or was stopped. Never the
            // claimer's own (it is on the wire here; a renewal came late under load).
            if let expired = try await session.rows(
                """
                SELECT number, after_id, last_id, targets, attempt, claims FROM outbox_pages
                WHERE app = ? AND notification_id = ? AND \(dialect.openPage) AND lease_expires <= ? AND lease_owner \(dialect.isDistinctFrom) ?
                LIMIT 1\(dialect.lockRows)
                """, key + [.real(now.secondsSinceEpoch), .text(lease.owner)]
            ).first {
                let number = expired.integer(0) ?? 0
                guard let last = expired.text(2).flatMap({ try? RegistrationID($0) }) else {
                    throw StoreError(.storage, "a stored page range is corrupt")
                }
                _ = try await session.rows(
                    """
                    UPDATE outbox_pages SET lease_owner = ?, lease_expires = ?, claims = claims + 1
                    WHERE app = ? AND notification_id = ? AND number = ?
                    """, [.text(lease.owner), .real(lease.until.secondsSinceEpoch)] + key + [.integer(Int64(number))])
                var targets: [DispatchTarget] = []
                if let stored = expired.text(3) {
                    // A retry page: its own targets, as their registrations are now (a topic or
                    // direct handles: as sent).
                    guard let decoded = OutboxRetry.decode(stored) else { throw StoreError(.storage, "a stored retry page is corrupt") }
                    targets =
                        audience.walksRegistrations ? try await Self.current(decoded, app: app, now: now, session: session) : decoded
                } else {
                    // The range `(after, last]` read again, in steps of the page size, until it passes `last`:
                    // registrations added to it since are included, deleted ones are not.
                    var position = expired.text(1).flatMap { try? RegistrationID($0) }
                    while true {
                        let step = try await walk(position, size)
                        targets += step.prefix { $0.registrationID <= last }
                        guard step.count == size, let tail = step.last, tail.registrationID < last else { break }
                        position = tail.registrationID
                    }
                }
                // What its earlier drivers had answered is not sent again.
                var answered: [OutboxAnswers.Entry] = []
                for row in try await session.rows(
                    "SELECT answers FROM outbox_answers WHERE app = ? AND notification_id = ? AND page = ?", key + [.integer(Int64(number))]
                ) {
                    guard let entries = row.text(0).flatMap(OutboxAnswers.decode) else {
                        throw StoreError(.storage, "a page's stored answers are corrupt")
                    }
                    answered += entries
                }
                let (remaining, answeredCounts) = OutboxAnswers.skipping(answered, in: targets)
                return .page(
                    OutboxPage(
                        number: number, targets: remaining, reclaimed: (expired.integer(5) ?? 0) > 0, cancelled: cancelled,
                        attempt: expired.integer(4) ?? 0, answered: answeredCounts))
            }
            if exhausted { return .exhausted }
            let targets = try await walk(cursor.isEmpty ? nil : try? RegistrationID(cursor), size)
            guard let last = targets.last else {
                _ = try await session.rows("UPDATE outbox_notifications SET exhausted = ? WHERE app = ? AND id = ?", [.bool(true)] + key)
                return .exhausted
            }
            _ = try await session.rows(
                "INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires) VALUES (?, ?, ?, ?, ?, ?, ?)",
                key + [
                    .integer(Int64(nextPage)), .text(cursor), .text(last.registrationID.rawValue), .text(lease.owner),
                    .real(lease.until.secondsSinceEpoch),
                ])
            _ = try await session.rows(
                """
                UPDATE outbox_notifications SET cursor = ?, next_page = next_page + 1, exhausted = ?, claimed = claimed + ?
                WHERE app = ? AND id = ?
                """, [.text(last.registrationID.rawValue), .bool(targets.count < size), .integer(Int64(targets.count))] + key)
            return .page(OutboxPage(number: nextPage, targets: targets, reclaimed: false, cancelled: cancelled))
        }
    }

    package func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?
    ) async throws(StoreError) -> Bool {
        let dialect = self.dialect
        // Counts in one order, so that two transactions adding to the same rows never deadlock.
        var countRows: [[SQLValue]] = []
        for (platform, byOutcome) in counts.sorted(by: { $0.key < $1.key }) {
            for (outcome, count) in byOutcome.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where count > 0 {
                countRows.append([.text(platform.rawValue), .text(outcome.rawValue), .integer(Int64(count))])
            }
        }
        let failureRows = Self.failureRows(failures)
        return try await database.transaction { [countRows] session -> Bool in
            let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
            // The notification's row first, as every other outbox transaction reads it: one lock order.
            guard
                let notification = try await session.rows(
                    "SELECT next_page, cancel_requested FROM outbox_notifications WHERE app = ? AND id = ?\(dialect.lockRows)", key
                ).first
            else { return false }
            let marked = try await session.rows(
                "UPDATE outbox_pages SET done = ? WHERE app = ? AND notification_id = ? AND number = ? AND \(dialect.openPage) RETURNING number",
                [.bool(true)] + key + [.integer(Int64(number))])
            guard !marked.isEmpty else { return false }
            // Its answers while on the wire are in its record now.
            _ = try await session.rows(
                "DELETE FROM outbox_answers WHERE app = ? AND notification_id = ? AND page = ?", key + [.integer(Int64(number))])
            if let retry, let last = retry.targets.last {
                // A page of its own, nobody's until it is due (due at once when being cancelled).
                _ = try await session.rows(
                    """
                    INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires, claims, targets,
                        attempt)
                    VALUES (?, ?, ?, '', ?, NULL, ?, 0, ?, ?)
                    """,
                    key + [
                        .integer(Int64(notification.integer(0) ?? 0)), .text(last.registrationID.rawValue),
                        .real(notification.bool(1) ? 0 : retry.due.secondsSinceEpoch), .text(OutboxRetry.encode(retry.targets)),
                        .integer(Int64(retry.attempt)),
                    ])
                _ = try await session.rows("UPDATE outbox_notifications SET next_page = next_page + 1 WHERE app = ? AND id = ?", key)
            }
            if !countRows.isEmpty {
                _ = try await session.rows(
                    """
                    INSERT INTO outbox_counts (app, notification_id, platform, outcome, count)
                    VALUES \(Self.placeholders(rows: countRows.count, row: "(?, ?, ?, ?, ?)"))
                    ON CONFLICT (app, notification_id, platform, outcome) DO UPDATE SET count = outbox_counts.count + excluded.count
                    """, countRows.flatMap { key + $0 })
            }
            try await Self.upsertFailures(failureRows, key: key, session: session)
            return true
        }
    }

    package func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) async throws(StoreError) {
        let dialect = self.dialect
        let answers = answers.filter { !$0.targets.isEmpty }.sorted { $0.page < $1.page }
        guard !answers.isEmpty else { return }
        let failureRows = Self.failureRows(answers.flatMap(\.failures))
        try await database.transaction { session in
            let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
            // The notification's row first, as every other outbox transaction reads it: one lock order.
            guard
                !(try await session.rows(
                    "SELECT 1 FROM outbox_notifications WHERE app = ? AND id = ? AND ended_at IS NULL\(dialect.lockRows)", key)).isEmpty
            else { return }
            // Only pages still open: a page recorded meanwhile has these answers in its record.
            let open = Set(
                try await session.rows(
                    """
                    SELECT number FROM outbox_pages WHERE app = ? AND notification_id = ? AND \(dialect.openPage)
                        AND number IN (\(Self.placeholders(rows: answers.count, row: "?")))
                    """, key + answers.map { .integer(Int64($0.page)) }
                ).compactMap { $0.integer(0) })
            for page in answers where open.contains(page.page) {
                // Keyed by the page and its first answered target: a page two drivers delivered at
                // once (a lease that expired on the wire) keeps one copy of what both flushed.
                let entries = page.entries
                _ = try await session.rows(
                    """
                    INSERT INTO outbox_answers (app, notification_id, page, first_id, answers) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (app, notification_id, page, first_id) DO NOTHING
                    """,
                    key + [.integer(Int64(page.page)), .text(entries[0].registrationID.rawValue), .text(OutboxAnswers.encode(entries))])
            }
            try await Self.upsertFailures(failureRows, key: key, session: session)
        }
    }

    package func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        let dialect = self.dialect
        return try await database.transaction { session -> NotificationRecord? in
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
            record.state = NotificationRecord.finalState(
                counts: record.counts, selection: record.selection, cancelled: record.cancelRequested)
            record.endedAt = now
            _ = try await session.rows(
                "UPDATE outbox_notifications SET state = ?, ended_at = ?, lease_owner = NULL, lease_expires = 0 WHERE app = ? AND id = ?",
                [.text(record.state.rawValue), .real(now.secondsSinceEpoch)] + key)
            _ = try await session.rows("DELETE FROM outbox_pages WHERE app = ? AND notification_id = ?", key)
            _ = try await session.rows("DELETE FROM outbox_answers WHERE app = ? AND notification_id = ?", key)
            return record
        }
    }

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
                _ = try await session.rows("DELETE FROM outbox_answers WHERE app = ? AND notification_id = ?", key)
                _ = try await session.rows("DELETE FROM outbox_notifications WHERE app = ? AND id = ?", key)
            }
            return keys.count
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
        guard !targets.isEmpty else { return [] }
        var handles: [String: DeviceHandle] = [:]
        var start = targets.startIndex
        while start < targets.endIndex {
            let chunk = targets[start..<min(start + 500, targets.endIndex)]
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
            handles[target.registrationID.rawValue].map { DispatchTarget(registrationID: target.registrationID, handle: $0) }
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
