import Pushgate

/// What the outbox needs of a database, inside one transaction: statements with `?` placeholders,
/// the audience walk in the database's own tag-query form, and a wake-up for the other instances.
package protocol SQLSession {
    associatedtype Row: SQLRowReading
    /// Runs `sql` with `values` bound to its `?` placeholders, in order; its rows.
    func rows(_ sql: String, _ values: [SQLValue]) async throws -> [Row]
    /// The query of `audience` (a walk of registrations) on `selection`, planned on this database
    /// (an `&&` weighs its sides' tags).
    func plan(_ selector: RegistrationSelector, selection: PlatformSelection, app: AppID, now: Timestamp) async throws -> TagQuery
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
    /// Writes in `WITH` (PostgreSQL's data-modifying common table expressions): several writes
    /// that go together are one statement, one round trip.
    package var writesInWith: Bool

    /// One connection, whose transactions run one at a time: nothing to lock.
    package static let sqlite = SQLDialect(
        openPage: "done = 0", cancelling: "cancel_requested = 1", lockRows: "", skipLocked: "", isDistinctFrom: "IS NOT",
        writesInWith: false)
    package static let postgres = SQLDialect(
        openPage: "NOT done", cancelling: "cancel_requested", lockRows: " FOR UPDATE", skipLocked: " FOR UPDATE SKIP LOCKED",
        isDistinctFrom: "IS DISTINCT FROM", writesInWith: true)
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
    /// Runs `body` with each of its statements a transaction of its own, where the database has
    /// that (PostgreSQL: no `BEGIN` and `COMMIT` round trips); else in one transaction. For a body
    /// whose writes are one statement, after reads that lock nothing.
    func statementByStatement<T: Sendable>(_ body: @escaping @Sendable (Session) async throws -> T) async throws(StoreError) -> T
}

extension SQLDatabase {
    package func statementByStatement<T: Sendable>(
        _ body: @escaping @Sendable (Session) async throws -> T
    ) async throws(StoreError) -> T {
        try await transaction(body)
    }
}

