import Pushgate
import PushgateSQL

/// Writes registrations as they are: each one's row inserted or replaced, its tags replaced and
/// its reservation consumed. The one place the SQLite store writes a registration (an upsert, a
/// restore, an import); its statements are prepared once and reused for every row. Inside a
/// transaction, on the store's thread.
///
/// A new registration (most of an import) costs an insert of its row and of its tags: its row is
/// inserted first, and only when the id was already there is the row updated and its old tags
/// deleted; reservations are looked up only when the store holds any.
struct RegistrationWriter {
    private let connection: SQLiteConnection
    /// nil when no id is reserved (nothing to consume).
    private let deleteReservation: SQLiteStatement?
    private let insert: SQLiteStatement
    private let update: SQLiteStatement
    private let deleteTags: SQLiteStatement
    private let insertTag: SQLiteStatement

    init(_ connection: SQLiteConnection) throws(StoreError) {
        self.connection = connection
        // Inside the transaction no reservation can appear meanwhile.
        let reserved = try connection.prepare("SELECT 1 FROM reserved_ids LIMIT 1")
        deleteReservation = try reserved.step() ? try connection.prepare("DELETE FROM reserved_ids WHERE app = ? AND id = ?") : nil
        reserved.reset()
        insert = try connection.prepare(
            """
            INSERT INTO registrations (app, id, platform, handle, owner, owner_kind, template, expires_at, created_at, updated_at, kind)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app, id) DO NOTHING
            """)
        update = try connection.prepare(
            """
            UPDATE registrations SET platform = ?, handle = ?, owner = ?, owner_kind = ?, template = ?, expires_at = ?, updated_at = ?,
                kind = ?
            WHERE app = ? AND id = ?
            """)
        deleteTags = try connection.prepare("DELETE FROM registration_tags WHERE app = ? AND id = ?")
        insertTag = try connection.prepare("INSERT INTO registration_tags (app, tag, id) VALUES (?, ?, ?)")
    }

    /// Writes `registrations`, each with its template as stored (`templates`, in the same order).
    func write(_ registrations: [Registration], templates: [String?], now: Timestamp) throws(StoreError) {
        for (registration, template) in zip(registrations, templates) { try write(registration, template: template, now: now) }
    }

    /// Inserts or replaces `registration` and its tags, consuming its reservation. A replaced
    /// registration keeps its `created_at`.
    func write(_ registration: Registration, template: String?, now: Timestamp) throws(StoreError) {
        let app = SQLValue.text(registration.app.rawValue)
        let id = SQLValue.text(registration.id.rawValue)
        if let deleteReservation {
            deleteReservation.reset()
            try deleteReservation.bind([app, id]).run()
        }
        let platform = SQLValue.text(registration.platform.rawValue)
        let handle = SQLValue.text(registration.handle.value)
        let stored = registration.owner.stored
        let (owner, ownerKind) = (SQLValue.text(stored.name), SQLValue.integer(Int64(stored.kind)))
        let template = template.map(SQLValue.text) ?? .null
        let expiry = registration.expiresAt.map { SQLValue.real($0.secondsSinceEpoch) } ?? .null
        let time = SQLValue.real(now.secondsSinceEpoch)
        let kind = SQLValue.text(registration.kind.stored)
        insert.reset()
        try insert.bind([app, id, platform, handle, owner, ownerKind, template, expiry, time, time, kind]).run()
        if connection.changes == 0 {
            update.reset()
            try update.bind([platform, handle, owner, ownerKind, template, expiry, time, kind, app, id]).run()
            deleteTags.reset()
            try deleteTags.bind([app, id]).run()
        }
        for tag in registration.tags {
            insertTag.reset()
            try insertTag.bind([app, .text(tag.rawValue), id]).run()
        }
    }
}
