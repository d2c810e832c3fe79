import Pushgate
import PushgateCurl
import Synchronization

/// Sends HTTP requests to a push service. The seam between providers and the network.
public protocol PushTransport: Sendable {
    func execute(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse
    /// Sends every request and hands each answer to `each`, with the request's index, as it
    /// arrives (from any thread; keep it short); returns once every request is answered and every
    /// `each` call has returned. A fan-out's first attempts go out this way; the default sends
    /// them one by one (at most 1,000 at once).
    func executeAll(
        _ requests: [PushHTTPRequest], each: @escaping @Sendable (Int, Result<PushHTTPResponse, PushTransportError>) -> Void
    ) async
    func shutdown() async
}

extension PushTransport {
    public func executeAll(
        _ requests: [PushHTTPRequest], each: @escaping @Sendable (Int, Result<PushHTTPResponse, PushTransportError>) -> Void
    ) async {
        _ = await boundedConcurrentMap(Array(requests.enumerated()), limit: 1000) { item in
            let answer: Result<PushHTTPResponse, PushTransportError>
            do throws(PushTransportError) {
                answer = .success(try await self.execute(item.element))
            } catch {
                answer = .failure(error)
            }
            each(item.offset, answer)
        }
    }

    /// Sends every request and returns the answers in order.
    public func executeAll(_ requests: [PushHTTPRequest]) async -> [Result<PushHTTPResponse, PushTransportError>] {
        let answers = Mutex([Result<PushHTTPResponse, PushTransportError>?](repeating: nil, count: requests.count))
        await executeAll(requests) { index, answer in answers.withLock { $0[index] = answer } }
        return answers.withLock { $0.map { $0! } }
    }
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
            return Self.response(try await client.execute(Self.request(request)))
        } catch {
            throw Self.error(error)
        }
    }

    /// A fan-out is split across the pools only where each part carries at least this many
    /// requests: a user's few devices go to one pool in one submission (successive sends take
    /// the pools in turn), not one crossing to and from each pool's thread per request. Kept
    /// small: a page's few WNS or Web Push requests (HTTP/1.1, one request per connection at a
    /// time) still use both pools' connections (with 32, the million-target broadcast's 25 of
    /// each per page went to one pool, and it ran 6% slower).
    static let minimumRequestsPerPart = 8

    /// How many parts `requests` requests are split into over `pools` pools.
    package static func parts(requests: Int, pools: Int) -> Int {
        max(1, min(pools, requests / minimumRequestsPerPart))
    }

    /// One submission per pool: the requests are split into as many contiguous parts as there are
    /// pools (at most one per ``minimumRequestsPerPart``), each sent as a batch; one part goes out
    /// on this task, without a task group.
    public func executeAll(
        _ requests: [PushHTTPRequest], each: @escaping @Sendable (Int, Result<PushHTTPResponse, PushTransportError>) -> Void
    ) async {
        guard !requests.isEmpty else { return }
        let clients = self.clients
        let parts = Self.parts(requests: requests.count, pools: clients.count)
        let size = (requests.count + parts - 1) / parts
        let first = next.wrappingAdd(1, ordering: .relaxed).oldValue
        // A fan-out's requests share one headers array: convert it once, not once per request
        // (comparing an array with itself is a pointer check).
        var lastHeaders: [HTTPHeader]?
        var lastConverted: [(name: String, value: String)] = []
        let converted = requests.map { request -> CurlRequest in
            if request.headers != lastHeaders {
                lastHeaders = request.headers
                lastConverted = request.headers.map { ($0.name, $0.value) }
            }
            return Self.request(request, headers: lastConverted)
        }
        guard parts > 1 else {
            await clients[first % clients.count].execute(
                batch: converted, each: { index, answer in each(index, answer.map(Self.response).mapError(Self.error)) })
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for part in 0..<parts {
                let offset = part * size
                let slice = Array(converted[offset..<min((part + 1) * size, requests.count)])
                let client = clients[(first + part) % clients.count]
                group.addTask {
                    await client.execute(
                        batch: slice,
                        each: { index, answer in each(offset + index, answer.map(Self.response).mapError(Self.error)) })
                }
            }
        }
    }

    /// The request in curl's form; `headers`, when given, are its headers already converted.
    package static func request(_ request: PushHTTPRequest, headers: [(name: String, value: String)]? = nil) -> CurlRequest {
        CurlRequest(
            method: request.method, url: request.url, headers: headers ?? request.headers.map { ($0.name, $0.value) },
            body: request.body, freshConnection: request.freshConnection, maximumResponseBodyBytes: request.maximumResponseBodyBytes,
            connectTo: request.pin?.connectTo, httpsOnly: request.pin != nil)
    }

    static func response(_ response: CurlResponse) -> PushHTTPResponse {
        PushHTTPResponse(
            status: response.status, headers: response.headers.map { HTTPHeader(name: $0.name, value: $0.value) }, body: response.body,
            isBodyTruncated: response.isBodyTruncated)
    }

    static func error(_ error: CurlError) -> PushTransportError {
        let failure: TransportFailure
        switch error.kind {
        case .connect: failure = .connect
        case .tls: failure = .tls
        case .timeout: failure = .timeout
        case .connectionLost: failure = .connectionLost
        case .local: failure = error == CurlError.shutDown || error == CurlError.cancelled ? .cancelled : .local
        }
        return PushTransportError(failure: failure, detail: error.message)
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
