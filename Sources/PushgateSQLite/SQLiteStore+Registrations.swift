import Dispatch
import Foundation
import Pushgate
import PushgateSQL
import Synchronization

/// The registration store on the SQLite connection: reservations, writes checked against their
/// writer in the write's own transaction (group-committed), reads, the audience walk in pages,
/// and the handle changes the push services ask for.
extension SQLiteStore {
    public func createRegistrationID(
        app: AppID, owner: String, maximumReserved: Int, lifetime: Double?, now: Timestamp
    ) async throws(StoreError)
        -> RegistrationID
    {
        let id = RegistrationID.random()
        let expiry = now.secondsSinceEpoch + (lifetime ?? reservationLifetime)
        try await groupCommit.perform(on: self) { connection throws(StoreError) in
            try connection.prepare("DELETE FROM reserved_ids WHERE app = ? AND expires_at <= ?").bind([
                .text(app.rawValue), .real(now.secondsSinceEpoch),
            ]).run()
            let count = try connection.prepare(
                "SELECT count(*) FROM (SELECT 1 FROM reserved_ids WHERE app = ? AND owner = ? LIMIT ?)")
            try count.bind([.text(app.rawValue), .text(owner), .integer(Int64(min(maximumReserved, Int(Int32.max))))])
            if try count.step(), count.int64(0) >= maximumReserved { throw StoreError.tooManyReservations(maximumReserved) }
            try connection.prepare("INSERT INTO reserved_ids (app, id, expires_at, owner) VALUES (?, ?, ?, ?)")
                .bind([.text(app.rawValue), .text(id.rawValue), .real(expiry), .text(owner)]).run()
        }
        return id
    }

    public func registrationIDs(handle: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        try await run { connection throws(StoreError) in
            let statement = try connection.prepare("SELECT id FROM registrations WHERE app = ? AND handle = ? ORDER BY id")
            try statement.bind([.text(app.rawValue), .text(handle)])
            var ids: [RegistrationID] = []
            while try statement.step() {
                if let text = statement.text(0), let id = try? RegistrationID(text) { ids.append(id) }
            }
            return ids
        }
    }

    public func registrationIDs(handlePrefix: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        // A range of the (app, handle) index: text compares byte for byte (BINARY).
        guard let upper = TextPrefix.upperBound(handlePrefix) else { return [] }
        return try await run { connection throws(StoreError) in
            let statement = try connection.prepare("SELECT id FROM registrations WHERE app = ? AND handle >= ? AND handle < ? ORDER BY id")
            try statement.bind([.text(app.rawValue), .text(handlePrefix), .text(upper)])
            var ids: [RegistrationID] = []
            while try statement.step() {
                if let text = statement.text(0), let id = try? RegistrationID(text) { ids.append(id) }
            }
            return ids
        }
    }

    public func upsert(_ registration: Registration, now: Timestamp, writer: WriterGuard?) async throws(StoreError) {
        let template = try registration.encodedTemplate()
        let upperBounds = writer?.handlePrefixes.map(TextPrefix.upperBound) ?? []
        // Concurrent upserts (every app start registers) share one transaction and one fsync.
        try await groupCommit.perform(on: self) { connection throws(StoreError) in
            let app = SQLValue.text(registration.app.rawValue)
            let id = SQLValue.text(registration.id.rawValue)
            let owner = try connection.prepare("SELECT owner, owner_kind FROM registrations WHERE app = ? AND id = ?").bind([app, id])
            let exists = try owner.step()
            if let writer {
                let idOwner = exists ? RegistrationOwner(storedKind: Int(owner.int64(1)), name: owner.text(0) ?? "") : nil
                // Another user's registration holding the handle (or one of the endpoint's
                // subscriptions): the holders read through the (app, handle) index and compared
                // here. The index is named: `owner` is not in it, and without statistics SQLite
                // then takes the primary key's `app = ?`, a scan of the app (0.7 s a write at
                // 1,000,000 registrations).
                func heldByAnother(_ statement: SQLiteStatement) throws(StoreError) -> Bool {
                    while try statement.step() {
                        let holder = RegistrationOwner(storedKind: Int(statement.int64(2)), name: statement.text(1) ?? "")
                        if statement.text(0) != registration.id.rawValue && !holder.isUser(writer.owner) { return true }
                    }
                    return false
                }
                let holders = "SELECT id, owner, owner_kind FROM registrations INDEXED BY registrations_by_handle WHERE app = ?"
                var held = try heldByAnother(try connection.prepare(holders + " AND handle = ?").bind([app, .text(writer.handle)]))
                for (prefix, upper) in zip(writer.handlePrefixes, upperBounds) where !held {
                    guard let upper else { continue }
                    let range = try connection.prepare(holders + " AND handle >= ? AND handle < ?")
                    held = try heldByAnother(try range.bind([app, .text(prefix), .text(upper)]))
                }
                if let refusal = writer.refusal(id: registration.id, idOwner: idOwner, handleHeldByAnother: held) { throw refusal }
            }
            if !exists {
                if let writer, let cap = writer.maximumRegistrations {
                    let count = try connection.prepare(
                        "SELECT count(*) FROM (SELECT 1 FROM registration_tags WHERE app = ? AND tag = ? LIMIT ?)"
                    ).bind([app, .text(writer.ownTag), .integer(Int64(cap))])
                    _ = try count.step()
                    if let refusal = writer.refusal(registrationsTagged: Int(count.int64(0))) { throw refusal }
                }
                let reservation = try connection.prepare("SELECT owner FROM reserved_ids WHERE app = ? AND id = ? AND expires_at > ?")
                    .bind([app, id, .real(now.secondsSinceEpoch)])
                guard try reservation.step() else { throw StoreError.gone(registration.id) }
                if let refusal = writer?.refusal(id: registration.id, reservedBy: reservation.text(0) ?? "") { throw refusal }
            }
            try RegistrationWriter(connection).write(registration, template: template, now: now)
        }
    }

