import Pushgate

/// Web Push, to browsers (`browser`) and to UnifiedPush distributors (`unifiedpush`): each
/// subscription's payload encrypted for it (RFC 8291) and sent to its endpoint, over HTTP/2 where
/// the service speaks it.
///
/// - Browsers: every request carries a VAPID token for the endpoint's origin (RFC 8292); an
///   endpoint whose host is not on `handles.webPushHosts` is never requested.
/// - UnifiedPush (``UnifiedPushRules``): an endpoint on a host of `handles.unifiedPushHosts`, whose
///   resolved address the ``OutboundGuard`` admits, reached at that address only (no DNS
///   rebinding, no redirects, https only); VAPID only for a subscription that asks for it
///   (`"vapid": true`); the distributors' answers read by ``UnifiedPushWire``. Before a
///   registration is stored, the endpoint's discovery answer is checked
///   (``admissionProblem(_:)``).
public final class WebPushProvider: PushProvider, HandleAdmitting {
    public let platform: Platform
    private let handles: HandlePolicy
    private let signer: VAPIDSigner?
    private let transport: any PushTransport
    private let retry: RetryingDelivery
    private let maximumInFlight: Int
    private let unifiedPush: UnifiedPushRules?

    /// Web Push to browsers, signed with `signer`.
    public convenience init(
        signer: VAPIDSigner, handles: HandlePolicy, transport: any PushTransport, policy: RetryPolicy, clock: any PushgateClock,
        maximumInFlight: Int = 1000, tracing: PushgateTracing = .off
    ) {
        self.init(
            platform: .browser, signer: signer, handles: handles, transport: transport, policy: policy, clock: clock,
            maximumInFlight: maximumInFlight, tracing: tracing, unifiedPush: nil)
    }

    /// UnifiedPush by `rules`; `signer` signs the subscriptions that ask for VAPID (nil: the
    /// app has no VAPID key, and such a subscription is answered `InvalidCredentials`).
    public convenience init(
        unifiedPush rules: UnifiedPushRules, signer: VAPIDSigner?, handles: HandlePolicy, transport: any PushTransport, policy: RetryPolicy,
        clock: any PushgateClock, maximumInFlight: Int = 1000, tracing: PushgateTracing = .off
    ) {
        self.init(
            platform: .unifiedpush, signer: signer, handles: handles, transport: transport, policy: policy, clock: clock,
            maximumInFlight: maximumInFlight, tracing: tracing, unifiedPush: rules)
    }

    private init(
        platform: Platform, signer: VAPIDSigner?, handles: HandlePolicy, transport: any PushTransport, policy: RetryPolicy,
        clock: any PushgateClock, maximumInFlight: Int, tracing: PushgateTracing, unifiedPush: UnifiedPushRules?
    ) {
        self.platform = platform
        self.signer = signer
        self.handles = handles
        self.transport = transport
        self.retry = RetryingDelivery(
            policy: policy, clock: clock, spans: tracing.pushRequests(service: platform == .browser ? "webpush" : "unifiedpush"))
        self.maximumInFlight = maximumInFlight
        self.unifiedPush = unifiedPush
    }

    public var vapidSigner: VAPIDSigner? { signer }

    /// One request prepared for a target.
    private struct Prepared: Sendable {
        var index: Int
        var target: DispatchTarget
        var endpoint: String
        var body: [UInt8]
        var pin: OutboundPin?
    }

