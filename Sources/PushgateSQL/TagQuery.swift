import Pushgate

/// A tag expression as SQL over `registrations r`, paged by id (keyset pagination), at a cost per
/// page that follows the page size, not the size of the audience.
///
/// The walk is driven from an index:
/// - when every match carries one of a set of tags (`a`, `a || b`, `a && (b || c)`), each of
///   those tags is walked in the tag index `(app, tag, id)` from the cursor, every arm stopping
///   after `limit` matches, and the arms are merged by id (a `UNION` of at most 20 ordered walks);
///   for `a && b` the side with fewer registrations drives (counted once per query, capped at
///   ``cardinalityCap``), and the other side is checked per row;
/// - otherwise (`!a`, a platform-only send, no expression) the registrations' primary key
///   `(app, id)` is walked with the condition checked per row.
/// The rest of the expression is checked per row with `EXISTS` lookups on `(app, id, tag)`. No
/// list subquery is built, correlated or not (an `id IN (SELECT …)` would be rebuilt for every
/// page and make a broadcast quadratic in its audience).
package struct TagQuery: Sendable {
    /// nil: every registration.
    package let expression: TagExpression?
    /// Which registrations: devices, or one kind of Live Activity token (of one owner).
    package let selector: RegistrationSelector
    package let platforms: PlatformSelection
    package let app: AppID
    package let now: Timestamp
    /// Tags to walk in the tag index (the driver), or nil to walk the registrations.
    package let driver: [Tag]?

    /// Counting a tag's registrations stops here: enough to tell a rare tag from a common one.
    package static let cardinalityCap = 10_000

    /// Plans the query: `count` tells how many registrations carry a tag (at most ``cardinalityCap``).
    /// It is asked only where a choice depends on it (the sides of an `&&`): a single tag or an
    /// OR of tags drives itself, and a send to one user costs no count.
    package init(
        selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, now: Timestamp,
        count: (Tag) throws(StoreError) -> Int
    ) throws(StoreError) {
        let expression = selector.expression
        self.selector = selector
        self.expression = expression
        self.platforms = platforms
        self.app = app
        self.now = now
        var counts: [Tag: Int] = [:]
        func cost(_ tags: [Tag]) throws(StoreError) -> Int {
            var total = 0
            for tag in tags {
                if counts[tag] == nil { counts[tag] = try count(tag) }
                total += counts[tag] ?? 0
            }
            return total
        }
        driver = try expression.flatMap { (expression) throws(StoreError) -> [Tag]? in try Self.requiredTags(expression, cost: cost) }
    }

    /// A query of the registrations' ids (with `withHandles`, their platforms and handles too)
    /// after `after`, at most `limit`, ordered by id.
    /// SQL for SQLite, or (`lateral`) for PostgreSQL: there each tag walk reaches its registrations
    /// through a `LATERAL` subquery that cannot be flattened (`OFFSET 0`), so the plan is a nested
    /// loop of index lookups from the cursor on. PostgreSQL's planner otherwise picked a merge join
    /// that read every registration id before the cursor on every page (a 1M broadcast: 180 ms a
    /// page, growing with the position).
    package func sql(after: String, limit: Int, withHandles: Bool = false, lateral: Bool = false) -> (sql: String, values: [SQLValue]) {
        var filter = " AND (r.expires_at IS NULL OR r.expires_at > ?)"
        var filterValues: [SQLValue] = [.real(now.secondsSinceEpoch)]
        let platformList = platforms.platforms
        if platformList.count < Platform.allCases.count {
            filter += " AND r.platform IN (\(Array(repeating: "?", count: platformList.count).joined(separator: ",")))"
            filterValues += platformList.map { .text($0.rawValue) }
        }
        // Every ordinary send reaches devices only; a Live Activity's send, its own kind of token.
        if let kind = selector.kind {
            filter += " AND r.kind = ?"
            filterValues.append(.text(kind.stored))
        }
        if let owner = selector.owner {
            filter += " AND r.owner_kind = ? AND r.owner = ?"
            filterValues += [.integer(Int64(owner.stored.kind)), .text(owner.stored.name)]
        }
        if let expression { filter += " AND " + Self.condition(expression, values: &filterValues) }

        guard let driver, !driver.isEmpty else {
            let columns = withHandles ? "r.id, r.platform, r.handle" : "r.id"
            // Tokens of one kind are walked in their own index (`registrations_by_kind`, only
            // tokens: devices are not in it) rather than every registration.
            let sql = "SELECT \(columns) FROM registrations r WHERE r.app = ? AND r.id > ?\(filter) ORDER BY r.id LIMIT ?"
            return (sql, [.text(app.rawValue), .text(after)] + filterValues + [.integer(Int64(limit))])
        }
        // One ordered walk of the tag index per driving tag, each stopping after `limit` matches.
        let armColumns = withHandles ? "t.id AS id, r.platform AS platform, r.handle AS handle" : "t.id AS id"
        if lateral {
            let lateralArm =
                "SELECT * FROM (SELECT \(armColumns) FROM registration_tags t CROSS JOIN LATERAL"
                + " (SELECT r.app, r.id, r.platform, r.handle FROM registrations r WHERE r.app = t.app AND r.id = t.id\(filter) OFFSET 0) AS r"
                + " WHERE t.app = ? AND t.tag = ? AND t.id > ? ORDER BY t.id LIMIT ?) AS arm"
            var lateralValues: [SQLValue] = []
            for tag in driver {
                lateralValues += filterValues + [.text(app.rawValue), .text(tag.rawValue), .text(after), .integer(Int64(limit))]
            }
            if driver.count == 1 { return (lateralArm, lateralValues) }
            let sql =
                "SELECT \(withHandles ? "id, platform, handle" : "id") FROM ("
                + Array(repeating: lateralArm, count: driver.count).joined(separator: " UNION ") + ") AS walk ORDER BY id LIMIT ?"
            return (sql, lateralValues + [.integer(Int64(limit))])
        }
        let arm =
            "SELECT * FROM (SELECT \(armColumns) FROM registration_tags t JOIN registrations r ON r.app = t.app AND r.id = t.id"
            + " WHERE t.app = ? AND t.tag = ? AND t.id > ?\(filter) ORDER BY t.id LIMIT ?) AS arm"
        var values: [SQLValue] = []
        for tag in driver {
            values += [.text(app.rawValue), .text(tag.rawValue), .text(after)] + filterValues + [.integer(Int64(limit))]
        }
        if driver.count == 1 { return (arm, values) }
        let sql =
            "SELECT \(withHandles ? "id, platform, handle" : "id") FROM ("
            + Array(repeating: arm, count: driver.count).joined(separator: " UNION ") + ") AS walk ORDER BY id LIMIT ?"
        return (sql, values + [.integer(Int64(limit))])
    }

    package static func condition(_ expression: TagExpression, values: inout [SQLValue]) -> String {
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
    /// For `a && b` the side whose tags cover fewer registrations (`cost`).
    package static func requiredTags(_ expression: TagExpression, cost: ([Tag]) throws(StoreError) -> Int) throws(StoreError) -> [Tag]? {
        switch expression {
        case .tag(let tag):
            return [tag]
        case .not:
            return nil
        case .or(let lhs, let rhs):
            guard let left = try requiredTags(lhs, cost: cost), let right = try requiredTags(rhs, cost: cost) else { return nil }
            return Array(Set(left + right)).sorted()
        case .and(let lhs, let rhs):
            switch (try requiredTags(lhs, cost: cost), try requiredTags(rhs, cost: cost)) {
            case (let left?, let right?): return try cost(left) <= cost(right) ? left : right
            case (let left?, nil): return left
            case (nil, let right?): return right
            case (nil, nil): return nil
            }
        }
    }
}
