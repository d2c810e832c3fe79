import Pushgate
import Synchronization

/// The final word on one device: the verdict after retries, how many attempts it took, how long.
public struct DeliveryReport: Sendable, Hashable {
    public var target: DispatchTarget
    public var verdict: DeliveryVerdict
    public var attempts: Int
    public var latencyMilliseconds: Double

    public init(target: DispatchTarget, verdict: DeliveryVerdict, attempts: Int, latencyMilliseconds: Double) {
        self.target = target
        self.verdict = verdict
        self.attempts = attempts
        self.latencyMilliseconds = latencyMilliseconds
    }

    /// The report as a unified per-target result.
    public var targetResult: TargetResult {
        // Only a registration's handle is removed or replaced (``DispatchTarget/Kind``).
        let action: HandleAction? =
            switch target.isRegistration ? verdict.handleChange : nil {
            case .remove: .removed
            case .replace: .replaced
            case nil: nil
            }
        return TargetResult(
            registrationID: target.registrationID, platform: target.handle.platform, maskedHandle: target.reported,
            outcome: verdict.outcome, statusCode: verdict.statusCode, reason: verdict.reason, serviceMessageID: verdict.serviceMessageID,
            attempts: attempts, latencyMilliseconds: latencyMilliseconds, handleAction: action, diagnostics: verdict.diagnostics)
    }
}

/// Delivers rendered notifications to one push service.
public protocol PushProvider: Sendable {
    var platform: Platform { get }
    /// Delivers `notification` to every target (all on this provider's platform), with retries;
    /// one report per target, in the order of `targets`. A target's report also goes to `answers`
    /// as soon as it is final, where the provider can tell before the whole batch is done.
    func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?) async -> [DeliveryReport]
    /// Stops the provider's connections; deliveries in flight end as `Abandoned`.
    func shutdown() async
    /// The request `deliver` would send `notification` to `target` with, built by the same wire
    /// code, with ``PushProvider/credentialPlaceholder`` where its credential goes (a dry run shows
    /// it; nothing is signed or sent). nil where the provider cannot tell.
    func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest?
}

extension PushProvider {
    /// What stands for a credential in a ``preview(_:to:)``.
    public static var credentialPlaceholder: String { "<credential>" }

    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? { nil }

    /// Delivers with no early answers.
    public func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget]) async -> [DeliveryReport] {
        await deliver(notification, to: targets, answers: nil)
    }
}

/// The retry loop for one device: send, classify, and follow the ``RetryStateMachine``.
struct RetryingDelivery {
    let policy: RetryPolicy
    let clock: any PushgateClock
    /// Each sampled device delivery's `push.request` span (``deliverAll(to:transport:credential:request:classify:maximumInFlight:answers:)``).
    var spans = PushRequestSpans.off

    /// How an attempt after the first goes out.
    enum AttemptKind: Sendable, Hashable {
        case plain
        /// Right after the state machine asked for a credential refresh.
        case refreshedCredentials
        /// On a new connection (the previous one is unusable for this request).
        case newConnection
    }