/// The outbox (``OutboxStore``) written once for every SQL store: its rules — an expired page
/// first, pages as keyset ranges of the audience, a page recorded once, retry pages nobody owns
/// until due, parking, finishing, cancelling — as statements both SQLite and PostgreSQL run.
/// Every transaction that changes a notification's pages reads its notification's row first
/// (and locks it, where rows are locked): one lock order, so concurrent instances never deadlock.
///
/// (About 27 members: the outbox's statements, one per operation of ``OutboxQueue`` and its log,
/// split by concern into `+Pages` and `+Records`.)
package struct SQLOutbox<Database: SQLDatabase>: Sendable {
    package let database: Database

    package init(_ database: Database) { self.database = database }

    var dialect: SQLDialect { database.dialect }

    package func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) -> OutboxEnqueued {
        let values = Self.enqueueValues(notification, lease: lease)
        return try await database.transaction { session -> OutboxEnqueued in
            try await Self.store(notification, lease: lease, values: values, session: session)
        }
    }

    package func enqueue(
        _ notification: OutboxNotification, lease: OutboxLease, claimingFirstPageOf pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxSynchronousStart {
        let (values, dialect) = (Self.enqueueValues(notification, lease: lease), self.dialect)
        let size = max(1, pageSize)
        let start: @Sendable (Database.Session) async throws -> OutboxSynchronousStart = { session in
            // A notification stored in this transaction has no pages, no cursor and no cancel
            // yet, and nobody else sees it: its first page is walked first and stored with it
            // (the row as a claim would leave it), without reading back what was just written.
            let audience = notification.audience
            let query = try await Self.plan(audience, selection: notification.selection, app: notification.app, now: now, session: session)
            let targets = try await Self.walk(audience, query, after: nil, limit: size, session: session)
            let first = FirstPage(targets: targets, pageSize: size, storedInStatement: dialect.writesInWith)
            let enqueued = try await Self.store(notification, lease: lease, values: values, firstPage: first, session: session)
            guard case .stored = enqueued else { return OutboxSynchronousStart(enqueued: enqueued, firstClaim: nil) }
            guard let last = targets.last else { return OutboxSynchronousStart(enqueued: enqueued, firstClaim: .exhausted) }
            if !first.storedInStatement {
                try await Self.insertPage(
                    0, after: "", last: last.registrationID, lease: lease, key: [.text(notification.app.rawValue), .text(notification.id)],
                    session: session)
            }
            // The audience ends with this page when it is not full, and no other page exists.
            return OutboxSynchronousStart(
                enqueued: enqueued,
                firstClaim: .page(OutboxPage(number: 0, targets: targets, reclaimed: false, cancelled: false, last: first.exhausted)))
        }
        // Where the notification and its page are one statement, and no key's stale holder gives
        // it up first, that statement is the one write: after the audience's read it needs no
        // transaction around it (the read locks nothing either way).
        guard dialect.writesInWith, notification.idempotencyKey == nil else { return try await database.transaction(start) }
        return try await database.statementByStatement(start)
    }

    /// The first page claimed with the enqueue: the cursor, counters and flag the notification's
    /// row is stored with, as ``claim(notificationID:app:lease:pageSize:now:helping:dialect:session:)``
    /// would set them.
    struct FirstPage {
        var cursor: String?
        var exhausted: Bool
        var claimed: Int
        var nextPage: Int
        /// The page is stored by the notification's `INSERT` (``SQLDialect/writesInWith``).
        var storedInStatement: Bool

        init(targets: [DispatchTarget], pageSize: Int, storedInStatement: Bool) {
            cursor = targets.last?.registrationID.rawValue
            exhausted = targets.count < pageSize
            claimed = targets.count
            nextPage = targets.isEmpty ? 0 : 1
            self.storedInStatement = storedInStatement && !targets.isEmpty
        }

        var values: [SQLValue] {
            [cursor.map(SQLValue.text) ?? .null, .bool(exhausted), .integer(Int64(claimed)), .integer(Int64(nextPage))]
        }
    }

    /// The notification's row, as the enqueue's `INSERT` binds it.
    private static func enqueueValues(_ notification: OutboxNotification, lease: OutboxLease?) -> [SQLValue] {
        let payloads = OutboxPayloadCoding.encode(notification.payloads, delivery: notification.delivery)
        let idempotency = notification.idempotencyKey
        return [
            .text(notification.app.rawValue), .text(notification.id), .text(notification.sender),
            .text((lease == nil ? notification.initialState : .processing).rawValue), .text(notification.selection.description),
            .text(notification.audience.description), .text(payloads), notification.secureID.map(SQLValue.text) ?? .null,
            .real(notification.enqueuedAt.secondsSinceEpoch), .real(notification.deliverAt.secondsSinceEpoch),
            lease == nil ? .null : .real(notification.enqueuedAt.secondsSinceEpoch), lease.map { .text($0.owner) } ?? .null,
            .real(lease?.until.secondsSinceEpoch ?? 0), notification.audience.storedRecipient.map(SQLValue.text) ?? .null,
            // Asynchronous (no caller waits for its targets): other instances may help deliver it.
            .bool(lease == nil), idempotency.map { .text($0.key) } ?? .null, idempotency.map { .text($0.fingerprint) } ?? .null,
        ]
    }

    /// Stores the notification in the caller's transaction (``enqueue(_:lease:)``).
    private static func store(
        _ notification: OutboxNotification, lease: OutboxLease?, values: [SQLValue], firstPage: FirstPage? = nil,
        session: Database.Session
    ) async throws -> OutboxEnqueued {
        let idempotency = notification.idempotencyKey
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
        let (columns, placeholders) =
            firstPage == nil ? ("", "") : (", cursor, exhausted, claimed, next_page", ", CAST(? AS TEXT), ?, ?, ?")
        var insert = """
            INSERT INTO outbox_notifications (app, id, sender, state, platforms, audience, payloads, secure_id, enqueued_at,
                deliver_at, started_at, lease_owner, lease_expires, recipient, shared, idempotency_key, idempotency_fingerprint\(columns))
            VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), ?, CAST(? AS TEXT), ?,
                CAST(? AS TEXT), CAST(? AS TEXT)\(placeholders))
            """
        if idempotency != nil { insert += " ON CONFLICT (app, sender, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING" }
        if firstPage?.storedInStatement == true {
            // Its first page in the same statement, leased as the row is (nothing when a repeat of
            // a key stores nothing).
            insert = """
                WITH stored AS (\(insert) RETURNING app, id, cursor, lease_owner, lease_expires)
                INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires)
                SELECT app, id, 0, '', cursor, lease_owner, lease_expires FROM stored RETURNING notification_id
                """
        } else if idempotency != nil {
            insert += " RETURNING id"
        }
        let inserted = try await session.rows(insert, values + (firstPage?.values ?? []))
        if let idempotency, inserted.isEmpty {
            guard let holder = try await Self.keyHolder(idempotency, app: notification.app, sender: notification.sender, session)
            else { throw StoreError(.storage, "the idempotency key's notification could not be read") }
            return .existing(holder)
        }
        // Idle instances look for work when this commits (a synchronous send is driven here).
        if lease == nil { try await session.announceOutboxWork("enqueued") }
        return .stored
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
}
