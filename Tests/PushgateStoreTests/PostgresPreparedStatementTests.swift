import Pushgate
import PushgatePostgres
import PushgateSQL
import Testing

/// The PostgreSQL outbox's statements as named prepared statements: one name per text and value
/// types, a bounded number of them, prepared on the connection that runs them, and none with
/// `preparedStatements: false`; planned for their values every time.
@Suite struct PostgresPreparedStatementTests {
    @Test func aNameIsPerTextAndValueTypesAndTheirNumberIsBounded() {
        let names = PreparedSQLNames(capacity: 3)
        let select = "SELECT lease_owner FROM outbox_notifications WHERE app = ? AND id = ?"
        let first = names.name(of: select, values: [.text("a"), .text("n1")])
        #expect(first != nil)
        #expect(names.name(of: select, values: [.text("b"), .text("n2")]) == first, "other values, the same statement")
        let withNull = names.name(of: select, values: [.text("a"), .null])
        #expect(withNull != nil && withNull != first, "a NULL is bound with another type: another statement")
        let other = names.name(of: "SELECT 1 WHERE ? > 0", values: [.integer(1)])
        #expect(other != nil && other != first && other != withNull)
        #expect(names.name(of: "SELECT 2 WHERE ? > 0", values: [.integer(1)]) == nil, "past the capacity: sent unnamed")
        #expect(names.name(of: select, values: [.text("c"), .text("n3")]) == first, "known names stay")
    }

    /// The statements `pg_prepared_statements` lists on the connection of an outbox transaction,
    /// after a statement of ours ran on it twice.
    static func preparedOnTheConnection(preparedStatements: Bool) async throws -> (answer: [Int], names: [String], planCache: String?) {
        var settings = try await PostgresTesting.freshDatabase(prefix: "prepared")
        settings.preparedStatements = preparedStatements
        let store = try await PostgresStore.open(settings: settings, password: nil)
        do {
            let result = try await Self.prepared(on: store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    static func prepared(on store: PostgresStore) async throws -> (answer: [Int], names: [String], planCache: String?) {
        try await store.outbox.database.transaction { session in
            var answer: [Int] = []
            for value in [41, 99] {
                answer += try await session.rows("SELECT ?::int8 + 1 AS next", [.integer(Int64(value))]).compactMap { $0.integer(0) }
            }
            let names = try await session.rows(
                """
                SELECT name FROM pg_prepared_statements
                WHERE statement LIKE '%int8 + 1 AS next%' AND statement NOT LIKE '%pg_prepared_statements%' AND name LIKE ?
                """, [.text("pushgate%")]
            ).compactMap { $0.text(0) }
            let planCache = try await session.rows("SELECT current_setting('plan_cache_mode') WHERE ? = 1", [.integer(1)]).first?.text(0)
            return (answer, names, planCache)
        }
    }

    @Test(.enabled(if: PostgresTesting.isAvailable))
    func anOutboxStatementIsPreparedOnceOnItsConnection() async throws {
        let (answer, names, planCache) = try await Self.preparedOnTheConnection(preparedStatements: true)
        #expect(answer == [42, 100])
        #expect(names.count == 1, "\(names)")
        // A generic plan made from an empty table's statistics scanned the outbox's tables whole
        // once they filled (1.2 ms a key lookup at 8,000 rows): each execution is planned anew.
        #expect(planCache == "force_custom_plan")
    }

    @Test(.enabled(if: PostgresTesting.isAvailable))
    func withoutPreparedStatementsNothingIsPrepared() async throws {
        let (answer, names, planCache) = try await Self.preparedOnTheConnection(preparedStatements: false)
        #expect(answer == [42, 100])
        #expect(names.isEmpty, "\(names)")
        #expect(planCache == "auto", "the server's default")
    }
}