    public func restore(_ registrations: [Registration], now: Timestamp) async throws(StoreError) {
        // Nothing removed: the app does not matter.
        try await replace(registrations, removing: [], app: .default, now: now)
    }

    public func replace(_ registrations: [Registration], removing: [RegistrationID], app: AppID, now: Timestamp) async throws(StoreError) {
        let templates = try registrations.encodedTemplates()
        try await run { [templates] connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try RegistrationWriter(connection).write(registrations, templates: templates, now: now)
                for id in removing {
                    let values: [SQLValue] = [.text(app.rawValue), .text(id.rawValue)]
                    try connection.prepare("DELETE FROM reserved_ids WHERE app = ? AND id = ?").bind(values).run()
                    try connection.prepare("DELETE FROM registration_tags WHERE app = ? AND id = ?").bind(values).run()
                    try connection.prepare("DELETE FROM registrations WHERE app = ? AND id = ?").bind(values).run()
                }
            }
        }
    }

    public func write(_ write: HubWrite, now: Timestamp) async throws(StoreError) {
        let templates = try write.registrations.encodedTemplates()
        try await run { [templates] connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                let app = SQLValue.text(write.app.rawValue)
                let read = Array(write.expected.keys)
                let stored = Dictionary(
                    try Self.load(ids: read, app: write.app, connection: connection).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
                for id in read {
                    if let refusal = write.refusal(id: id, stored: stored[id]) { throw refusal }
                }
                let exists = try connection.prepare("SELECT 1 FROM registrations WHERE app = ? AND id = ?")
                let reservation = try connection.prepare("SELECT owner FROM reserved_ids WHERE app = ? AND id = ? AND expires_at > ?")
                for registration in write.registrations {
                    let id = SQLValue.text(registration.id.rawValue)
                    exists.reset()
                    guard !(try exists.bind([app, id]).step()) else { continue }
                    reservation.reset()
                    guard try reservation.bind([app, id, .real(now.secondsSinceEpoch)]).step() else { continue }
                    if let refusal = write.refusal(id: registration.id, reservedBy: reservation.text(0) ?? "") { throw refusal }
                }
                try RegistrationWriter(connection).write(write.registrations, templates: templates, now: now)
                for id in write.removing {
                    let values: [SQLValue] = [app, .text(id.rawValue)]
                    try connection.prepare("DELETE FROM reserved_ids WHERE app = ? AND id = ?").bind(values).run()
                    try connection.prepare("DELETE FROM registration_tags WHERE app = ? AND id = ?").bind(values).run()
                    try connection.prepare("DELETE FROM registrations WHERE app = ? AND id = ?").bind(values).run()
                }
            }
        }
    }

    public func registration(id: RegistrationID, app: AppID) async throws(StoreError) -> Registration? {
        try await run { connection throws(StoreError) in
            try Self.load(ids: [id], app: app, connection: connection).first
        }
    }

    /// A page's templates in one trip to the store's thread: one primary-key lookup per id on a
    /// prepared statement (a native hub send asks this for every page it sends).
    public func templates(of ids: [RegistrationID], app: AppID) async throws(StoreError) -> [RegistrationID: RegistrationTemplate] {
        guard !ids.isEmpty else { return [:] }
        return try await run { connection throws(StoreError) in
            var found: [RegistrationID: RegistrationTemplate] = [:]
            let statement = try connection.prepare(
                "SELECT template FROM registrations WHERE app = ? AND id = ? AND template IS NOT NULL")
            for id in ids {
                statement.reset()
                try statement.bind([.text(app.rawValue), .text(id.rawValue)])
                guard try statement.step(), let text = statement.text(0),
                    let template = try? JSONDecoder().decode(RegistrationTemplate.self, from: Data(text.utf8))
                else { continue }
                found[id] = template
            }
            return found
        }
    }

    public func registrationCount(app: AppID, upTo limit: Int) async throws(StoreError) -> Int {
        try await run { connection throws(StoreError) in
            let count = try connection.prepare("SELECT count(*) FROM (SELECT 1 FROM registrations WHERE app = ? LIMIT ?)")
            guard try count.bind([.text(app.rawValue), .integer(Int64(limit))]).step() else { return 0 }
            return Int(count.int64(0))
        }
    }

    public func delete(id: RegistrationID, app: AppID) async throws(StoreError) -> Bool {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                let values: [SQLValue] = [.text(app.rawValue), .text(id.rawValue)]
                try connection.prepare("DELETE FROM reserved_ids WHERE app = ? AND id = ?").bind(values).run()
                let existed = try connection.prepare("SELECT 1 FROM registrations WHERE app = ? AND id = ?").bind(values).step()
                try connection.prepare("DELETE FROM registration_tags WHERE app = ? AND id = ?").bind(values).run()
                try connection.prepare("DELETE FROM registrations WHERE app = ? AND id = ?").bind(values).run()
                return existed
            }
        }
    }

    public func registrations(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, batchSize: Int, now: Timestamp,
        after start: RegistrationID?
    ) -> AsyncThrowingStream<[Registration], any Error> {
        let batch = max(1, batchSize)
        return AsyncThrowingStream { continuation in
            // The stream's producer: it ends after the last page or a failure, or when the reader
            // stops or drops the stream (`onTermination` below cancels it).
            let task = Task {
                var after = start?.rawValue ?? ""
                do {
                    let query = try await self.run { connection throws(StoreError) in
                        try TagQuery(selector: .anyKind(expression), platforms: platforms, app: app, now: now, connection: connection)
                    }
                    while !Task.isCancelled {
                        let cursor = after
                        let page = try await self.run { connection throws(StoreError) in
                            let ids = try query.ids(after: cursor, limit: batch, connection: connection)
                            return try Self.load(ids: ids, app: app, connection: connection)
                        }
                        if page.isEmpty { break }
                        continuation.yield(page)
                        if page.count < batch { break }
                        after = page.last!.id.rawValue
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func deliveryTargets(
        selecting selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, pageSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[DispatchTarget], any Error> {
        let size = max(1, pageSize)
        let cursor = PageCursor()
        // Planned once, on the first page (an `&&` counts its sides' tags), then reused.
        let plan = PlannedQuery()
        return AsyncThrowingStream(unfolding: {
            guard let after = cursor.position, !Task.isCancelled else { return nil }
            let planned = plan.query.withLock { $0 }
            let (query, page) = try await self.run { connection throws(StoreError) in
                let query: TagQuery
                if let planned {
                    query = planned
                } else {
                    query = try TagQuery(selector: selector, platforms: platforms, app: app, now: now, connection: connection)
                }
                return (query, try query.targets(after: after?.rawValue ?? "", limit: size, connection: connection))
            }
            plan.query.withLock { $0 = query }
            cursor.advance(past: page.last?.registrationID, full: page.count == size)
            return page.isEmpty ? nil : page
        })
    }

    /// One page of an audience query as the send path runs it, with SQLite's count of the work it
    /// took and its query plan: how tests show that a page's cost does not grow with the audience.
    package func explainPage(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, after: String, limit: Int, now: Timestamp
    ) async throws(StoreError) -> (ids: [RegistrationID], virtualMachineSteps: Int, plan: [String]) {
        try await run { connection throws(StoreError) in
            let query = try TagQuery(selector: .devices(expression), platforms: platforms, app: app, now: now, connection: connection)
            let (sql, values) = query.sql(after: after, limit: limit, withHandles: true)
            let statement = try connection.prepare(sql)
            try statement.bind(values)
            _ = statement.takeVirtualMachineSteps()
            var ids: [RegistrationID] = []
            while try statement.step() {
                if let text = statement.text(0), let id = try? RegistrationID(text) { ids.append(id) }
            }
            let steps = statement.takeVirtualMachineSteps()
            let explain = try connection.prepare("EXPLAIN QUERY PLAN " + sql)
            try explain.bind(values)
            var plan: [String] = []
            while try explain.step() { plan.append(explain.text(3) ?? "") }
            return (ids, steps, plan)
        }
    }

    public func apply(_ changes: [StoredHandleChange], app: AppID, now: Timestamp, events: HandleChangeEvents) async throws(StoreError) {
        guard !changes.isEmpty else { return }
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                for change in changes {
                    let values: [SQLValue] = [.text(app.rawValue), .text(change.registrationID.rawValue)]
                    // The webhook events of the change, written with it (the table's CHECK refuses an oversized one).
                    if !events.subscriptions.subscribers.isEmpty,
                        let registration = try Self.load(ids: [change.registrationID], app: app, connection: connection).first
                    {
                        for row in events.rows(for: change, of: registration, now: now) {
                            try connection.prepare(
                                "INSERT INTO outbox_rows (app, notification_id, page, kind, body) VALUES (?, ?, 0, ?, ?)"
                            )
                            .bind([.text(app.rawValue), .text(events.notificationID), .text(row.kind), .text(row.body)]).run()
                        }
                    }
                    switch change.change {
                    case .remove:
                        guard let registration = try Self.load(ids: [change.registrationID], app: app, connection: connection).first else {
                            continue
                        }
                        try connection.prepare(
                            "INSERT INTO handle_removals (app, id, platform, handle, outcome, reason, removed_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                        ).bind(
                            values + [
                                .text(registration.platform.rawValue), .text(registration.handle.masked), .text(change.outcome.rawValue),
                                change.reason.map(SQLValue.text) ?? .null, .real(now.secondsSinceEpoch),
                            ]
                        ).run()
                        try connection.prepare("DELETE FROM registration_tags WHERE app = ? AND id = ?").bind(values).run()
                        try connection.prepare("DELETE FROM registrations WHERE app = ? AND id = ?").bind(values).run()
                    case .replace(let handle):
                        try connection.prepare("UPDATE registrations SET handle = ?, updated_at = ? WHERE app = ? AND id = ?")
                            .bind([.text(handle), .real(now.secondsSinceEpoch)] + values).run()
                    }
                }
            }
        }
    }

    public func removals(app: AppID, limit: Int) async throws(StoreError) -> [HandleRemoval] {
        try await run { connection throws(StoreError) in
            let statement = try connection.prepare(
                "SELECT id, platform, handle, outcome, reason, removed_at FROM handle_removals WHERE app = ? ORDER BY sequence DESC LIMIT ?"
            )
            try statement.bind([.text(app.rawValue), .integer(Int64(limit))])
            var result: [HandleRemoval] = []
            while try statement.step() {
                guard let id = statement.text(0).flatMap({ try? RegistrationID($0) }),
                    let platform = statement.text(1).flatMap(Platform.init(rawValue:))
                else { continue }
                result.append(
                    HandleRemoval(
                        registrationID: id, platform: platform, handle: statement.text(2) ?? "",
                        outcome: Outcome(rawValue: statement.text(3) ?? ""),
                        reason: statement.text(4), removedAt: Timestamp(secondsSinceEpoch: statement.double(5) ?? 0)))
            }
            return result
        }
    }

    // MARK: Loading

    /// Loads full registrations (with tags) for `ids`, in the order of `ids`.
    static func load(ids: [RegistrationID], app: AppID, connection: SQLiteConnection) throws(StoreError) -> [Registration] {
        guard !ids.isEmpty else { return [] }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        let values: [SQLValue] = [.text(app.rawValue)] + ids.map { .text($0.rawValue) }
        var tags: [String: [Tag]] = [:]
        let tagStatement = try connection.prepare("SELECT id, tag FROM registration_tags WHERE app = ? AND id IN (\(placeholders))")
        try tagStatement.bind(values)
        while try tagStatement.step() {
            if let id = tagStatement.text(0), let tag = tagStatement.text(1).flatMap({ try? Tag($0) }) { tags[id, default: []].append(tag) }
        }
        let statement = try connection.prepare(
            "SELECT id, platform, handle, owner, template, expires_at, owner_kind, kind FROM registrations WHERE app = ? AND id IN (\(placeholders))"
        )
        try statement.bind(values)
        var byID: [String: Registration] = [:]
        while try statement.step() {
            guard let text = statement.text(0), let id = try? RegistrationID(text),
                let platform = statement.text(1).flatMap(Platform.init(rawValue:)),
                let handle = statement.text(2), let kind = RegistrationKind(stored: statement.text(7) ?? "")
            else { continue }
            let template = statement.text(4).flatMap { try? JSONDecoder().decode(RegistrationTemplate.self, from: Data($0.utf8)) }
            let registration = try? Registration(
                app: app, id: id, handle: DeviceHandle(uncheckedPlatform: platform, value: handle), tags: tags[text] ?? [],
                template: template,
                expiresAt: statement.double(5).map(Timestamp.init(secondsSinceEpoch:)),
                owner: RegistrationOwner(storedKind: Int(statement.int64(6)), name: statement.text(3) ?? ""), kind: kind)
            byID[text] = registration
        }
        return ids.compactMap { byID[$0.rawValue] }
    }
}

/// A send's audience query, planned on its first page and reused for the rest.
private final class PlannedQuery: Sendable {
    let query = Mutex<TagQuery?>(nil)
}
