import Pushgate
import PushgateCurl
import Synchronization

/// Sends HTTP requests to a push service. The seam between providers and the network.
public protocol PushTransport: Sendable {
    func execute(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse
    func shutdown() async
}

/// A request got no answer.
public struct PushTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public let failure: TransportFailure
    public let detail: String

    public init(failure: TransportFailure, detail: String) {
        self.failure = failure
        self.detail = detail
    }

    public var description: String { "\(failure.rawValue): \(detail)" }
}

/// libcurl underneath: `pools` ``CurlHTTPClient``s, each a connection pool with its own loop
/// thread, used in turn. One pool saturates one core at roughly 20k requests/s; more pools spread
/// the work (and the connections) over more cores.
public final class CurlPushTransport: PushTransport {
    private let clients: [CurlHTTPClient]
    private let next = Atomic<Int>(0)

    public init(configuration: CurlHTTPClientConfiguration, pools: Int = 1) throws(CurlError) {
        var clients: [CurlHTTPClient] = []
        for _ in 0..<max(1, pools) { clients.append(try CurlHTTPClient(configuration: configuration)) }
        self.clients = clients
    }

    public func execute(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse {
        let client = clients.count == 1 ? clients[0] : clients[next.wrappingAdd(1, ordering: .relaxed).oldValue % clients.count]
        do {
            let response = try await client.execute(
                CurlRequest(
                    method: request.method, url: request.url, headers: request.headers.map { ($0.name, $0.value) }, body: request.body))
            return PushHTTPResponse(
                status: response.status, headers: response.headers.map { HTTPHeader(name: $0.name, value: $0.value) }, body: response.body)
        } catch {
            let failure: TransportFailure
            switch error.kind {
            case .connect: failure = .connect
            case .tls: failure = .tls
            case .timeout: failure = .timeout
            case .connectionLost: failure = .connectionLost
            case .local: failure = error == CurlError.shutDown || error == CurlError.cancelled ? .cancelled : .local
            }
            throw PushTransportError(failure: failure, detail: error.message)
        }
    }

    public func shutdown() async {
        for client in clients { await client.shutdown() }
    }
}

/// Answers from a script, for unit tests: each request is recorded and answered by `respond`.
public final class InMemoryPushTransport: PushTransport {
    public typealias Responder = @Sendable (PushHTTPRequest) -> Result<PushHTTPResponse, PushTransportError>

    private let responder: Responder
    private let log = Mutex<[PushHTTPRequest]>([])

    public init(_ responder: @escaping Responder) { self.responder = responder }

    public func execute(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse {
        log.withLock { $0.append(request) }
        return try responder(request).get()
    }

    public func shutdown() async {}

    /// Every request sent so far.
    public var requests: [PushHTTPRequest] { log.withLock { $0 } }
}
