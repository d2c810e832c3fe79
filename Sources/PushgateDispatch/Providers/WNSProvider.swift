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
        transport: any PushTransport, policy: RetryPolicy, clock: any DispatchClock, maximumInFlight: Int = 256
    ) {
        self.handles = handles
        self.transport = transport
        self.retry = RetryingDelivery(policy: policy, clock: clock)
        self.maximumInFlight = maximumInFlight
        self.tokens = OAuthTokenManager(clock: clock) {
            let request = OAuthWire.wnsTokenRequest(endpoint: tokenEndpoint, clientID: clientID, clientSecret: clientSecret, scope: scope)
            return try OAuthWire.parseToken(try await transport.execute(request))
        }
    }

    public var tokenManager: OAuthTokenManager { tokens }

    public func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget]) async -> [DeliveryReport] {
        await boundedConcurrentMap(targets, limit: maximumInFlight) { target in await self.deliver(notification, to: target) }
    }

    private func deliver(_ notification: RenderedNotification, to target: DispatchTarget) async -> DeliveryReport {
        do {
            _ = try handles.validate(target.handle.value, for: .wns)
        } catch {
            return DeliveryReport(
                target: target, verdict: DeliveryVerdict(outcome: .badChannel, reason: error.description), attempts: 0,
                latencyMilliseconds: 0)
        }
        return await retry.deliver(
            to: target, transport: transport, credential: OAuthFailure.credential(tokens),
            request: { accessToken in
                WNSWire.request(channelURI: target.handle.value, notification: notification, accessToken: accessToken ?? "")
            },
            classify: WNSWire.classify)
    }

    public func shutdown() async { await transport.shutdown() }
}
