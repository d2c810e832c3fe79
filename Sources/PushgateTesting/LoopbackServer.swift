import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle

/// A router served on 127.0.0.1 (a free port) until stopped: the test kit's small stand-ins for
/// other systems (an OTLP collector, a webhook receiver).
struct LoopbackServer: Sendable {
    let port: Int
    private let services: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts `router` (over `server`: HTTP/1.1, or TLS around it) and returns once it listens.
    static func start(
        _ router: Router<BasicRequestContext>, label: String, server: HTTPServerBuilder = .http1()
    ) async throws -> LoopbackServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: label)
        logger.logLevel = .warning
        let application = Application(
            router: router, server: server, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let services = ServiceGroup(configuration: .init(services: [application], logger: logger))
        // Ended by ``stop()`` (graceful shutdown, then awaited), or cancelled below when the
        // server does not start.
        let task = Task { try await services.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            throw StartFailure(description: "\(label) did not start")
        }
        return LoopbackServer(port: port, services: services, task: task)
    }

    func stop() async {
        await services.triggerGracefulShutdown()
        _ = try? await task.value
    }

    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }
}
