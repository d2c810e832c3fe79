import Pushgate
import PushgatePostgres
import Testing

/// The PostgreSQL store's health as `/healthz` reads it (`store.health.status()`): a health check
/// logs in to the database once, not once per call.
@Suite struct PostgresHealthTests {
    @Test(.enabled(if: PostgresTesting.isAvailable))
    func twoHundredHealthChecksOpenNoNewConnection() async throws {
        let settings = try await PostgresTesting.freshDatabase(prefix: "health")
        let clock = ManualClock()
        let store = try await PostgresStore.open(settings: settings, password: nil, clock: clock)
        #expect(await store.health.status() == nil)
        let connection = try await PostgresTesting.backends(of: settings, application: "pushgate-health")
        #expect(connection.count == 1)

        // 200 checks; the interval passes every 20, so that 10 of them probe the database.
        for call in 1...200 {
            if call % 20 == 0 { clock.advance(by: .seconds(6)) }
            #expect(await store.health.status() == nil)
        }
        #expect(store.healthProbeCounts == (checks: 11, connectionsOpened: 1))
        #expect(try await PostgresTesting.backends(of: settings, application: "pushgate-health") == connection)

        // A dropped health connection is not the database down: the probe logs in again.
        _ = try await PostgresTesting.backends(of: settings, application: "pushgate-health", terminate: true)
        clock.advance(by: .seconds(6))
        #expect(await store.health.status() == nil)
        #expect(store.healthProbeCounts == (checks: 12, connectionsOpened: 2))
        let replacement = try await PostgresTesting.backends(of: settings, application: "pushgate-health")
        #expect(replacement.count == 1 && replacement != connection)
        await store.close()
    }
}