    /// - Parameters:
    ///   - resuming: a delivery whose first attempt went out in a batch: its state machine, what
    ///     it decided, and that first verdict.
    ///   - attempt: sends once, as `kind` says.
    func run(
        resuming: FirstAttempt? = nil, started: ContinuousClock.Instant = .now,
        _ attempt: (_ kind: AttemptKind) async -> DeliveryVerdict
    ) async -> (verdict: DeliveryVerdict, attempts: Int, milliseconds: Double) {
        var machine =
            resuming?.machine
            ?? {
                var seeds = JitterSeeds()
                return RetryStateMachine(policy: policy, startedAt: clock.now.secondsSinceEpoch, seed: seeds.next())
            }()
        // A resumed delivery starts from what its batched first attempt decided.
        var decided = resuming.map { (verdict: $0.verdict, action: $0.action) }
        var kind = AttemptKind.plain
        while true {
            let verdict: DeliveryVerdict
            let action: RetryStateMachine.Action
            if let first = decided {
                (verdict, action) = first
                decided = nil
            } else {
                verdict = await attempt(kind)
                action = machine.record(verdict, now: clock.now.secondsSinceEpoch)
            }
            kind = .plain
            switch action {
            case .finish:
                return (verdict, machine.attempts, Self.milliseconds(since: started))
            case .refreshCredentialsAndRetry:
                kind = .refreshedCredentials
            case .retryOnNewConnection:
                kind = .newConnection
            case .retry(let delay):
                do {
                    try await clock.sleep(for: .seconds(delay))
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
        classify: (PushHTTPResponse, Double) -> DeliveryVerdict,
        resuming: FirstAttempt? = nil, started: ContinuousClock.Instant = .now
    ) async -> DeliveryReport {
        var previous = resuming?.credential
        let (verdict, attempts, milliseconds) = await run(resuming: resuming, started: started) { kind in
            var current: String?
            if let credential {
                switch await credential(kind == .refreshedCredentials, previous) {
                case .issued(let value): current = value
                case .refused(let verdict): return verdict
                }
                previous = current
            }
            var outgoing = request(current)
            outgoing.freshConnection = kind == .newConnection
            let answer: Result<PushHTTPResponse, PushTransportError>
            do throws(PushTransportError) {
                answer = .success(try await transport.execute(outgoing))
            } catch {
                answer = .failure(error)
            }
            return Self.verdict(answer, classify: classify, now: clock.now.secondsSinceEpoch)
        }
        return DeliveryReport(target: target, verdict: verdict, attempts: attempts, latencyMilliseconds: milliseconds)
    }

    /// The state a batched first attempt leaves a delivery in.
    struct FirstAttempt: Sendable {
        var machine: RetryStateMachine
        var action: RetryStateMachine.Action
        var verdict: DeliveryVerdict
        /// The credential the first attempt used (refreshed after it, if the service refused it).
        var credential: String?
    }

    /// Delivers to every target: the first attempts all go out as one batch (``PushTransport/executeAll(_:each:)``,
    /// no task per target); the few that need more (a retry, a refreshed credential) continue one
    /// by one, at most `maximumInFlight` at once, with the same retry rules as ``deliver(to:transport:credential:request:classify:resuming:started:)``.
    /// Each answer is classified as it arrives; a target whose answer is final goes to `answers`
    /// at once, while the rest of the batch is still on the wire.
    func deliverAll(
        to targets: [DispatchTarget], transport: any PushTransport,
        credential: (@Sendable (_ refresh: Bool, _ previous: String?) async -> CredentialOutcome)?,
        request: @escaping @Sendable (_ target: DispatchTarget, _ credential: String?) -> PushHTTPRequest,
        classify: @escaping @Sendable (PushHTTPResponse, Double) -> DeliveryVerdict,
        maximumInFlight: Int, answers: DeliveryAnswers? = nil
    ) async -> [DeliveryReport] {
        guard !targets.isEmpty else { return [] }
        let started = ContinuousClock.now
        let startedAt = clock.now.secondsSinceEpoch
        var issued: String?
        var refused: DeliveryVerdict?
        switch await credential?(false, nil) {
        case .issued(let value)?: issued = value
        case .refused(let verdict)?: refused = verdict
        case nil: break
        }
        /// Each target's final report, or the state its first attempt left it in.
        enum First: Sendable {
            case final(DeliveryReport)
            case pending(FirstAttempt)
        }
        let firsts = Mutex([First?](repeating: nil, count: targets.count))
        // Empty unless tracing is on: then one per target, nil where it is not sampled.
        let spans = self.spans.start(targets.count)
        let (policy, clock) = (policy, clock)
        let token = issued
        // One system-random draw for the page; each target's jitter from its place after it.
        var seeds = JitterSeeds()
        let seedBase = seeds.next()
        let settle: @Sendable (Int, DeliveryVerdict, Double) -> Void = { index, verdict, now in
            var machine = RetryStateMachine(policy: policy, startedAt: startedAt, seed: seedBase &+ UInt64(index))
            let action = machine.record(verdict, now: now)
            let first: First
            if action == .finish {
                let report = DeliveryReport(
                    target: targets[index], verdict: verdict, attempts: machine.attempts,
                    latencyMilliseconds: Self.milliseconds(since: started))
                answers?.record(report)
                if !spans.isEmpty { PushRequestSpans.end(spans[index], verdict: verdict, attempts: report.attempts) }
                first = .final(report)
            } else {
                first = .pending(FirstAttempt(machine: machine, action: action, verdict: verdict, credential: token))
            }
            firsts.withLock { $0[index] = first }
        }
        if let refused {
            let now = clock.now.secondsSinceEpoch
            for index in targets.indices { settle(index, refused, now) }
        } else {
            await transport.executeAll(targets.map { request($0, token) }) { index, answer in
                let now = clock.now.secondsSinceEpoch
                settle(index, Self.verdict(answer, classify: classify, now: now), now)
            }
        }
        var reports = [DeliveryReport?](repeating: nil, count: targets.count)
        var pending: [(index: Int, first: FirstAttempt)] = []
        for (index, first) in firsts.withLock({ $0 }).enumerated() {
            switch first {
            case .final(let report)?: reports[index] = report
            case .pending(let attempt)?: pending.append((index, attempt))
            case nil:
                // Every request is answered before executeAll returns; a transport that broke
                // that promise reports the target as never sent.
                let report = DeliveryReport(
                    target: targets[index], verdict: .transportFailure(.local, detail: "the transport gave no answer"), attempts: 1,
                    latencyMilliseconds: Self.milliseconds(since: started))
                if !spans.isEmpty { PushRequestSpans.end(spans[index], verdict: report.verdict, attempts: report.attempts) }
                reports[index] = report
            }
        }
        if !pending.isEmpty {
            let retry = self
            let followUps = await boundedConcurrentMap(pending, limit: maximumInFlight) { item in
                let target = targets[item.index]
                let report = await retry.deliver(
                    to: target, transport: transport, credential: credential, request: { request(target, $0) }, classify: classify,
                    resuming: item.first, started: started)
                answers?.record(report)
                if !spans.isEmpty { PushRequestSpans.end(spans[item.index], verdict: report.verdict, attempts: report.attempts) }
                return report
            }
            for (item, report) in zip(pending, followUps) { reports[item.index] = report }
        }
        return reports.map { $0! }
    }

    /// The verdict on one answer: the service's, classified, or the transport failure.
    static func verdict(
        _ answer: Result<PushHTTPResponse, PushTransportError>, classify: (PushHTTPResponse, Double) -> DeliveryVerdict, now: Double
    ) -> DeliveryVerdict {
        switch answer {
        case .success(let response): classify(response, now)
        case .failure(let error): .transportFailure(error.failure, detail: error.detail)
        }
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
package enum CredentialOutcome: Sendable {
    case issued(String)
    case refused(DeliveryVerdict)
}

/// The headers a send's requests share, built once per credential rather than once per request:
/// a fan-out sends thousands with the same authorization, and the curl client then shares one
/// header list among them.
final class SharedHeaders: Sendable {
    private let last = Mutex<(credential: String?, headers: [HTTPHeader])?>(nil)

    func headers(for credential: String?, build: (String?) -> [HTTPHeader]) -> [HTTPHeader] {
        if let cached = last.withLock({ $0 }), cached.credential == credential { return cached.headers }
        let built = build(credential)
        last.withLock { $0 = (credential, built) }
        return built
    }
}
