import Pushgate
import Synchronization

/// The check a UnifiedPush endpoint passes before it is registered: `GET <endpoint>` answers
/// `{"unifiedpush":{"version":1}}`, as the UnifiedPush server specification advises, reached by
/// the same rules as a send (the ``OutboundGuard``'s address, https only, no redirects, a capped
/// answer) within a short timeout (the transport's). The result is kept per origin
/// (`https://host[:port]`): a success for `successSeconds`, a failure for `failureSeconds`, so
/// that a distributor is asked once, not once per registration.
public final class UnifiedPushDiscovery: Sendable {
    private struct Entry: Sendable {
        var problem: String?
        var until: Double
    }

    private let transport: any PushTransport
    private let outbound: OutboundGuard
    private let clock: any PushgateClock
    private let successSeconds: Double
    private let failureSeconds: Double
    private let cache = Mutex<[String: Entry]>([:])

    /// Origins kept at most; past it the cache starts afresh (a hostile client registering
    /// endpoints on many hosts cannot grow it without bound).
    public static let maximumCachedOrigins = 10_000
    /// The most of a discovery answer read.
    public static let maximumAnswerBytes = 4096

    /// - Parameters:
    ///   - transport: made with the discovery timeout (`services.unifiedpush.discoveryTimeoutSeconds`).
    public init(
        transport: any PushTransport, outbound: OutboundGuard, clock: any PushgateClock, successSeconds: Int = 3600,
        failureSeconds: Int = 30
    ) {
        self.transport = transport
        self.outbound = outbound
        self.clock = clock
        self.successSeconds = Double(successSeconds)
        self.failureSeconds = Double(failureSeconds)
    }

    /// Why `endpoint` (already checked against `allowed` by ``HandlePolicy``) is no UnifiedPush
    /// endpoint the gateway may use, naming its host; nil when its discovery answer is right.
    public func problem(endpoint: String, allowed: [String]) async -> String? {
        let origin = WebPushSubscription(endpoint: endpoint, p256dh: [], auth: []).origin
        let now = clock.now.secondsSinceEpoch
        if let known = cache.withLock({ $0[origin] }), known.until > now { return known.problem }
        let problem = await discover(endpoint: endpoint, origin: origin, allowed: allowed)
        let until = now + (problem == nil ? successSeconds : failureSeconds)
        cache.withLock { cache in
            if cache.count >= Self.maximumCachedOrigins { cache.removeAll() }
            cache[origin] = Entry(problem: problem, until: until)
        }
        return problem
    }

    private func discover(endpoint: String, origin: String, allowed: [String]) async -> String? {
        let host = String(origin.dropFirst("https://".count))
        let pin: OutboundPin
        do { pin = try await outbound.pin(url: endpoint, allowed: allowed) } catch {
            return "the UnifiedPush endpoint's host \(host) is refused: \(error)"
        }
        var request = PushHTTPRequest(
            method: "GET", url: endpoint, headers: [HTTPHeader(name: "Accept", value: "application/json")], body: [])
        request.pin = pin
        request.maximumResponseBodyBytes = Self.maximumAnswerBytes
        let response: PushHTTPResponse
        do { response = try await transport.execute(request) } catch {
            return "the UnifiedPush endpoint's host \(host) gave no discovery answer (\(error.failure.rawValue))"
        }
        return UnifiedPushWire.discoveryProblem(response).map {
            "the UnifiedPush endpoint's host \(host) failed the discovery check: \($0)"
        }
    }

    func shutdown() async { await transport.shutdown() }
}
