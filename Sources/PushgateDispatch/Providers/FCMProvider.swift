import Pushgate

/// FCM HTTP v1 with a service account: OAuth token cached until shortly before it expires,
/// refreshed once on 401. As the `gcm` platform's provider it delivers legacy GCM messages
/// through v1, each translated (``LegacyGCMTranslation``): the tokens are the same for both APIs.
public final class FCMProvider: PushProvider {
    public let platform: Platform
    private let endpoint: String
    private let account: GoogleServiceAccount
    private let tokens: OAuthTokenManager
    private let transport: any PushTransport
    private let retry: RetryingDelivery
    private let maximumInFlight: Int
    private let clock: any PushgateClock

    public init(
        endpoint: String, account: GoogleServiceAccount, transport: any PushTransport, policy: RetryPolicy, clock: any PushgateClock,
        maximumInFlight: Int = 1000, platform: Platform = .fcm, tracing: PushgateTracing = .off
    ) {
        precondition(platform == .fcm || platform == .gcm, "FCM v1 delivers fcm and (translated) gcm messages")
        self.platform = platform
        self.clock = clock
        self.endpoint = endpoint
        self.account = account
        self.transport = transport
        // Legacy GCM messages translated to v1 are requests to FCM too.
        self.retry = RetryingDelivery(policy: policy, clock: clock, spans: tracing.pushRequests(service: "fcm"))
        self.maximumInFlight = maximumInFlight
        self.tokens = OAuthTokenManager(clock: clock) {
            let assertion = try await account.assertion(now: clock.now.secondsSinceEpoch)
            let response = try await transport.execute(OAuthWire.googleTokenRequest(tokenURI: account.tokenURI, assertion: assertion))
            return try OAuthWire.parseToken(response)
        }
    }

    /// The token manager (tests check refresh counts).
    public var tokenManager: OAuthTokenManager { tokens }

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        let notification =
            platform == .gcm ? LegacyGCMTranslation.v1Notification(notification, now: clock.now.secondsSinceEpoch) : notification
        let endpoint = endpoint
        let projectID = account.projectID
        return await retry.deliverAll(
            to: targets, transport: transport, credential: OAuthFailure.credential(tokens),
            request: { [url = FCMWire.url(endpoint: endpoint, projectID: projectID), shared = SharedHeaders()] target, accessToken in
                FCMWire.request(
                    url: url, token: target.handle.value, notification: notification,
                    headers: shared.headers(for: accessToken) { FCMWire.headers(accessToken: $0 ?? "") })
            },
            classify: FCMWire.classify, maximumInFlight: maximumInFlight, answers: answers
        ).map { report in
            // A topic or condition is no registration: nothing to prune or replace.
            guard report.verdict.handleChange != nil, report.target.handle.fcmRecipient != nil else { return report }
            var report = report
            report.verdict.handleChange = nil
            return report
        }
    }

    public func shutdown() async { await transport.shutdown() }

    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? {
        let notification =
            platform == .gcm ? LegacyGCMTranslation.v1Notification(notification, now: clock.now.secondsSinceEpoch) : notification
        return FCMWire.request(
            url: FCMWire.url(endpoint: endpoint, projectID: account.projectID), token: target.handle.value, notification: notification,
            headers: FCMWire.headers(accessToken: Self.credentialPlaceholder))
    }
}

/// The verdict when no access token could be had.
enum OAuthFailure {
    /// A credential source for ``RetryingDelivery/deliver(to:transport:credential:request:classify:)``.
    static func credential(_ tokens: OAuthTokenManager) -> @Sendable (Bool, String?) async -> CredentialOutcome {
        { refresh, previous in
            do {
                return .issued(try await (refresh && previous != nil ? tokens.refresh(after: previous!) : tokens.token()))
            } catch {
                return .refused(verdict(for: error))
            }
        }
    }

    static func verdict(for error: any Error) -> DeliveryVerdict {
        if let error = error as? OAuthError {
            // A token endpoint that is busy (Huawei's rate limiting is a 503) is asked again later.
            if [429, 500, 502, 503, 504].contains(error.status) {
                return DeliveryVerdict(
                    outcome: .tokenProviderUnreachable, statusCode: error.status, reason: "token endpoint: \(error.description)",
                    retry: .afterBackoff(retryAfterSeconds: nil))
            }
            return DeliveryVerdict(outcome: .invalidCredentials, statusCode: error.status, reason: error.description)
        }
        if let error = error as? PushTransportError {
            return DeliveryVerdict(
                outcome: .tokenProviderUnreachable, reason: "token endpoint: \(error.description)",
                retry: .afterBackoff(retryAfterSeconds: nil))
        }
        return DeliveryVerdict(outcome: .invalidCredentials, reason: "cannot obtain an access token: \(error)")
    }
}
