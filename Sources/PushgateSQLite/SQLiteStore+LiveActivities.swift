import Pushgate
import PushgateSQL

/// Live Activities (each one's newest stamp, in a compare-and-set) and broadcast channels.
extension SQLiteStore: LiveActivityStore {
    static let activityColumns = "stamp, event, sends, immediate_sends, content_state, started_at, updated_at, ended_at, channel"

    public func stamp(_ key: LiveActivityKey, _ send: LiveActivityStamping) async throws(StoreError) -> LiveActivityRecord {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> LiveActivityRecord in
                let previous = try Self.activity(key, connection: connection)
                let record = try LiveActivityRecord.stamping(previous, key: key, send: send).get()
                let owner = key.owner.stored
                try connection.prepare(
                    """
                    INSERT INTO live_activities (app, owner_kind, owner, name, \(Self.activityColumns))
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app, owner_kind, owner, name) DO UPDATE SET stamp = excluded.stamp, event = excluded.event,
                        sends = excluded.sends, immediate_sends = excluded.immediate_sends, content_state = excluded.content_state,
                        started_at = excluded.started_at, updated_at = excluded.updated_at, ended_at = excluded.ended_at,
                        channel = excluded.channel
                    """
                ).bind([
                    .text(key.app.rawValue), .integer(Int64(owner.kind)), .text(owner.name), .text(key.name.rawValue),
                    .integer(record.stamp), .text(record.event.rawValue), .integer(Int64(record.sends)),
                    .integer(Int64(record.immediateSends)), record.contentState.map(SQLValue.text) ?? .null,
                    .real(record.startedAt.secondsSinceEpoch), .real(record.updatedAt.secondsSinceEpoch),
                    record.endedAt.map { .real($0.secondsSinceEpoch) } ?? .null, record.channel.map(SQLValue.text) ?? .null,
                ]).run()
                return record
            }
        }
    }

    public func activity(_ key: LiveActivityKey) async throws(StoreError) -> LiveActivityRecord? {
        try await run { connection throws(StoreError) in try Self.activity(key, connection: connection) }
    }

    static func activity(_ key: LiveActivityKey, connection: SQLiteConnection) throws(StoreError) -> LiveActivityRecord? {
        let owner = key.owner.stored
        let statement = try connection.prepare(
            "SELECT app, owner_kind, owner, name, \(activityColumns) FROM live_activities WHERE app = ? AND owner_kind = ? AND owner = ? AND name = ?"
        ).bind([.text(key.app.rawValue), .integer(Int64(owner.kind)), .text(owner.name), .text(key.name.rawValue)])
        return try statement.step() ? record(statement) : nil
    }

    static func record(_ statement: SQLiteStatement) -> LiveActivityRecord? {
        guard let app = statement.text(0).flatMap({ try? AppID($0) }), let name = statement.text(3).flatMap({ try? ActivityName($0) }),
            let event = statement.text(5).flatMap(LiveActivityEvent.init(rawValue:))
        else { return nil }
        return LiveActivityRecord(
            key: LiveActivityKey(
                app: app, owner: RegistrationOwner(storedKind: Int(statement.int64(1)), name: statement.text(2) ?? ""), name: name),
            stamp: statement.int64(4), event: event, sends: Int(statement.int64(6)), immediateSends: Int(statement.int64(7)),
            contentState: statement.text(8), startedAt: Timestamp(secondsSinceEpoch: statement.double(9) ?? 0),
            updatedAt: Timestamp(secondsSinceEpoch: statement.double(10) ?? 0),
            endedAt: statement.double(11).map(Timestamp.init(secondsSinceEpoch:)), channel: statement.text(12))
    }

    public func activities(app: AppID, owner: RegistrationOwner?, limit: Int) async throws(StoreError) -> [LiveActivityRecord] {
        try await run { connection throws(StoreError) in
            var sql = "SELECT app, owner_kind, owner, name, \(Self.activityColumns) FROM live_activities WHERE app = ?"
            var values: [SQLValue] = [.text(app.rawValue)]
            if let owner {
                sql += " AND owner_kind = ? AND owner = ?"
                values += [.integer(Int64(owner.stored.kind)), .text(owner.stored.name)]
            }
            let statement = try connection.prepare(sql + " ORDER BY updated_at DESC, name DESC LIMIT ?").bind(
                values + [.integer(Int64(limit))])
            var records: [LiveActivityRecord] = []
            while try statement.step() { if let record = Self.record(statement) { records.append(record) } }
            return records
        }
    }

    public func retireTokens(of key: LiveActivityKey, ids: [RegistrationID]) async throws(StoreError) -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Int in
                let owner = key.owner.stored
                let kind = RegistrationKind.liveActivity(name: key.name).stored
                let deleteTags = try connection.prepare("DELETE FROM registration_tags WHERE app = ? AND id = ?")
                let deleteRegistration = try connection.prepare(
                    "DELETE FROM registrations WHERE app = ? AND id = ? AND kind = ? AND owner_kind = ? AND owner = ?")
                var retired = 0
                for id in ids {
                    let (app, text) = (SQLValue.text(key.app.rawValue), SQLValue.text(id.rawValue))
                    deleteRegistration.reset()
                    try deleteRegistration.bind([app, text, .text(kind), .integer(Int64(owner.kind)), .text(owner.name)]).run()
                    guard connection.changes > 0 else { continue }
                    retired += 1
                    deleteTags.reset()
                    try deleteTags.bind([app, text]).run()
                }
                return retired
            }
        }
    }

    public func channels(app: AppID) async throws(StoreError) -> [APNSChannel] {
        try await run { connection throws(StoreError) in
            let statement = try connection.prepare(
                "SELECT name, channel_id, storage_policy, created_at FROM apns_channels WHERE app = ? ORDER BY name"
            ).bind([.text(app.rawValue)])
            var channels: [APNSChannel] = []
            while try statement.step() {
                channels.append(
                    APNSChannel(
                        app: app, name: statement.text(0) ?? "", channelID: statement.text(1) ?? "", storagePolicy: Int(statement.int64(2)),
                        createdAt: Timestamp(secondsSinceEpoch: statement.double(3) ?? 0)))
            }
            return channels
        }
    }

    public func addChannel(_ channel: APNSChannel, maximum: Int) async throws(StoreError) {
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                let app = SQLValue.text(channel.app.rawValue)
                let taken = try connection.prepare("SELECT 1 FROM apns_channels WHERE app = ? AND name = ?").bind([
                    app, .text(channel.name),
                ])
                if try taken.step() { throw APNSChannel.nameTaken(channel.name) }
                let count = try connection.prepare("SELECT count(*) FROM apns_channels WHERE app = ?").bind([app])
                if try count.step(), count.int64(0) >= maximum { throw APNSChannel.limitReached(maximum) }
                try connection.prepare(
                    "INSERT INTO apns_channels (app, name, channel_id, storage_policy, created_at) VALUES (?, ?, ?, ?, ?)"
                ).bind([
                    app, .text(channel.name), .text(channel.channelID), .integer(Int64(channel.storagePolicy)),
                    .real(channel.createdAt.secondsSinceEpoch),
                ]).run()
            }
        }
    }

    public func removeChannel(app: AppID, name: String) async throws(StoreError) -> Bool {
        try await run { connection throws(StoreError) in
            try connection.prepare("DELETE FROM apns_channels WHERE app = ? AND name = ?").bind([.text(app.rawValue), .text(name)]).run()
            return connection.changes > 0
        }
    }
}
