import PostgresNIO
import Pushgate

/// The hub API's writes (a compare-and-set of what its rules read, ``HubWrite``) and the count
/// behind a hub's device quota.
extension PostgresStore {
    public func write(_ write: HubWrite, now: Timestamp) async throws(StoreError) {
        let templates = try write.registrations.encodedTemplates()
        let logger = self.logger
        let app = write.app.rawValue
        try await transaction { [templates] connection in
            // Writers of one id take turns, as in an upsert: a row that does not exist yet has
            // nothing `FOR UPDATE` could lock. In id order, so two writes never wait on each other.
            let touched = Set(write.expected.keys).union(write.registrations.map(\.id)).union(write.removing).sorted()
            for id in touched {
                _ = try await connection.query(
                    "SELECT pg_advisory_xact_lock(\(Self.registrationLockClass), hashtext(\(app) || '/' || \(id.rawValue)))", logger: logger
                ).collect()
            }
            let read = Array(write.expected.keys)
            let stored = Dictionary(
                try await Self.load(ids: read, app: write.app, connection: connection, logger: logger).map { ($0.id, $0) },
                uniquingKeysWith: { a, _ in a })
            for id in read {
                if let refusal = write.refusal(id: id, stored: stored[id]) { throw refusal }
            }
            let written = write.registrations.map(\.id.rawValue)
            if !written.isEmpty {
                let reservations = try await connection.query(
                    """
                    SELECT r.id, r.owner FROM reserved_ids r WHERE r.app = \(app) AND r.id = ANY(\(written))
                        AND r.expires_at > \(now.secondsSinceEpoch)
                        AND NOT EXISTS (SELECT 1 FROM registrations g WHERE g.app = r.app AND g.id = r.id)
                    """, logger: logger
                ).all((String, String).self)
                for (id, reserver) in reservations {
                    guard let id = try? RegistrationID(id) else { continue }
                    if let refusal = write.refusal(id: id, reservedBy: reserver) { throw refusal }
                }
            }
            try await Self.write(write.registrations, templates: templates, now: now, connection: connection, logger: logger)
            let ids = write.removing.map(\.rawValue)
            guard !ids.isEmpty else { return }
            try await connection.query("DELETE FROM reserved_ids WHERE app = \(app) AND id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM registration_tags WHERE app = \(app) AND id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM registrations WHERE app = \(app) AND id = ANY(\(ids))", logger: logger)
        }
    }

    public func registrationCount(app: AppID, upTo limit: Int) async throws(StoreError) -> Int {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                "SELECT count(*) FROM (SELECT 1 FROM registrations WHERE app = \(app.rawValue) LIMIT \(limit)) AS counted", logger: logger
            ).all(Int.self).first ?? 0
        }
    }
}
