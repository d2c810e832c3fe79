import Pushgate

/// One device to deliver to.
public struct DispatchTarget: Sendable, Hashable {
    public var registrationID: RegistrationID
    public var handle: DeviceHandle

    public init(registrationID: RegistrationID, handle: DeviceHandle) {
        self.registrationID = registrationID
        self.handle = handle
    }
}

/// The final word on one device: the verdict after retries, how many attempts it took, how long.
public struct DeliveryReport: Sendable, Hashable {
    public var target: DispatchTarget
    public var verdict: DeliveryVerdict
    public var attempts: Int
    public var latencyMilliseconds: Double

    /// The report as a unified per-target result.
    public var targetResult: TargetResult {
        let action: HandleAction? =
            switch verdict.handleChange {
            case .remove: .removed
            case .replace: .replaced
            case nil: nil
            }
        return TargetResult(
            registrationID: target.registrationID, platform: target.handle.platform, maskedHandle: target.handle.masked,
            outcome: verdict.outcome, statusCode: verdict.statusCode, reason: verdict.reason, serviceMessageID: verdict.serviceMessageID,
            attempts: attempts, latencyMilliseconds: latencyMilliseconds, handleAction: action)
    }
}

/// Delivers rendered notifications to one push service.
public protocol PushProvider: Sendable {
    var platform: Platform { get }
    /// Delivers `notification` to every target (all on this provider's platform), with retries;
    /// one report per target, in the order of `targets`.
    func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget]) async -> [DeliveryReport]
    /// Stops the provider's connections; deliveries in flight end as `Abandoned`.
    func shutdown() async
}

/// The retry loop for one device: send, classify, and follow the ``RetryStateMachine``.
struct RetryingDelivery {
    let policy: RetryPolicy
    let clock: any DispatchClock

    /// - Parameter attempt: sends once; `refreshCredentials` is true right after the state machine
    ///   asked for a credential refresh.
    func run(
        _ attempt: (_ refreshCredentials: Bool) async -> DeliveryVerdict
    ) async -> (verdict: DeliveryVerdict, attempts: Int, milliseconds: Double) {
        let started = ContinuousClock.now
        var machine = RetryStateMachine(policy: policy, startedAt: clock.now())
        var refresh = false
        while true {
            let verdict = await attempt(refresh)
            refresh = false
            switch machine.record(verdict, now: clock.now()) {
            case .finish:
                return (verdict, machine.attempts, Self.milliseconds(since: started))
            case .refreshCredentialsAndRetry:
                refresh = true
            case .retry(let delay):
                do {
                    try await clock.sleep(seconds: delay)
                } catch {
                    return (verdict, machine.attempts, Self.milliseconds(since: started))
                }
            }
        }
    }

    /// Delivers to one device with retries: takes a credential (`credential(refresh, previous)`,
    /// nil when the service needs none), builds the request, sends it and classifies the answer.
    /// A credential failure is itself the verdict.
    func deliver(
        to target: DispatchTarget, transport: any PushTransport,
        credential: ((_ refresh: Bool, _ previous: String?) async -> CredentialOutcome)?,
        request: (_ credential: String?) -> PushHTTPRequest,
        classify: (PushHTTPResponse, Double) -> DeliveryVerdict
    ) async -> DeliveryReport {
        var previous: String?
        let (verdict, attempts, milliseconds) = await run { refresh in
            var current: String?
            if let credential {
                switch await credential(refresh, previous) {
                case .issued(let value): current = value
                case .refused(let verdict): return verdict
                }
                previous = current
            }
            do throws(PushTransportError) {
                return classify(try await transport.execute(request(current)), clock.now())
            } catch {
                return .transportFailure(error.failure, detail: error.detail)
            }
        }
        return DeliveryReport(target: target, verdict: verdict, attempts: attempts, latencyMilliseconds: milliseconds)
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }
}

/// Runs `body` for every element with at most `limit` running at once; results in input order.
func boundedConcurrentMap<Element: Sendable, Result: Sendable>(
    _ elements: [Element], limit: Int, _ body: @escaping @Sendable (Element) async -> Result
) async -> [Result] {
    await withTaskGroup(of: (Int, Result).self) { group in
        var results = [Result?](repeating: nil, count: elements.count)
        var next = 0
        while next < elements.count && next < limit {
            let index = next
            group.addTask { (index, await body(elements[index])) }
            next += 1
        }
        while let (index, result) = await group.next() {
            results[index] = result
            if next < elements.count {
                let upcoming = next
                group.addTask { (upcoming, await body(elements[upcoming])) }
                next += 1
            }
        }
        return results.map { $0! }
    }
}

/// A credential for one attempt: issued, or refused with the verdict to report.
enum CredentialOutcome: Sendable {
    case issued(String)
    case refused(DeliveryVerdict)
}
