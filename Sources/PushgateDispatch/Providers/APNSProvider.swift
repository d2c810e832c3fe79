import Pushgate

/// APNs over HTTP/2 with provider-token authentication: one shared token, refreshed on
/// `ExpiredProviderToken` with the request retried once.
public final class APNSProvider: PushProvider {
    public let platform = Platform.apns
    private let endpoint: String
    /// Where broadcasts to channels go (`apns.broadcastEndpoint`).
    private let broadcastEndpoint: String
    private let topic: String
    private let tokens: APNSTokenManager?
    private let transport: any PushTransport
    private let retry: RetryingDelivery
    private let maximumInFlight: Int

    /// - Parameter tokens: nil for certificate authentication (the transport presents the certificate).
    public init(
        endpoint: String, broadcastEndpoint: String? = nil, topic: String, tokens: APNSTokenManager?, transport: any PushTransport,
        policy: RetryPolicy, clock: any PushgateClock, maximumInFlight: Int = 1000, tracing: PushgateTracing = .off
    ) {
        self.endpoint = endpoint
        self.broadcastEndpoint = broadcastEndpoint ?? endpoint
        self.topic = topic
        self.tokens = tokens
        self.transport = transport
        self.retry = RetryingDelivery(policy: policy, clock: clock, spans: tracing.pushRequests(service: "apns"))
        self.maximumInFlight = maximumInFlight
    }

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        var credential: (@Sendable (Bool, String?) async -> CredentialOutcome)?
        if let tokens {
            credential = { refresh, previous in
                do {
                    return .issued(try await (refresh && previous != nil ? tokens.refresh(after: previous!) : tokens.token()))
                } catch {
                    return .refused(DeliveryVerdict(outcome: .invalidCredentials, reason: "cannot sign a provider token: \(error)"))
                }
            }
        }
        let (endpoint, broadcastEndpoint) = (endpoint, broadcastEndpoint)
        let topic = topic
        let shared = SharedHeaders()
        return await retry.deliverAll(
            to: targets, transport: transport, credential: credential,
            request: { target, token in
                if let channelID = APNSChannelRecipient.channelID(of: target) {
                    return APNSWire.broadcastRequest(
                        endpoint: broadcastEndpoint, bundleID: topic, channelID: channelID, notification: notification, providerToken: token
                    )
                }
                return APNSWire.request(
                    endpoint: endpoint, deviceToken: target.handle.value, notification: notification,
                    headers: shared.headers(for: token) { APNSWire.headers(notification: notification, topic: topic, providerToken: $0) })
            },
            classify: { [keyID = tokens?.keyID, teamID = tokens?.teamID] response, now in
                var verdict = APNSWire.classify(response, now: now)
                if verdict.reason == "InvalidProviderToken", let keyID, let teamID {
                    // Name what to check; the key itself never appears.
                    verdict.reason =
                        "InvalidProviderToken: APNs does not accept tokens signed with key id \(keyID) for team \(teamID); check apns.keyId, apns.teamId and the .p8 key"
                }
                return verdict
            }, maximumInFlight: maximumInFlight, answers: answers)
    }

    public func shutdown() async { await transport.shutdown() }

    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? {
        if let channelID = APNSChannelRecipient.channelID(of: target) {
            return APNSWire.broadcastRequest(
                endpoint: broadcastEndpoint, bundleID: topic, channelID: channelID, notification: notification,
                providerToken: tokens == nil ? nil : Self.credentialPlaceholder)
        }
        return APNSWire.request(
            endpoint: endpoint, deviceToken: target.handle.value, notification: notification, topic: topic,
            providerToken: tokens == nil ? nil : Self.credentialPlaceholder)
    }
}
