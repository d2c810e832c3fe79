import Logging
import Pushgate
import PushgatePostgres
import ServiceLifecycle
import Testing

/// A PostgreSQL store opened for a service group: its connection pool runs as the group's
/// service, outlives the services after it, and ends with the group.
@Suite(.enabled(if: PostgresTesting.isAvailable), .timeLimit(.minutes(2))) struct PostgresPoolServiceTests {
    static let logger = Logger(label: "pushgate.test.pool")

    /// Reads the schema version when it starts and again when its graceful shutdown comes.
    struct StoreReader: Service {
        let store: PostgresStore
        let readings: AsyncStream<Result<Int, StoreError>>.Continuation

        func run() async {
            readings.yield(await read())
            try? await gracefulShutdown()
            readings.yield(await read())
            readings.finish()
        }

        func read() async -> Result<Int, StoreError> {
            do { return .success(try await store.schemaVersion()) } catch { return .failure(error) }
        }
    }

    static func expectPoolClosed(_ store: PostgresStore) async {
        do {
            let version = try await store.schemaVersion()
            Issue.record("the store answered (schema \(version)) after its pool's service ended")
        } catch {
            #expect(error.kind == .unavailable, "\(error)")
        }
    }

    @Test func thePoolRunsInTheGroupStopsAfterTheServicesAfterItAndClosesWithTheGroup() async throws {
        let settings = try await PostgresTesting.freshDatabase(prefix: "pool")
        let (store, pool) = try await PostgresStore.openForServiceGroup(settings: settings, password: nil)
        let (readings, continuation) = AsyncStream.makeStream(of: Result<Int, StoreError>.self)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: pool), .init(service: StoreReader(store: store, readings: continuation))], logger: Self.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = readings.makeAsyncIterator()
            #expect(await iterator.next() == .success(PostgresStore.currentSchemaVersion), "the store works while the group runs")
            #expect(try await PostgresTesting.backends(of: settings, application: "pushgate").count >= 1)
            await group.triggerGracefulShutdown()
            #expect(
                await iterator.next() == .success(PostgresStore.currentSchemaVersion),
                "the reader, after the pool in the group, is shut down first: the pool still runs for it")
            try await tasks.waitForAll()
        }
        await Self.expectPoolClosed(store)
        await store.close()
    }

    @Test func thePoolsServiceReturnsWhenItsGroupIsCancelled() async throws {
        let settings = try await PostgresTesting.freshDatabase(prefix: "pool")
        let (store, pool) = try await PostgresStore.openForServiceGroup(settings: settings, password: nil)
        let group = ServiceGroup(configuration: .init(services: [.init(service: pool)], logger: Self.logger))
        await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect((try? await store.schemaVersion()) == PostgresStore.currentSchemaVersion)
            // The group's run returns (rather than hang the suite) once its pool has closed.
            tasks.cancelAll()
            while let _ = try? await tasks.next() {}
        }
        await Self.expectPoolClosed(store)
        await store.close()
    }

    @Test func aStoreOpenedOutsideAGroupRunsItsPoolUntilItCloses() async throws {
        let store = try await PostgresStore.open(settings: try await PostgresTesting.freshDatabase(prefix: "pool"), password: nil)
        #expect(try await store.schemaVersion() == PostgresStore.currentSchemaVersion)
        await store.close()
        await Self.expectPoolClosed(store)
    }
}
