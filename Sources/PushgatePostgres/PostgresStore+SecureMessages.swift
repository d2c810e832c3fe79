import PostgresNIO
import Pushgate

extension PostgresStore: SecureMessageStore {
    public func storeSecureMessage(_ message: SecureMessage) async throws(StoreError) {
        let logger = self.logger
        try await transaction { connection in
            try await connection.query(
                "DELETE FROM secure_messages WHERE expires_at <= \(message.createdAt.secondsSinceEpoch)", logger: logger)
            try await connection.query(
                """
                INSERT INTO secure_messages (app, id, recipient, sender, payload, created_at, expires_at, read)
                VALUES (\(message.app.rawValue), \(message.id), \(message.recipient), \(message.sender), \(message.payload),
                    \(message.createdAt.secondsSinceEpoch), \(message.expiresAt.secondsSinceEpoch), false)
                """, logger: logger)
        }
    }

    public func readSecureMessage(id: String, app: AppID, recipient: String, now: Timestamp) async throws(StoreError) -> SecureMessage? {
        let logger = self.logger
        return try await transaction { connection in
            // The row as it was (`read` before this fetch), marked read in the same statement.
            let rows = try await connection.query(
                """
                WITH before AS (
                    SELECT sender, payload, created_at, expires_at, read FROM secure_messages
                    WHERE app = \(app.rawValue) AND id = \(id) AND recipient = \(recipient) AND expires_at > \(now.secondsSinceEpoch)
                    FOR UPDATE
                ), marked AS (
                    UPDATE secure_messages SET read = true WHERE app = \(app.rawValue) AND id = \(id) AND EXISTS (SELECT 1 FROM before)
                )
                SELECT sender, payload, created_at, expires_at, read FROM before
                """, logger: logger
            ).all((String, String, Double, Double, Bool).self)
            guard let row = rows.first else { return nil }
            return SecureMessage(
                id: id, app: app, recipient: recipient, sender: row.0, payload: row.1, createdAt: Timestamp(secondsSinceEpoch: row.2),
                expiresAt: Timestamp(secondsSinceEpoch: row.3), read: row.4)
        }
    }

    /// Secure messages stored for `app` (expired ones included until pruned): for tests.
    package func secureMessageCount(app: AppID) async throws(StoreError) -> Int {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query("SELECT count(*) FROM secure_messages WHERE app = \(app.rawValue)", logger: logger).all(Int.self)
                .first ?? 0
        }
    }
}
