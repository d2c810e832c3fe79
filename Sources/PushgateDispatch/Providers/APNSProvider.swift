import Pushgate

/// APNs over HTTP/2 with provider-token authentication: one shared token, refreshed on
/// `ExpiredProviderToken` with the request retried once.
public final class APNSProvider: PushProvider {
    public let platform = Platform.apns
    private let endpoint: String
    private let topic: String
    private let tokens: APNSTokenManager?
    private let transport: any PushTransport
    private let retry: RetryingDelivery
    private let maximumInFlight: Int

    /// - Parameter tokens: nil for certificate authentication (the transport presents the certificate).
    public init(
        endpoint: String, topic: String, tokens: APNSTokenManager?, transport: any PushTransport, policy: RetryPolicy,
        clock: any DispatchClock, maximumInFlight: Int = 1000
    ) {
        self.endpoint = endpoint
        self.topic = topic
        self.tokens = tokens
        self.transport = transport
        self.retry = RetryingDelivery(policy: policy, clock: clock)
        self.maximumInFlight = maximumInFlight
    }

    public func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget]) async -> [DeliveryReport] {
        await boundedConcurrentMap(targets, limit: maximumInFlight) { target in await self.deliver(notification, to: target) }
    }

    private func deliver(_ notification: RenderedNotification, to target: DispatchTarget) async -> DeliveryReport {
        var lastToken: String?
        let clock = retry.clock
        let (verdict, attempts, milliseconds) = await retry.run { refresh in
            var providerToken: String?
            if let tokens {
                do {
                    providerToken = try await (refresh && lastToken != nil ? tokens.refresh(after: lastToken!) : tokens.token())
                } catch {
                    return DeliveryVerdict(outcome: .invalidCredentials, reason: "cannot sign a provider token: \(error)")
                }
                lastToken = providerToken
            }
            let request = APNSWire.request(
                endpoint: endpoint, deviceToken: target.handle.value, notification: notification, topic: topic, providerToken: providerToken
            )
            do throws(PushTransportError) {
                return APNSWire.classify(try await transport.execute(request), now: clock.now())
            } catch {
                return .transportFailure(error.failure, detail: error.detail)
            }
        }
        return DeliveryReport(target: target, verdict: verdict, attempts: attempts, latencyMilliseconds: milliseconds)
    }

    public func shutdown() async { await transport.shutdown() }
}
