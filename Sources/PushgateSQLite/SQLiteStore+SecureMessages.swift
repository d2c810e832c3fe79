import Pushgate
import PushgateSQL

/// Secure-push payloads: stored for their recipient until they expire.
extension SQLiteStore: SecureMessageStore {
    public func storeSecureMessage(_ message: SecureMessage) async throws(StoreError) {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try connection.prepare("DELETE FROM secure_messages WHERE expires_at <= ?").bind([
                    .real(message.createdAt.secondsSinceEpoch)
                ]).run()
                try connection.prepare(
                    "INSERT INTO secure_messages (app, id, recipient, sender, payload, created_at, expires_at, read) VALUES (?, ?, ?, ?, ?, ?, ?, 0)"
                ).bind([
                    .text(message.app.rawValue), .text(message.id), .text(message.recipient), .text(message.sender), .text(message.payload),
                    .real(message.createdAt.secondsSinceEpoch), .real(message.expiresAt.secondsSinceEpoch),
                ]).run()
            }
        }
    }

    /// Secure messages stored for `app` (expired ones included until pruned): for tests.
    package func secureMessageCount(app: AppID) async throws(StoreError) -> Int {
        try await run { connection throws(StoreError) in
            let statement = try connection.prepare("SELECT count(*) FROM secure_messages WHERE app = ?")
            try statement.bind([.text(app.rawValue)])
            return try statement.step() ? Int(statement.int64(0)) : 0
        }
    }

    public func readSecureMessage(id: String, app: AppID, recipient: String, now: Timestamp) async throws(StoreError) -> SecureMessage? {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> SecureMessage? in
                let values: [SQLValue] = [.text(app.rawValue), .text(id), .text(recipient), .real(now.secondsSinceEpoch)]
                let statement = try connection.prepare(
                    "SELECT sender, payload, created_at, expires_at, read FROM secure_messages WHERE app = ? AND id = ? AND recipient = ? AND expires_at > ?"
                )
                try statement.bind(values)
                guard try statement.step() else { return nil }
                let message = SecureMessage(
                    id: id, app: app, recipient: recipient, sender: statement.text(0) ?? "", payload: statement.text(1) ?? "",
                    createdAt: Timestamp(secondsSinceEpoch: statement.double(2) ?? 0),
                    expiresAt: Timestamp(secondsSinceEpoch: statement.double(3) ?? 0),
                    read: statement.int64(4) != 0)
                try connection.prepare("UPDATE secure_messages SET read = 1 WHERE app = ? AND id = ?").bind([
                    .text(app.rawValue), .text(id),
                ]).run()
                return message
            }
        }
    }
}
