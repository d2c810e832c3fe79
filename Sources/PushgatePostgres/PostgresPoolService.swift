import PostgresNIO
import ServiceLifecycle

/// Runs a ``PostgresStore``'s connection pool (postgres-nio's `PostgresClient.run()`) as a
/// service, made by ``PostgresStore/openForServiceGroup(settings:password:reservationLifetime:clock:logger:)``.
/// It runs until its group's graceful shutdown reaches it, or until it is cancelled; the pool
/// closes then, and the store's calls fail as `unavailable`.
///
/// Put it before every service that uses the store: a group shuts its services down in reverse
/// order, so the pool then outlives them (the outbox releases its leases through it). A pool runs
/// once: the service must not be run twice.
public struct PostgresPoolService: Service, CustomStringConvertible {
    let client: PostgresClient

    public func run() async {
        // Returns at graceful shutdown (postgres-nio's run cancels itself then) or cancellation.
        await client.run()
    }

    public var description: String { "PostgresPoolService" }
}
