import Pushgate

/// A tag expression as SQL over `registrations r`, with keyset pagination by id.
///
/// Each tag becomes `EXISTS (… registration_tags …)` (an index lookup on `(app, id, tag)`). When
/// every match must carry one of a set of tags (`a && (b || c)` → any match has `a`), the query is
/// also driven by the tag index `(app, tag, id)`, so its cost follows the number of matching
/// registrations rather than the size of the app.
struct TagQuery: Sendable {
    /// nil: every registration.
    let expression: TagExpression?
    let platforms: PlatformSelection
    let app: AppID
    let now: Timestamp

    func ids(after: String, limit: Int, connection: SQLiteConnection) throws(StoreError) -> [RegistrationID] {
        var values: [SQLiteValue] = [.text(app.rawValue), .text(after), .real(now.secondsSinceEpoch)]
        var sql = "SELECT r.id FROM registrations r WHERE r.app = ? AND r.id > ? AND (r.expires_at IS NULL OR r.expires_at > ?)"
        let platformList = platforms.platforms
        sql += " AND r.platform IN (\(Array(repeating: "?", count: platformList.count).joined(separator: ",")))"
        values += platformList.map { .text($0.rawValue) }
        if let expression, let required = Self.requiredTags(expression) {
            sql +=
                " AND r.id IN (SELECT t.id FROM registration_tags t WHERE t.app = r.app AND t.tag IN (\(Array(repeating: "?", count: required.count).joined(separator: ","))))"
            values += required.map { .text($0.rawValue) }
        }
        if let expression { sql += " AND " + Self.condition(expression, values: &values) }
        sql += " ORDER BY r.id LIMIT ?"
        values.append(.integer(Int64(limit)))
        let statement = try connection.prepare(sql)
        try statement.bind(values)
        var ids: [RegistrationID] = []
        while try statement.step() {
            if let text = statement.text(0), let id = try? RegistrationID(text) { ids.append(id) }
        }
        return ids
    }

    static func condition(_ expression: TagExpression, values: inout [SQLiteValue]) -> String {
        switch expression {
        case .tag(let tag):
            values.append(.text(tag.rawValue))
            return "EXISTS (SELECT 1 FROM registration_tags x WHERE x.app = r.app AND x.id = r.id AND x.tag = ?)"
        case .not(let inner):
            return "NOT (\(condition(inner, values: &values)))"
        case .and(let lhs, let rhs):
            return "(\(condition(lhs, values: &values)) AND \(condition(rhs, values: &values)))"
        case .or(let lhs, let rhs):
            return "(\(condition(lhs, values: &values)) OR \(condition(rhs, values: &values)))"
        }
    }

    /// Tags of which every match carries at least one, or nil when there is no such set (`!a`).
    static func requiredTags(_ expression: TagExpression) -> [Tag]? {
        switch expression {
        case .tag(let tag): return [tag]
        case .not: return nil
        case .or(let lhs, let rhs):
            guard let left = requiredTags(lhs), let right = requiredTags(rhs) else { return nil }
            return Array(Set(left + right)).sorted()
        case .and(let lhs, let rhs):
            switch (requiredTags(lhs), requiredTags(rhs)) {
            case (let left?, let right?): return left.count <= right.count ? left : right
            case (let left?, nil): return left
            case (nil, let right?): return right
            case (nil, nil): return nil
            }
        }
    }
}
