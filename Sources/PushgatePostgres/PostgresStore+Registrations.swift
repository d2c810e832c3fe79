import Foundation
import PostgresNIO
import Pushgate
import PushgateSQL
import Synchronization

extension PostgresStore: RegistrationStore {
    public func createRegistrationID(
        app: AppID, owner: String, maximumReserved: Int, lifetime: Double?, now: Timestamp
    ) async throws(StoreError) -> RegistrationID {
        let id = RegistrationID.random()
        let (expiry, logger) = (now.secondsSinceEpoch + (lifetime ?? reservationLifetime), self.logger)
        try await transaction { connection in
            // One count-and-insert per user at a time, across instances.
            _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(app.rawValue + "\n" + owner)))", logger: logger)
                .collect()
            try await connection.query(
                "DELETE FROM reserved_ids WHERE app = \(app.rawValue) AND expires_at <= \(now.secondsSinceEpoch)", logger: logger)
            let held =
                try await connection.query(
                    """
                    SELECT count(*) FROM (SELECT 1 FROM reserved_ids WHERE app = \(app.rawValue) AND owner = \(owner)
                    LIMIT \(min(maximumReserved, Int(Int32.max)))) AS held
                    """, logger: logger
                ).all(Int.self).first ?? 0
            if held >= maximumReserved { throw StoreError.tooManyReservations(maximumReserved) }
            try await connection.query(
                "INSERT INTO reserved_ids (app, id, expires_at, owner) VALUES (\(app.rawValue), \(id.rawValue), \(expiry), \(owner))",
                logger: logger)
        }
        return id
    }

    public func registrationIDs(handle: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                "SELECT id FROM registrations WHERE app = \(app.rawValue) AND handle = \(handle) ORDER BY id", logger: logger
            ).all(String.self).compactMap { try? RegistrationID($0) }
        }
    }

    public func registrationIDs(handlePrefix: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        // A range of the byte-ordered index on (app, handle COLLATE "C") (schema version 2).
        guard let upper = TextPrefix.upperBound(handlePrefix) else { return [] }
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                "SELECT id FROM registrations WHERE app = \(app.rawValue) AND handle COLLATE \"C\" >= \(handlePrefix) AND handle COLLATE \"C\" < \(upper) ORDER BY id",
                logger: logger
            ).all(String.self).compactMap { try? RegistrationID($0) }
        }
    }

    public func upsert(_ registration: Registration, now: Timestamp, writer: WriterGuard?) async throws(StoreError) {
        let template = try registration.encodedTemplate()
        let logger = self.logger
        try await transaction { connection in
            let (app, id) = (registration.app.rawValue, registration.id.rawValue)
            // Writers of one id take turns (a lock held to the commit): `FOR UPDATE` locks nothing
            // while the row does not exist, so two first writes of a freshly reserved id raced, and
            // the second, finding the reservation used and (read before the first committed) no
            // registration, answered 410. Now it waits, then sees the registration and updates it.
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(\(Self.registrationLockClass), hashtext(\(app) || '/' || \(id)))", logger: logger
            ).collect()
            let exists = try await connection.query(
                "SELECT owner, owner_kind FROM registrations WHERE app = \(app) AND id = \(id) FOR UPDATE", logger: logger
            ).all((String, Int).self).map { RegistrationOwner(storedKind: $0.1, name: $0.0) }
            if let writer {
                // Another user's registration holding the handle (or one of the endpoint's subscriptions).
                let owner = writer.owner
                var held =
                    !(try await connection.query(
                        "SELECT 1 FROM registrations WHERE app = \(app) AND handle = \(writer.handle) AND id <> \(id) AND (owner_kind <> 0 OR owner <> \(owner)) LIMIT 1",
                        logger: logger
                    ).collect()).isEmpty
                for prefix in writer.handlePrefixes where !held {
                    guard let upper = TextPrefix.upperBound(prefix) else { continue }
                    held =
                        !(try await connection.query(
                            """
                            SELECT 1 FROM registrations WHERE app = \(app) AND handle COLLATE "C" >= \(prefix) AND handle COLLATE "C" < \(upper)
                                AND id <> \(id) AND (owner_kind <> 0 OR owner <> \(owner)) LIMIT 1
                            """, logger: logger
                        ).collect()).isEmpty
                }
                if let refusal = writer.refusal(id: registration.id, idOwner: exists.first, handleHeldByAnother: held) { throw refusal }
            }
            if exists.isEmpty {
                if let writer, let cap = writer.maximumRegistrations {
                    let count = try await connection.query(
                        "SELECT count(*) FROM (SELECT 1 FROM registration_tags WHERE app = \(app) AND tag = \(writer.ownTag) LIMIT \(cap)) t",
                        logger: logger
                    ).all(Int.self)
                    if let refusal = writer.refusal(registrationsTagged: count.first ?? 0) { throw refusal }
                }
                let reserver = try await connection.query(
                    "SELECT owner FROM reserved_ids WHERE app = \(app) AND id = \(id) AND expires_at > \(now.secondsSinceEpoch)",
                    logger: logger
                ).all(String.self)
                guard let reserver = reserver.first else { throw StoreError.gone(registration.id) }
                if let refusal = writer?.refusal(id: registration.id, reservedBy: reserver) { throw refusal }
            }
            try await Self.write([registration], templates: [template], now: now, connection: connection, logger: logger)
        }
    }

    /// The first key of the advisory locks that serialize writers of one registration id
    /// (`pg_advisory_xact_lock(class, hash)`), apart from any other advisory lock.
    static let registrationLockClass: Int32 = 0x5047_5201

    public func restore(_ registrations: [Registration], now: Timestamp) async throws(StoreError) {
        guard !registrations.isEmpty else { return }
        let templates = try registrations.encodedTemplates()
        let logger = self.logger
        try await transaction { [templates] connection in
            try await Self.write(registrations, templates: templates, now: now, connection: connection, logger: logger)
        }
    }

    public func replace(_ registrations: [Registration], removing: [RegistrationID], app: AppID, now: Timestamp) async throws(StoreError) {
        let templates = try registrations.encodedTemplates()
        let logger = self.logger
        let (appText, ids) = (app.rawValue, removing.map(\.rawValue))
        try await transaction { [templates] connection in
            try await Self.write(registrations, templates: templates, now: now, connection: connection, logger: logger)
            guard !ids.isEmpty else { return }
            try await connection.query("DELETE FROM reserved_ids WHERE app = \(appText) AND id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM registration_tags WHERE app = \(appText) AND id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM registrations WHERE app = \(appText) AND id = ANY(\(ids))", logger: logger)
        }
    }

    /// Inserts or replaces `registrations` and their tags, consuming their reservations, in a few
    /// statements whatever their number (arrays unnested server-side); inside a transaction.
    static func write(
        _ registrations: [Registration], templates: [String?], now: Timestamp, connection: PostgresConnection, logger: Logger
    ) async throws {
        guard let app = registrations.first?.app.rawValue else { return }
        // Registrations of one app per statement.
        if registrations.contains(where: { $0.app.rawValue != app }) {
            for (registration, template) in zip(registrations, templates) {
                try await write([registration], templates: [template], now: now, connection: connection, logger: logger)
            }
            return
        }
        // The last of repeated ids wins, as writing them one by one would.
        var seen: Set<RegistrationID> = []
        var rows: [(Registration, String?)] = []
        for (registration, template) in zip(registrations, templates).reversed() where seen.insert(registration.id).inserted {
            rows.append((registration, template))
        }
        rows.reverse()
        let ids = rows.map { $0.0.id.rawValue }
        let platforms = rows.map { $0.0.platform.rawValue }
        let handles = rows.map { $0.0.handle.value }
        let owners = rows.map { $0.0.owner.stored.name }
        let ownerKinds = rows.map { $0.0.owner.stored.kind }
        let kinds = rows.map { $0.0.kind.stored }
        // Arrays hold no NULLs here: a flag says which values are absent.
        let templateTexts = rows.map { $0.1 ?? "" }
        let hasTemplate = rows.map { $0.1 != nil }
        let expiries = rows.map { $0.0.expiresAt?.secondsSinceEpoch ?? 0 }
        let hasExpiry = rows.map { $0.0.expiresAt != nil }
        let time = now.secondsSinceEpoch
        try await connection.query("DELETE FROM reserved_ids WHERE app = \(app) AND id = ANY(\(ids))", logger: logger)
        try await connection.query(
            """
            INSERT INTO registrations (app, id, platform, handle, owner, owner_kind, template, expires_at, created_at, updated_at, kind)
            SELECT \(app), r.id, r.platform, r.handle, r.owner, r.owner_kind, CASE WHEN r.has_template THEN r.template END,
                CASE WHEN r.has_expiry THEN r.expires_at END, \(time), \(time), r.kind
            FROM unnest(\(ids)::text[], \(platforms)::text[], \(handles)::text[], \(owners)::text[], \(ownerKinds)::integer[],
                \(templateTexts)::text[], \(hasTemplate)::boolean[], \(expiries)::double precision[], \(hasExpiry)::boolean[],
                \(kinds)::text[])
                AS r(id, platform, handle, owner, owner_kind, template, has_template, expires_at, has_expiry, kind)
            ON CONFLICT (app, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle, owner = excluded.owner,
                owner_kind = excluded.owner_kind, kind = excluded.kind,
                template = excluded.template, expires_at = excluded.expires_at, updated_at = excluded.updated_at
            """, logger: logger)
        try await connection.query("DELETE FROM registration_tags WHERE app = \(app) AND id = ANY(\(ids))", logger: logger)
        var tagIDs: [String] = []
        var tags: [String] = []
        for (registration, _) in rows {
            for tag in registration.tags {
                tagIDs.append(registration.id.rawValue)
                tags.append(tag.rawValue)
            }
        }
        if !tags.isEmpty {
            try await connection.query(
                """
                INSERT INTO registration_tags (app, tag, id) SELECT \(app), t.tag, t.id FROM unnest(\(tags)::text[], \(tagIDs)::text[]) AS t(tag, id)
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }

    public func registration(id: RegistrationID, app: AppID) async throws(StoreError) -> Registration? {
        let logger = self.logger
        return try await perform { connection in
            try await Self.load(ids: [id], app: app, connection: connection, logger: logger).first
        }
    }

    public func templates(of ids: [RegistrationID], app: AppID) async throws(StoreError) -> [RegistrationID: RegistrationTemplate] {
        guard !ids.isEmpty else { return [:] }
        let logger = self.logger
        let texts = ids.map(\.rawValue)
        return try await perform { connection in
            var found: [RegistrationID: RegistrationTemplate] = [:]
            for (id, text) in try await connection.query(
                "SELECT id, template FROM registrations WHERE app = \(app.rawValue) AND id = ANY(\(texts)) AND template IS NOT NULL",
                logger: logger
            ).all((String, String).self) {
                guard let id = try? RegistrationID(id),
                    let template = try? JSONDecoder().decode(RegistrationTemplate.self, from: Data(text.utf8))
                else { continue }
                found[id] = template
            }
            return found
        }
    }

    public func delete(id: RegistrationID, app: AppID) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await transaction { connection in
            let (app, id) = (app.rawValue, id.rawValue)
            try await connection.query("DELETE FROM reserved_ids WHERE app = \(app) AND id = \(id)", logger: logger)
            try await connection.query("DELETE FROM registration_tags WHERE app = \(app) AND id = \(id)", logger: logger)
            return
                !(try await connection.query("DELETE FROM registrations WHERE app = \(app) AND id = \(id) RETURNING 1", logger: logger)
                .collect().isEmpty)
        }
    }

    /// The audience query of a send, planned on `connection` (an `&&` counts its sides' tags).
    static func plan(
        _ selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, now: Timestamp, connection: PostgresConnection,
        logger: Logger
    ) async throws -> TagQuery {
        let expression = selector.expression
        var counts: [Tag: Int] = [:]
        // Only the sides of an `&&` are weighed: a tag or an OR of tags drives itself.
        func weighs(_ expression: TagExpression) -> Bool {
            switch expression {
            case .tag: false
            case .not(let inner): weighs(inner)
            case .and: true
            case .or(let lhs, let rhs): weighs(lhs) || weighs(rhs)
            }
        }
        if let expression, weighs(expression) {
            for tag in expression.tags where counts[tag] == nil {
                let count: Int =
                    try await connection.query(
                        """
                        SELECT count(*) FROM (SELECT 1 FROM registration_tags WHERE app = \(app.rawValue) AND tag = \(tag.rawValue)
                        LIMIT \(TagQuery.cardinalityCap)) AS capped
                        """, logger: logger
                    ).all(Int.self).first ?? 0
                counts[tag] = count
            }
        }
        return try TagQuery(selector: selector, platforms: platforms, app: app, now: now) { tag in counts[tag] ?? 0 }
    }

    /// The targets of `query` after `after`, at most `limit`.
    /// `prepared`: as a named prepared statement under these names (``PreparedSQL``; the outbox's
    /// pages of one audience repeat one text).
    static func targets(
        _ query: TagQuery, after: String, limit: Int, prepared: PreparedSQLNames? = nil, connection: PostgresConnection, logger: Logger
    ) async throws
        -> [DispatchTarget]
    {
        let (sql, values) = query.sql(after: after, limit: limit, withHandles: true, lateral: true)
        var targets: [DispatchTarget] = []
        // A page of a broadcast grows to its size; a send to one user stays small.
        targets.reserveCapacity(min(limit, 64))
        for row in try await connection.rows(sql, values, prepared: prepared, logger: logger) {
            let (text, platformText, handle) = try row.decode((String, String, String).self)
            guard let id = try? RegistrationID(text), let platform = Platform(rawValue: platformText) else { continue }
            targets.append(DispatchTarget(registrationID: id, handle: DeviceHandle(uncheckedPlatform: platform, value: handle)))
        }
        return targets
    }

    public func registrations(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, batchSize: Int, now: Timestamp,
        after start: RegistrationID?
    ) -> AsyncThrowingStream<[Registration], any Error> {
        let (batch, logger) = (max(1, batchSize), self.logger)
        let cursor = PageCursor()
        if let start { cursor.advance(past: start, full: true) }
        let planned = PlannedQuery()
        return AsyncThrowingStream(unfolding: {
            guard let after = cursor.position, !Task.isCancelled else { return nil }
            let page = try await self.perform { connection in
                let query = try await planned.query(
                    .anyKind(expression), platforms: platforms, app: app, now: now, connection: connection, logger: logger)
                let ids = try await Self.targets(query, after: after?.rawValue ?? "", limit: batch, connection: connection, logger: logger)
                    .map(\.registrationID)
                return (ids.last, ids.count, try await Self.load(ids: ids, app: app, connection: connection, logger: logger))
            }
            cursor.advance(past: page.0, full: page.1 == batch)
            return page.1 == 0 ? nil : page.2
        })
    }

    public func deliveryTargets(
        selecting selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, pageSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[DispatchTarget], any Error> {
        let (size, logger) = (max(1, pageSize), self.logger)
        let cursor = PageCursor()
        let planned = PlannedQuery()
        return AsyncThrowingStream(unfolding: {
            guard let after = cursor.position, !Task.isCancelled else { return nil }
            let page = try await self.perform { connection in
                let query = try await planned.query(
                    selector, platforms: platforms, app: app, now: now, connection: connection, logger: logger)
                return try await Self.targets(query, after: after?.rawValue ?? "", limit: size, connection: connection, logger: logger)
            }
            cursor.advance(past: page.last?.registrationID, full: page.count == size)
            return page.isEmpty ? nil : page
        })
    }

    /// One page of an audience query as the send path runs it, with PostgreSQL's plan of it as
    /// run (`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`): how tests show that a page's cost does not
    /// grow with the audience.
    package func explainPage(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, after: String, limit: Int, now: Timestamp
    ) async throws(StoreError) -> (ids: [RegistrationID], plan: String) {
        let logger = self.logger
        return try await perform { connection in
            let query = try await Self.plan(
                .devices(expression), platforms: platforms, app: app, now: now, connection: connection, logger: logger)
            let ids = try await Self.targets(query, after: after, limit: limit, connection: connection, logger: logger).map(
                \.registrationID)
            let (sql, values) = query.sql(after: after, limit: limit, withHandles: true, lateral: true)
            let plan = try await connection.query(
                dynamicQuery("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, values), logger: logger
            ).all(String.self).joined()
            return (ids, plan)
        }
    }

    public func apply(_ changes: [StoredHandleChange], app: AppID, now: Timestamp, events: HandleChangeEvents) async throws(StoreError) {
        guard !changes.isEmpty else { return }
        let logger = self.logger
        try await transaction { connection in
            let appText = app.rawValue
            for change in changes {
                let id = change.registrationID.rawValue
                // The webhook events of the change, written with it.
                if !events.subscriptions.subscribers.isEmpty,
                    let registration = try await Self.load(ids: [change.registrationID], app: app, connection: connection, logger: logger)
                        .first
                {
                    for row in events.rows(for: change, of: registration, now: now) {
                        try await connection.query(
                            """
                            INSERT INTO outbox_rows (app, notification_id, page, kind, body)
                            VALUES (\(appText), \(events.notificationID), 0, \(row.kind), \(row.body))
                            """, logger: logger)
                    }
                }
                switch change.change {
                case .remove:
                    guard
                        let registration = try await Self.load(
                            ids: [change.registrationID], app: app, connection: connection, logger: logger
                        ).first
                    else { continue }
                    try await connection.query(
                        """
                        INSERT INTO handle_removals (app, id, platform, handle, outcome, reason, removed_at)
                        VALUES (\(appText), \(id), \(registration.platform.rawValue), \(registration.handle.masked), \(change.outcome.rawValue),
                            \(change.reason), \(now.secondsSinceEpoch))
                        """, logger: logger)
                    try await connection.query("DELETE FROM registration_tags WHERE app = \(appText) AND id = \(id)", logger: logger)
                    try await connection.query("DELETE FROM registrations WHERE app = \(appText) AND id = \(id)", logger: logger)
                case .replace(let handle):
                    try await connection.query(
                        "UPDATE registrations SET handle = \(handle), updated_at = \(now.secondsSinceEpoch) WHERE app = \(appText) AND id = \(id)",
                        logger: logger)
                }
            }
        }
    }

    public func removals(app: AppID, limit: Int) async throws(StoreError) -> [HandleRemoval] {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                """
                SELECT id, platform, handle, outcome, reason, removed_at FROM handle_removals WHERE app = \(app.rawValue)
                ORDER BY sequence DESC LIMIT \(max(0, limit))
                """, logger: logger
            ).all((String, String, String, String, String?, Double).self).compactMap { row in
                guard let id = try? RegistrationID(row.0), let platform = Platform(rawValue: row.1) else { return nil }
                return HandleRemoval(
                    registrationID: id, platform: platform, handle: row.2, outcome: Outcome(rawValue: row.3), reason: row.4,
                    removedAt: Timestamp(secondsSinceEpoch: row.5))
            }
        }
    }

    /// Loads full registrations (with tags) for `ids`, in the order of `ids`.
    static func load(ids: [RegistrationID], app: AppID, connection: PostgresConnection, logger: Logger) async throws -> [Registration] {
        guard !ids.isEmpty else { return [] }
        let texts = ids.map(\.rawValue)
        var tags: [String: [Tag]] = [:]
        for (id, tag) in try await connection.query(
            "SELECT id, tag FROM registration_tags WHERE app = \(app.rawValue) AND id = ANY(\(texts)) ORDER BY id, tag", logger: logger
        ).all((String, String).self) {
            if let tag = try? Tag(tag) { tags[id, default: []].append(tag) }
        }
        var byID: [String: Registration] = [:]
        for row in try await connection.query(
            """
            SELECT id, platform, handle, owner, template, expires_at, owner_kind, kind FROM registrations
            WHERE app = \(app.rawValue) AND id = ANY(\(texts))
            """, logger: logger
        ).all((String, String, String, String, String?, Double?, Int, String).self) {
            guard let id = try? RegistrationID(row.0), let platform = Platform(rawValue: row.1),
                let kind = RegistrationKind(stored: row.7)
            else { continue }
            let template = row.4.flatMap { try? JSONDecoder().decode(RegistrationTemplate.self, from: Data($0.utf8)) }
            byID[row.0] = try? Registration(
                app: app, id: id, handle: DeviceHandle(uncheckedPlatform: platform, value: row.2), tags: tags[row.0] ?? [],
                template: template, expiresAt: row.5.map(Timestamp.init(secondsSinceEpoch:)),
                owner: RegistrationOwner(storedKind: row.6, name: row.3), kind: kind)
        }
        return ids.compactMap { byID[$0.rawValue] }
    }
}

/// A send's audience query, planned on its first page and reused for the rest.
final class PlannedQuery: Sendable {
    private let planned = Mutex<TagQuery?>(nil)

    func query(
        _ selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, now: Timestamp, connection: PostgresConnection,
        logger: Logger
    ) async throws -> TagQuery {
        if let query = planned.withLock({ $0 }) { return query }
        let query = try await PostgresStore.plan(
            selector, platforms: platforms, app: app, now: now, connection: connection, logger: logger)
        planned.withLock { $0 = query }
        return query
    }
}
