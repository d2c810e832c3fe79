import Pushgate

/// Pages: claimed as keyset ranges of the audience (an expired one first), recorded once, with
/// the answers that came in ahead of their page.
extension SQLOutbox {
    package func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError) -> OutboxClaim {
        let dialect = self.dialect
        return try await database.transaction { session -> OutboxClaim in
            try await Self.claim(
                notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now, helping: helping, dialect: dialect,
                session: session)
        }
    }

    /// Claims the next page in the caller's transaction (``claimPage(notificationID:app:lease:pageSize:now:helping:)``).
    static func claim(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool, dialect: SQLDialect,
        session: Database.Session
    ) async throws -> OutboxClaim {
        let size = max(1, pageSize)
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
        let query = try await Self.plan(audience, selection: selection, app: app, now: now, session: session)
        func walk(_ after: RegistrationID?, _ limit: Int) async throws -> [DispatchTarget] {
            try await Self.walk(audience, query, after: after, limit: limit, session: session)
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
                // A retry page: its own targets, registrations as they are now (a topic or direct
                // handles: as sent).
                guard let decoded = OutboxRetry.decode(stored, kind: audience.targetKind) else {
                    throw StoreError(.storage, "a stored retry page is corrupt")
                }
                targets = try await Self.current(decoded, app: app, now: now, session: session)
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
        try await Self.insertPage(nextPage, after: cursor, last: last.registrationID, lease: lease, key: key, session: session)
        _ = try await session.rows(
            """
            UPDATE outbox_notifications SET cursor = ?, next_page = next_page + 1, exhausted = ?, claimed = claimed + ?
            WHERE app = ? AND id = ?
            """, [.text(last.registrationID.rawValue), .bool(targets.count < size), .integer(Int64(targets.count))] + key)
        // The audience ends with this page: the last one when no other page is open (no
        // expired page of another driver, no retry page).
        var onlyOpenPage = false
        if targets.count < size {
            onlyOpenPage = try await session.rows(
                "SELECT 1 FROM outbox_pages WHERE app = ? AND notification_id = ? AND \(dialect.openPage) AND number <> ? LIMIT 1",
                key + [.integer(Int64(nextPage))]
            ).isEmpty
        }
        return .page(OutboxPage(number: nextPage, targets: targets, reclaimed: false, cancelled: cancelled, last: onlyOpenPage))
    }

    /// The audience's query where it is a walk of registrations (planned on the database), nil
    /// where it is handles or a topic.
    static func plan(
        _ audience: Audience, selection: PlatformSelection, app: AppID, now: Timestamp, session: Database.Session
    ) async throws -> TagQuery? {
        guard let selector = audience.selector else { return nil }
        return try await session.plan(selector, selection: selection, app: app, now: now)
    }

    /// At most `limit` targets of `audience` after `after`, in id order: its registrations by
    /// `query` (``plan(_:selection:app:now:session:)``), or its own handles or topic.
    static func walk(
        _ audience: Audience, _ query: TagQuery?, after: RegistrationID?, limit: Int, session: Database.Session
    ) async throws -> [DispatchTarget] {
        guard let query else { return audience.targets(after: after, limit: limit) { _, _, _ in [] } }
        return try await session.targets(query, after: after, limit: limit)
    }

    /// Stores a claimed page of the audience, the range `(after, last]`, leased to `lease`'s owner.
    static func insertPage(
        _ number: Int, after: String, last: RegistrationID, lease: OutboxLease, key: [SQLValue], session: Database.Session
    ) async throws {
        _ = try await session.rows(
            "INSERT INTO outbox_pages (app, notification_id, number, after_id, last_id, lease_owner, lease_expires) VALUES (?, ?, ?, ?, ?, ?, ?)",
            key + [
                .integer(Int64(number)), .text(after), .text(last.rawValue), .text(lease.owner), .real(lease.until.secondsSinceEpoch),
            ])
    }

    package func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?, rows: [OutboxRecordRow]
    ) async throws(StoreError) -> Bool {
        let write = PageRecordWrite(number: number, counts: counts, failures: failures, retry: retry, rows: rows, dialect: dialect)
        return try await database.transaction { session -> Bool in
            try await Self.recordPage(write, key: [.text(app.rawValue), .text(notificationID)], session: session)
        }
    }

    package func completeLastPage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], owner: String,
        now: Timestamp, rows: [OutboxRecordRow], completion: CompletionEvents = .none
    ) async throws(StoreError) -> OutboxLastPageRecord {
        let write = PageRecordWrite(number: number, counts: counts, failures: failures, retry: nil, rows: rows, dialect: dialect)
        let dialect = self.dialect
        return try await database.transaction { session -> OutboxLastPageRecord in
            let key: [SQLValue] = [.text(app.rawValue), .text(notificationID)]
            if number == 0,
                let answer = try await Self.recordOnlyPage(
                    write, notificationID: notificationID, app: app, owner: owner, now: now, completion: completion, key: key,
                    session: session)
            {
                return answer
            }
            guard try await Self.recordPage(write, key: key, session: session) else {
                return .recordedBefore
            }
            let record = try await Self.finishing(
                notificationID: notificationID, app: app, owner: owner, now: now, completion: completion, dialect: dialect,
                session: session)
            return record.map(OutboxLastPageRecord.finished) ?? .recorded
        }
    }

    /// Records page 0 and finishes its notification in the caller's transaction when it is the
    /// notification's only page ever (pages are numbered as they are made, retry pages too), its
    /// audience is exhausted and `owner` holds it: then no other page can be open or counted, so
    /// the page goes, the counts are this page's, and nothing is read back. Nil when it is not
    /// (the general record and finish follow).
    static func recordOnlyPage(
        _ write: PageRecordWrite, notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents,
        key: [SQLValue], session: Database.Session
    ) async throws -> OutboxLastPageRecord? {
        let dialect = write.dialect
        // The notification's row first, as every other outbox transaction reads it (one lock
        // order), with all its record needs.
        guard
            let row = try await session.rows(
                "SELECT \(OutboxRows.recordColumns), next_page, lease_owner FROM outbox_notifications WHERE app = ? AND id = ?\(dialect.lockRows)",
                key
            ).first
        else { return .recordedBefore }
        var record = OutboxRows.record(id: notificationID, app: app, row: row, counts: write.counts)
        let after = OutboxRows.recordColumnCount
        guard row.integer(after) == 1, record.endedAt == nil, record.audienceExhausted, row.text(after + 1) == owner else { return nil }
        record.state = NotificationRecord.finalState(counts: record.counts, selection: record.selection, cancelled: record.cancelRequested)
        record.endedAt = now
        let removePage = "DELETE FROM outbox_pages WHERE app = ? AND notification_id = ? AND number = 0 AND \(dialect.openPage)"
        if dialect.writesInWith {
            // One statement: each write only when the page was still open.
            let ifRemoved = "EXISTS (SELECT 1 FROM page)"
            var parts = ["page AS (\(removePage) RETURNING number)"]
            var values = key
            if !write.countRows.isEmpty {
                parts.append("counted AS (\(Self.addCountsSQL(rows: write.countRows.count, selectedWhere: ifRemoved)))")
                values += write.countRows.flatMap { key + $0 }
            }
            parts.append("ended AS (\(Self.endSQL) AND \(ifRemoved))")
            parts.append("answers AS (\(Self.dropAnswersSQL) AND \(ifRemoved))")
            values += [.text(record.state.rawValue), .real(now.secondsSinceEpoch)] + key + key
            guard !(try await session.rows("WITH \(parts.joined(separator: ", ")) SELECT number FROM page", values)).isEmpty else {
                return .recordedBefore
            }
            try await Self.upsertFailures(write.failureRows, key: key, session: session)
        } else {
            guard !(try await session.rows(removePage + " RETURNING number", key)).isEmpty else { return .recordedBefore }
            try await Self.addCounts(write, key: key, session: session)
            try await Self.end(record.state, at: now, key: key, session: session)
        }
        try await Self.insertRows(write.rows, page: write.number, key: key, session: session)
        try await Self.insertRows(completion.rows(for: record, now: now), page: 0, key: key, session: session)
        return .finished(record)
    }

    /// A page's record as statement values, made before its transaction.
    struct PageRecordWrite: Sendable {
        let number: Int
        /// The counts as stored (none of zero).
        let counts: [Platform: [Outcome: Int]]
        let countRows: [[SQLValue]]
        let failureRows: [[SQLValue]]
        let retry: OutboxRetry?
        /// Other features' rows, written last in the record's transaction (``OutboxRecordRow``).
        let rows: [OutboxRecordRow]
        let dialect: SQLDialect

        init(
            number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], retry: OutboxRetry?, rows: [OutboxRecordRow],
            dialect: SQLDialect
        ) {
            // Counts in one order, so that two transactions adding to the same rows never deadlock.
            var countRows: [[SQLValue]] = []
            var stored: [Platform: [Outcome: Int]] = [:]
            for (platform, byOutcome) in counts.sorted(by: { $0.key < $1.key }) {
                for (outcome, count) in byOutcome.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where count > 0 {
                    countRows.append([.text(platform.rawValue), .text(outcome.rawValue), .integer(Int64(count))])
                    stored[platform, default: [:]][outcome] = count
                }
            }
            self.number = number
            self.counts = stored
            self.countRows = countRows
            self.failureRows = SQLOutbox.failureRows(failures)
            self.retry = retry
            self.rows = rows
            self.dialect = dialect
        }
    }

    /// Writes a record's rows in the caller's transaction, after everything else it writes: a
    /// row the table refuses (longer than ``OutboxRecordRow/maximumBodyBytes``) fails the whole
    /// record.
    static func insertRows(_ rows: [OutboxRecordRow], page: Int, key: [SQLValue], session: Database.Session) async throws {
        guard !rows.isEmpty else { return }
        _ = try await session.rows(
            "INSERT INTO outbox_rows (app, notification_id, page, kind, body) VALUES \(Self.placeholders(rows: rows.count, row: "(?, ?, ?, ?, ?)"))",
            rows.flatMap { key + [.integer(Int64(page)), .text($0.kind), .text($0.body)] })
    }

    /// Records a page and marks it done, in the caller's transaction; false when it was done already.
    static func recordPage(_ write: PageRecordWrite, key: [SQLValue], session: Database.Session) async throws -> Bool {
        let dialect = write.dialect
        // The notification's row first, as every other outbox transaction reads it: one lock order.
        guard
            let notification = try await session.rows(
                "SELECT next_page, cancel_requested FROM outbox_notifications WHERE app = ? AND id = ?\(dialect.lockRows)", key
            ).first
        else { return false }
        let marked = try await session.rows(
            "UPDATE outbox_pages SET done = ? WHERE app = ? AND notification_id = ? AND number = ? AND \(dialect.openPage) RETURNING number",
            [.bool(true)] + key + [.integer(Int64(write.number))])
        guard !marked.isEmpty else { return false }
        // Its answers while on the wire are in its record now.
        _ = try await session.rows(
            "DELETE FROM outbox_answers WHERE app = ? AND notification_id = ? AND page = ?", key + [.integer(Int64(write.number))])
        if let retry = write.retry, let last = retry.targets.last {
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
        try await addCounts(write, key: key, session: session)
        try await insertRows(write.rows, page: write.number, key: key, session: session)
        return true
    }

    /// Adds a page's counts and failed targets to its notification's, in the caller's transaction.
    static func addCounts(_ write: PageRecordWrite, key: [SQLValue], session: Database.Session) async throws {
        if !write.countRows.isEmpty {
            _ = try await session.rows(Self.addCountsSQL(rows: write.countRows.count), write.countRows.flatMap { key + $0 })
        }
        try await Self.upsertFailures(write.failureRows, key: key, session: session)
    }

    /// Adds `rows` counts (app, notification, platform, outcome, count); only when `condition`
    /// holds, where one is given.
    static func addCountsSQL(rows: Int, selectedWhere condition: String? = nil) -> String {
        let values = "VALUES \(Self.placeholders(rows: rows, row: "(?, ?, ?, ?, ?)"))"
        return """
            INSERT INTO outbox_counts (app, notification_id, platform, outcome, count)
            \(condition.map { "SELECT * FROM (\(values)) AS added WHERE \($0)" } ?? values)
            ON CONFLICT (app, notification_id, platform, outcome) DO UPDATE SET count = outbox_counts.count + excluded.count
            """
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
}