    /// Requests of one origin, signed or not: one credential for all of them.
    private struct Group: Hashable {
        var origin: String
        var signed: Bool
    }

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        var reports = [DeliveryReport?](repeating: nil, count: targets.count)
        func refuse(_ index: Int, _ outcome: Outcome, _ reason: String) {
            reports[index] = DeliveryReport(
                target: targets[index], verdict: DeliveryVerdict(outcome: outcome, reason: reason), attempts: 0, latencyMilliseconds: 0)
        }
        // The allow-list, the address and the subscription's keys first: an endpoint elsewhere is
        // never contacted, and a key that is no P-256 point is the subscription's fault.
        var groups: [Group: [Prepared]] = [:]
        var pins: [String: Result<OutboundPin, OutboundRefusal>] = [:]
        for (index, target) in targets.enumerated() {
            // One parse of the stored subscription; its endpoint checked against the allow-list.
            guard let subscription = WebPushSubscription(handleValue: target.handle.value) else {
                refuse(index, .badChannel, "the handle is not a \(platform.serviceName) subscription")
                continue
            }
            let signed = unifiedPush == nil || subscription.vapid
            if signed, signer == nil {
                refuse(
                    index, .invalidCredentials,
                    #"the subscription asks for VAPID ("vapid": true) and services.unifiedpush has no VAPID key"#)
                continue
            }
            var pin: OutboundPin?
            do {
                if let unifiedPush {
                    // Checked again before every send: a registration stored under other rules
                    // (a reload since, an import) is never contacted.
                    do { try handles.checkUnifiedPushEndpoint(subscription.endpoint) } catch {
                        refuse(index, .badChannel, "not contacted: \(error.description)")
                        continue
                    }
                    // Resolved once per origin and send (the guard caches it a little longer).
                    let resolved: Result<OutboundPin, OutboundRefusal>
                    if let known = pins[subscription.origin] {
                        resolved = known
                    } else {
                        do {
                            resolved = .success(
                                try await unifiedPush.outbound.pin(url: subscription.endpoint, allowed: handles.unifiedPushHosts))
                        } catch {
                            resolved = .failure(error)
                        }
                        pins[subscription.origin] = resolved
                    }
                    switch resolved {
                    case .success(let value): pin = value
                    case .failure(let refusal):
                        refuse(index, .badChannel, "not contacted: \(refusal)")
                        continue
                    }
                } else {
                    try handles.checkWebPushEndpoint(subscription.endpoint)
                }
                let body = try WebPushEncryption.encrypt(notification.body, for: subscription)
                groups[Group(origin: subscription.origin, signed: signed), default: []].append(
                    Prepared(index: index, target: target, endpoint: subscription.endpoint, body: body, pin: pin))
            } catch let error as WebPushEncryption.Failure {
                let outcome: Outcome = if case .tooLarge = error { .invalidNotificationSize } else { .badChannel }
                refuse(index, outcome, error.description)
            } catch {
                refuse(index, .badChannel, String(describing: error))
            }
        }
        let (signer, transport, retry, maximumInFlight) = (signer, transport, retry, maximumInFlight)
        let noActiveSubscriber = unifiedPush?.noActiveSubscriber
        let delivered = await withTaskGroup(of: [(Int, DeliveryReport)].self) { taskGroup in
            for (group, items) in groups {
                taskGroup.addTask {
                    let requests = Dictionary(items.map { ($0.target, $0) }, uniquingKeysWith: { first, _ in first })
                    let credential: (@Sendable (Bool, String?) async -> CredentialOutcome)? =
                        if group.signed, let signer {
                            { refresh, previous in
                                await Self.credential(signer: signer, audience: group.origin, refresh: refresh, previous: previous)
                            }
                        } else {
                            nil
                        }
                    let reports = await retry.deliverAll(
                        to: items.map(\.target), transport: transport, credential: credential,
                        request: { target, authorization in
                            let prepared = requests[target]
                            var request = WebPushWire.request(
                                endpoint: prepared?.endpoint ?? "", encryptedBody: prepared?.body ?? [], notification: notification,
                                authorization: group.signed ? authorization ?? "" : nil)
                            request.pin = prepared?.pin
                            return request
                        },
                        classify: { response, now in
                            if let noActiveSubscriber {
                                UnifiedPushWire.classify(response, now: now, signed: group.signed, noActiveSubscriber: noActiveSubscriber)
                            } else {
                                WebPushWire.classify(response, now: now)
                            }
                        }, maximumInFlight: maximumInFlight, answers: answers)
                    return zip(items.map(\.index), reports).map { ($0, $1) }
                }
            }
            var all: [(Int, DeliveryReport)] = []
            for await part in taskGroup { all += part }
            return all
        }
        for (index, report) in delivered { reports[index] = report }
        return reports.map { $0! }
    }

    /// A VAPID token for `audience`, as an `Authorization` value (signed afresh after a refusal).
    private static func credential(signer: VAPIDSigner, audience: String, refresh: Bool, previous: String?) async -> CredentialOutcome {
        do {
            let token =
                if refresh, let previous {
                    try await signer.refresh(audience: audience, after: previous)
                } else {
                    try await signer.token(audience: audience)
                }
            return .issued(WebPushWire.authorization(token: token, publicKey: signer.publicKey))
        } catch {
            return .refused(DeliveryVerdict(outcome: .invalidCredentials, reason: "cannot sign a VAPID token: \(error)"))
        }
    }

    /// A UnifiedPush registration's check before it is stored: the endpoint on the allow-list,
    /// a VAPID key for a subscription that asks for one, and the endpoint's discovery answer
    /// (``UnifiedPushDiscovery``). nil for a browser's subscription (its services are known).
    public func admissionProblem(_ handle: DeviceHandle) async -> String? {
        guard let unifiedPush, handle.platform == .unifiedpush else { return nil }
        guard let subscription = WebPushSubscription(handleValue: handle.value) else {
            return "the handle is not a UnifiedPush subscription"
        }
        if subscription.vapid, signer == nil {
            return #"it asks for VAPID ("vapid": true) and services.unifiedpush has no VAPID key"#
        }
        do { try handles.checkUnifiedPushEndpoint(subscription.endpoint) } catch { return error.description }
        return await unifiedPush.discovery.problem(endpoint: subscription.endpoint, allowed: handles.unifiedPushHosts)
    }

    public func shutdown() async {
        await transport.shutdown()
        await unifiedPush?.discovery.shutdown()
    }

    /// The body is the plaintext: it is encrypted for each subscription (RFC 8291) as it is sent.
    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? {
        guard let subscription = WebPushSubscription(handleValue: target.handle.value) else { return nil }
        let signed = unifiedPush == nil || subscription.vapid
        return WebPushWire.request(
            endpoint: subscription.endpoint, encryptedBody: notification.body, notification: notification,
            authorization: signed ? WebPushWire.authorization(token: Self.credentialPlaceholder, publicKey: signer?.publicKey ?? "") : nil)
    }
}

/// What makes a ``WebPushProvider`` a UnifiedPush one: the guard that resolves and admits each
/// endpoint's address, the discovery check made at registration, and what a 507 does.
public struct UnifiedPushRules: Sendable {
    public var outbound: OutboundGuard
    public var discovery: UnifiedPushDiscovery
    public var noActiveSubscriber: UnifiedPushConfiguration.NoActiveSubscriber

    public init(outbound: OutboundGuard, discovery: UnifiedPushDiscovery, noActiveSubscriber: UnifiedPushConfiguration.NoActiveSubscriber) {
        self.outbound = outbound
        self.discovery = discovery
        self.noActiveSubscriber = noActiveSubscriber
    }
}
