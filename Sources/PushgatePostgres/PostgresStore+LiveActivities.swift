import PostgresNIO
import Pushgate

/// Live Activities (each one's newest stamp, in a compare-and-set across instances) and broadcast
/// channels.
extension PostgresStore: LiveActivityStore {
    /// The advisory lock class of an activity's stamp (a row that does not exist yet has nothing
    /// `FOR UPDATE` could lock).
    static let activityLockClass: Int32 = 0x5047_5202
    static let activityColumns =
        "app, owner_kind, owner, name, stamp, event, sends, immediate_sends, content_state, started_at, updated_at, ended_at, channel"
    typealias ActivityRow = (String, Int, String, String, Int64, String, Int64, Int64, String?, Double, Double, Double?, String?)

    public func stamp(_ key: LiveActivityKey, _ send: LiveActivityStamping) async throws(StoreError) -> LiveActivityRecord {
        let logger = self.logger
        return try await transaction { connection in
            let owner = key.owner.stored
            _ = try await connection.query(
                """
                SELECT pg_advisory_xact_lock(\(Self.activityLockClass),
                    hashtext(\(key.app.rawValue) || '/' || \(owner.kind) || '/' || \(owner.name) || '/' || \(key.name.rawValue)))
                """, logger: logger
            ).collect()
            let previous = try await Self.activity(key, connection: connection, logger: logger)
            let record = try LiveActivityRecord.stamping(previous, key: key, send: send).get()
            try await connection.query(
                """
                INSERT INTO live_activities (\(unescaped: Self.activityColumns))
                VALUES (\(key.app.rawValue), \(owner.kind), \(owner.name), \(key.name.rawValue), \(record.stamp), \(record.event.rawValue),
                    \(Int64(record.sends)), \(Int64(record.immediateSends)), \(record.contentState), \(record.startedAt.secondsSinceEpoch),
                    \(record.updatedAt.secondsSinceEpoch), \(record.endedAt?.secondsSinceEpoch), \(record.channel))
                ON CONFLICT (app, owner_kind, owner, name) DO UPDATE SET stamp = excluded.stamp, event = excluded.event,
                    sends = excluded.sends, immediate_sends = excluded.immediate_sends, content_state = excluded.content_state,
                    started_at = excluded.started_at, updated_at = excluded.updated_at, ended_at = excluded.ended_at,
                    channel = excluded.channel
                """, logger: logger)
            return record
        }
    }

    public func activity(_ key: LiveActivityKey) async throws(StoreError) -> LiveActivityRecord? {
        let logger = self.logger
        return try await perform { connection in try await Self.activity(key, connection: connection, logger: logger) }
    }

    static func activity(_ key: LiveActivityKey, connection: PostgresConnection, logger: Logger) async throws -> LiveActivityRecord? {
        let owner = key.owner.stored
        return try await connection.query(
            """
            SELECT \(unescaped: activityColumns) FROM live_activities
            WHERE app = \(key.app.rawValue) AND owner_kind = \(owner.kind) AND owner = \(owner.name) AND name = \(key.name.rawValue)
            """, logger: logger
        ).all(ActivityRow.self).compactMap(record).first
    }

    static func record(_ row: ActivityRow) -> LiveActivityRecord? {
        guard let app = try? AppID(row.0), let name = try? ActivityName(row.3), let event = LiveActivityEvent(rawValue: row.5) else {
            return nil
        }
        return LiveActivityRecord(
            key: LiveActivityKey(app: app, owner: RegistrationOwner(storedKind: row.1, name: row.2), name: name), stamp: row.4,
            event: event, sends: Int(row.6), immediateSends: Int(row.7), contentState: row.8,
            startedAt: Timestamp(secondsSinceEpoch: row.9), updatedAt: Timestamp(secondsSinceEpoch: row.10),
            endedAt: row.11.map(Timestamp.init(secondsSinceEpoch:)), channel: row.12)
    }

    public func activities(app: AppID, owner: RegistrationOwner?, limit: Int) async throws(StoreError) -> [LiveActivityRecord] {
        let logger = self.logger
        return try await perform { connection in
            let stored = owner?.stored
            return try await connection.query(
                """
                SELECT \(unescaped: Self.activityColumns) FROM live_activities
                WHERE app = \(app.rawValue) AND (\(stored == nil) OR (owner_kind = \(stored?.kind ?? 0) AND owner = \(stored?.name ?? "")))
                ORDER BY updated_at DESC, name DESC LIMIT \(limit)
                """, logger: logger
            ).all(ActivityRow.self).compactMap(Self.record)
        }
    }

    public func retireTokens(of key: LiveActivityKey, ids retiring: [RegistrationID]) async throws(StoreError) -> Int {
        guard !retiring.isEmpty else { return 0 }
        let logger = self.logger
        let texts = retiring.map(\.rawValue)
        return try await transaction { connection in
            let owner = key.owner.stored
            let kind = RegistrationKind.liveActivity(name: key.name).stored
            let app = key.app.rawValue
            let ids = try await connection.query(
                """
                DELETE FROM registrations WHERE app = \(app) AND id = ANY(\(texts)) AND kind = \(kind) AND owner_kind = \(owner.kind)
                    AND owner = \(owner.name)
                RETURNING id
                """, logger: logger
            ).all(String.self)
            if !ids.isEmpty {
                try await connection.query("DELETE FROM registration_tags WHERE app = \(app) AND id = ANY(\(ids))", logger: logger)
            }
            return ids.count
        }
    }

    public func channels(app: AppID) async throws(StoreError) -> [APNSChannel] {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query(
                "SELECT name, channel_id, storage_policy, created_at FROM apns_channels WHERE app = \(app.rawValue) ORDER BY name",
                logger: logger
            ).all((String, String, Int, Double).self).map {
                APNSChannel(app: app, name: $0.0, channelID: $0.1, storagePolicy: $0.2, createdAt: Timestamp(secondsSinceEpoch: $0.3))
            }
        }
    }

    public func addChannel(_ channel: APNSChannel, maximum: Int) async throws(StoreError) {
        let logger = self.logger
        try await transaction { connection in
            let app = channel.app.rawValue
            // One app's channel writes take turns: the count and the insert see the same rows.
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(\(Self.activityLockClass), hashtext('channels/' || \(app)))", logger: logger
            ).collect()
            let taken = try await connection.query(
                "SELECT 1 FROM apns_channels WHERE app = \(app) AND name = \(channel.name)", logger: logger
            ).collect()
            if !taken.isEmpty { throw APNSChannel.nameTaken(channel.name) }
            let count =
                try await connection.query("SELECT count(*) FROM apns_channels WHERE app = \(app)", logger: logger).all(Int.self).first ?? 0
            if count >= maximum { throw APNSChannel.limitReached(maximum) }
            try await connection.query(
                """
                INSERT INTO apns_channels (app, name, channel_id, storage_policy, created_at)
                VALUES (\(app), \(channel.name), \(channel.channelID), \(channel.storagePolicy), \(channel.createdAt.secondsSinceEpoch))
                """, logger: logger)
        }
    }

    public func removeChannel(app: AppID, name: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await perform { connection in
            !(try await connection.query(
                "DELETE FROM apns_channels WHERE app = \(app.rawValue) AND name = \(name) RETURNING 1", logger: logger
            ).collect().isEmpty)
        }
    }
}
