import PostgresNIO
import PushgateSQL
import Synchronization

/// The outbox's statements as named prepared statements: each is parsed once per connection, not
/// at every call, and planned at every execution for its values (the pool's `plan_cache_mode`;
/// see ``PostgresStore``). Only with `store.postgres.preparedStatements: true` (off by default:
/// level with unnamed statements, see ``PostgresSettings/preparedStatements``).
///
/// PostgresNIO prepares a statement from its type's static `name` and `sql`, which it reads on the
/// calling task when the statement is executed; ``current`` (a task-local value) gives them for the
/// call under way. Each distinct text, with the types of its values, is one name; at most
/// ``PreparedSQLNames/defaultCapacity`` of them per store, whose connections they name (statements whose text varies beyond that, such as multi-row
/// inserts of unusual sizes or hostile tag expressions, go unnamed, as before), so that the server
/// keeps a bounded number per connection.
struct PreparedSQL: PostgresPreparedStatement {
    typealias Row = PostgresRow

    struct Statement: Sendable {
        var name: String
        var sql: String
    }

    @TaskLocal static var current = Statement(name: "", sql: "")
    static var name: String { current.name }
    static var sql: String { current.sql }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }

    /// SQLSTATEs of failures that may pass and may befall a preparation: `lock_not_available`
    /// (`lock_timeout`), `query_canceled` (`statement_timeout`).
    static let passingFailures: Set<String> = ["55P03", "57014"]
}

/// A name per statement text with the types of its values (`pushgate_1`, …), at most `capacity`,
/// kept with the text as PostgreSQL reads it (placeholders numbered once, not at every call).
package final class PreparedSQLNames: Sendable {
    package let capacity: Int
    /// A store's: enough for the outbox's statements and the audiences' texts.
    package static let defaultCapacity = 400
    private let names = Mutex<[String: PreparedSQL.Statement]>([:])

    package init(capacity: Int) { self.capacity = capacity }

    /// The name of `sql` with values of these types; nil once `capacity` names are given.
    package func name(of sql: String, values: [SQLValue]) -> String? { statement(sql, values: values)?.name }

    /// The prepared statement of `sql` with values of these types (``name(of:values:)``).
    func statement(_ sql: String, values: [SQLValue]) -> PreparedSQL.Statement? {
        var key = sql
        key.reserveCapacity(sql.utf8.count + values.count + 1)
        key.append("\u{0}")
        for value in values {
            switch value {
            case .null: key.append("n")
            case .integer: key.append("i")
            case .real: key.append("r")
            case .text: key.append("t")
            case .bool: key.append("b")
            }
        }
        if let known = names.withLock({ $0[key] }) { return known }
        let numbered = numberedPlaceholders(sql)
        return names.withLock { names in
            if let known = names[key] { return known }
            guard names.count < capacity else { return nil }
            let statement = PreparedSQL.Statement(name: "pushgate_\(names.count + 1)", sql: numbered)
            names[key] = statement
            return statement
        }
    }
}

extension PostgresConnection {
    /// Runs `sql` (`?` placeholders) with `values`, as a named prepared statement under `prepared`'s
    /// names (when one is left), else unnamed; every row.
    func rows(_ sql: String, _ values: [SQLValue], prepared: PreparedSQLNames?, logger: Logger) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        if let statement = prepared?.statement(sql, values: values) {
            do {
                try await PreparedSQL.$current.withValue(statement) {
                    for try await row in try await execute(PreparedSQL(bindings: dynamicBindings(values)), logger: logger) {
                        rows.append(row)
                    }
                }
            } catch let error as PSQLError {
                // PostgresNIO keeps a failed preparation for the connection's life: one that failed
                // for a passing reason (waiting on a lock another instance's migration holds, a
                // timeout) would fail on this connection for ever. The connection closes instead;
                // the pool opens another.
                if let state = error.serverInfo?[.sqlState], PreparedSQL.passingFailures.contains(state) { try? await close() }
                throw error
            }
        } else {
            for try await row in try await self.query(dynamicQuery(sql, values), logger: logger) { rows.append(row) }
        }
        return rows
    }
}
