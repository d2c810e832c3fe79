import Pushgate

/// Huawei Push Kit (server API v1): a page's targets carried in requests of up to 1,000 tokens of
/// one message, answered per token (``HMSWire/classify(_:tokens:now:)``); only the tokens the
/// answer calls retryable are sent again, and a refused OAuth token is refreshed once a round
/// (``BatchedRetryingDelivery``). Nothing of Huawei's is above it.
public final class HMSProvider: PushProvider {
    public let platform = Platform.hms
    private let endpoint: String
    private let appID: String
    private let tokens: OAuthTokenManager
    private let transport: any PushTransport
    private let batched: BatchedRetryingDelivery

    public init(
        endpoint: String, tokenEndpoint: String, appID: String, appSecret: String, transport: any PushTransport, policy: RetryPolicy,
        clock: any PushgateClock, maximumTokensPerRequest: Int = 1000
    ) {
        self.endpoint = endpoint
        self.appID = appID
        self.transport = transport
        batched = BatchedRetryingDelivery(policy: policy, clock: clock, maximumPerRequest: min(1000, maximumTokensPerRequest))
        tokens = OAuthTokenManager(clock: clock) {
            try OAuthWire.parseToken(
                try await transport.execute(HMSWire.tokenRequest(endpoint: tokenEndpoint, appID: appID, appSecret: appSecret)))
        }
    }

    public var tokenManager: OAuthTokenManager { tokens }

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        let (endpoint, appID) = (endpoint, appID)
        return await batched.deliver(
            to: targets, transport: transport, credential: OAuthFailure.credential(tokens),
            request: { part, accessToken in
                HMSWire.request(
                    endpoint: endpoint, appID: appID, tokens: part.map(\.handle.value), notification: notification, accessToken: accessToken
                )
            },
            classify: { answer, part, now in
                switch answer {
                case .success(let response): HMSWire.classify(response, tokens: part.map(\.handle.value), now: now)
                case .failure(let error): part.map { _ in .transportFailure(error.failure, detail: error.detail) }
                }
            }, answers: answers)
    }

    public func shutdown() async { await transport.shutdown() }

    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? {
        HMSWire.request(
            endpoint: endpoint, appID: appID, tokens: [target.handle.value], notification: notification,
            accessToken: Self.credentialPlaceholder)
    }
}
