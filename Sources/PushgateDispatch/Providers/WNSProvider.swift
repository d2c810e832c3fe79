import Pushgate

/// WNS over HTTP/1.1 with an OAuth client-credentials token (cached, refreshed once on 401). A
/// channel URI whose host is not on the allow-list is never requested.
public final class WNSProvider: PushProvider {
    public let platform = Platform.wns
    private let handles: HandlePolicy
    private let tokens: OAuthTokenManager
    private let transport: any PushTransport
    private let retry: RetryingDelivery
    private let maximumInFlight: Int

    public init(
        tokenEndpoint: String, clientID: String, clientSecret: String, scope: String = "notify.windows.com", handles: HandlePolicy,
        transport: any PushTransport, policy: RetryPolicy, clock: any PushgateClock, maximumInFlight: Int = 256,
        tracing: PushgateTracing = .off
    ) {
        self.handles = handles
        self.transport = transport
        self.retry = RetryingDelivery(policy: policy, clock: clock, spans: tracing.pushRequests(service: "wns"))
        self.maximumInFlight = maximumInFlight
        self.tokens = OAuthTokenManager(clock: clock) {
            let request = OAuthWire.wnsTokenRequest(endpoint: tokenEndpoint, clientID: clientID, clientSecret: clientSecret, scope: scope)
            return try OAuthWire.parseToken(try await transport.execute(request))
        }
    }

    public var tokenManager: OAuthTokenManager { tokens }

    /// Connections per channel host and connection pool. WNS speaks HTTP/1.1 only: each connection
    /// carries one request at a time (kept alive between them), so the rate is connections over
    /// the round-trip time, not streams. 8 held a WNS-only broadcast to 0.65-0.77 of APNs's rate
    /// against the same sink; 32 per pool (64 with the usual 2 pools) keep as many requests out
    /// as APNs's 2 × 100 streams do, within a third.
    public static let connectionsPerHost = 32

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        // The allow-list first: a channel URI on any other host is never contacted.
        var reports = [DeliveryReport?](repeating: nil, count: targets.count)
        var allowed: [(index: Int, target: DispatchTarget)] = []
        for (index, target) in targets.enumerated() {
            do {
                _ = try handles.validate(target.handle.value, for: .wns)
                allowed.append((index, target))
            } catch {
                reports[index] = DeliveryReport(
                    target: target, verdict: DeliveryVerdict(outcome: .badChannel, reason: error.description), attempts: 0,
                    latencyMilliseconds: 0)
            }
        }
        let delivered = await retry.deliverAll(
            to: allowed.map(\.target), transport: transport, credential: OAuthFailure.credential(tokens),
            request: { target, accessToken in
                WNSWire.request(channelURI: target.handle.value, notification: notification, accessToken: accessToken ?? "")
            },
            classify: WNSWire.classify, maximumInFlight: maximumInFlight, answers: answers)
        for (item, report) in zip(allowed, delivered) { reports[item.index] = report }
        return reports.map { $0! }
    }

    public func shutdown() async { await transport.shutdown() }

    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? {
        WNSWire.request(channelURI: target.handle.value, notification: notification, accessToken: Self.credentialPlaceholder)
    }
}
