import Pushgate
import PushgateSQL

extension TagQuery {
    /// Plans the query on `connection`, counting tags in its index.
    init(
        selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, now: Timestamp, connection: SQLiteConnection
    ) throws(StoreError) {
        try self.init(selector: selector, platforms: platforms, app: app, now: now) { (tag) throws(StoreError) in
            try Self.count(tag, app: app, connection: connection)
        }
    }

    func ids(after: String, limit: Int, connection: SQLiteConnection) throws(StoreError) -> [RegistrationID] {
        let (sql, values) = sql(after: after, limit: limit)
        let statement = try connection.prepare(sql)
        try statement.bind(values)
        var ids: [RegistrationID] = []
        while try statement.step() {
            if let text = statement.text(0), let id = try? RegistrationID(text) { ids.append(id) }
        }
        return ids
    }

    /// The delivery targets after `after`: what ``ids(after:limit:connection:)`` lists, with the
    /// handles read in the same walk (a send needs nothing else of a registration).
    func targets(after: String, limit: Int, connection: SQLiteConnection) throws(StoreError) -> [DispatchTarget] {
        let (sql, values) = sql(after: after, limit: limit, withHandles: true)
        let statement = try connection.prepare(sql)
        try statement.bind(values)
        var targets: [DispatchTarget] = []
        // A page of a broadcast grows to its size; a send to one user stays small.
        targets.reserveCapacity(min(limit, 64))
        while try statement.step() {
            guard let text = statement.text(0), let id = try? RegistrationID(text),
                let platform = statement.text(1).flatMap(Platform.init(rawValue:)), let handle = statement.text(2)
            else { continue }
            targets.append(DispatchTarget(registrationID: id, handle: DeviceHandle(uncheckedPlatform: platform, value: handle)))
        }
        return targets
    }

    /// How many registrations of `app` carry `tag`, counted in the tag index up to ``cardinalityCap``.
    static func count(_ tag: Tag, app: AppID, connection: SQLiteConnection) throws(StoreError) -> Int {
        let statement = try connection.prepare(
            "SELECT count(*) FROM (SELECT 1 FROM registration_tags WHERE app = ? AND tag = ? LIMIT ?) AS capped")
        try statement.bind([.text(app.rawValue), .text(tag.rawValue), .integer(Int64(cardinalityCap))])
        guard try statement.step() else { return 0 }
        return Int(statement.int64(0))
    }
}
