import Pushgate

/// Web Push to browsers: each subscription's payload encrypted for it (RFC 8291) and sent to its
/// endpoint with a VAPID token for the endpoint's origin (RFC 8292), over HTTP/2 where the service
/// speaks it. An endpoint whose host is not on `handles.webPushHosts` is never requested.
public final class WebPushProvider: PushProvider {
    public let platform = Platform.browser
    private let handles: HandlePolicy
    private let signer: VAPIDSigner
    private let transport: any PushTransport
    private let retry: RetryingDelivery
    private let maximumInFlight: Int

    public init(
        signer: VAPIDSigner, handles: HandlePolicy, transport: any PushTransport, policy: RetryPolicy, clock: any PushgateClock,
        maximumInFlight: Int = 1000, tracing: PushgateTracing = .off
    ) {
        self.signer = signer
        self.handles = handles
        self.transport = transport
        self.retry = RetryingDelivery(policy: policy, clock: clock, spans: tracing.pushRequests(service: "webpush"))
        self.maximumInFlight = maximumInFlight
    }

    public var vapidSigner: VAPIDSigner { signer }

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        var reports = [DeliveryReport?](repeating: nil, count: targets.count)
        // The allow-list and the subscription's keys first: an endpoint elsewhere is never
        // contacted, and a key that is no P-256 point is the subscription's fault.
        var byOrigin: [String: [(index: Int, target: DispatchTarget, request: (endpoint: String, body: [UInt8]))]] = [:]
        for (index, target) in targets.enumerated() {
            // One parse of the stored subscription; its endpoint checked against the allow-list.
            guard let subscription = WebPushSubscription(handleValue: target.handle.value) else {
                reports[index] = DeliveryReport(
                    target: target, verdict: DeliveryVerdict(outcome: .badChannel, reason: "the handle is not a Web Push subscription"),
                    attempts: 0, latencyMilliseconds: 0)
                continue
            }
            do {
                try handles.checkWebPushEndpoint(subscription.endpoint)
                let body = try WebPushEncryption.encrypt(notification.body, for: subscription)
                byOrigin[subscription.origin, default: []].append((index, target, (subscription.endpoint, body)))
            } catch let error as WebPushEncryption.Failure {
                let outcome: Outcome = if case .tooLarge = error { .invalidNotificationSize } else { .badChannel }
                reports[index] = DeliveryReport(
                    target: target, verdict: DeliveryVerdict(outcome: outcome, reason: error.description), attempts: 0,
                    latencyMilliseconds: 0)
            } catch {
                reports[index] = DeliveryReport(
                    target: target, verdict: DeliveryVerdict(outcome: .badChannel, reason: String(describing: error)), attempts: 0,
                    latencyMilliseconds: 0)
            }
        }
        let (signer, transport, retry, maximumInFlight) = (signer, transport, retry, maximumInFlight)
        let delivered = await withTaskGroup(of: [(Int, DeliveryReport)].self) { group in
            for (origin, items) in byOrigin {
                group.addTask {
                    let requests = Dictionary(items.map { ($0.target, $0.request) }, uniquingKeysWith: { first, _ in first })
                    let reports = await retry.deliverAll(
                        to: items.map(\.target), transport: transport,
                        credential: { refresh, previous in
                            do {
                                let token =
                                    if refresh, let previous {
                                        try await signer.refresh(audience: origin, after: previous)
                                    } else {
                                        try await signer.token(audience: origin)
                                    }
                                return .issued(WebPushWire.authorization(token: token, publicKey: signer.publicKey))
                            } catch {
                                return .refused(
                                    DeliveryVerdict(outcome: .invalidCredentials, reason: "cannot sign a VAPID token: \(error)"))
                            }
                        },
                        request: { target, authorization in
                            let prepared = requests[target]
                            return WebPushWire.request(
                                endpoint: prepared?.endpoint ?? "", encryptedBody: prepared?.body ?? [], notification: notification,
                                authorization: authorization ?? "")
                        },
                        classify: WebPushWire.classify, maximumInFlight: maximumInFlight, answers: answers)
                    return zip(items.map(\.index), reports).map { ($0, $1) }
                }
            }
            var all: [(Int, DeliveryReport)] = []
            for await part in group { all += part }
            return all
        }
        for (index, report) in delivered { reports[index] = report }
        return reports.map { $0! }
    }

    public func shutdown() async { await transport.shutdown() }

    /// The body is the plaintext: it is encrypted for each subscription (RFC 8291) as it is sent.
    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? {
        guard let subscription = WebPushSubscription(handleValue: target.handle.value) else { return nil }
        return WebPushWire.request(
            endpoint: subscription.endpoint, encryptedBody: notification.body, notification: notification,
            authorization: WebPushWire.authorization(token: Self.credentialPlaceholder, publicKey: signer.publicKey))
    }
}
