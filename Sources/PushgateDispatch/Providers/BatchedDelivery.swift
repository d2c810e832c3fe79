import Pushgate

/// The retry loop of a service that carries many targets in one request and answers per target
/// (Huawei Push Kit: up to 1,000 tokens a message): what a provider of such a service delivers a
/// page with, so that nothing about batching or retries is its own.
///
/// Each round sends the targets still pending in requests of at most `maximumPerRequest`, reads
/// one verdict per target from each answer, and follows each target's own ``RetryStateMachine``:
/// only the targets whose machine asks to go again are sent again, together, in the next round's
/// requests; the others are final at once (and go to `answers` as they are). A request takes its
/// credential once: refreshed when any of its targets' last answer asked for it, so a rejected
/// token costs one refresh per request, not one per target. A round waits as long as the longest
/// backoff any of its retried targets asks for.
package struct BatchedRetryingDelivery: Sendable {
    package let policy: RetryPolicy
    package let clock: any PushgateClock
    package let maximumPerRequest: Int

    package init(policy: RetryPolicy, clock: any PushgateClock, maximumPerRequest: Int) {
        self.policy = policy
        self.clock = clock
        self.maximumPerRequest = max(1, maximumPerRequest)
    }

    /// The verdicts on one request's answer, one per target of the request in its order (a
    /// transport failure, or a whole-request refusal, gives every target the same verdict).
    package typealias Classify =
        @Sendable (_ answer: Result<PushHTTPResponse, PushTransportError>, _ targets: [DispatchTarget], _ now: Double) -> [DeliveryVerdict]

    /// Delivers to every target; one report per target, in the order of `targets`.
    ///
    /// - Parameters:
    ///   - credential: the credential for one request (`refresh`: the previous one was refused),
    ///     nil when the service needs none; a refusal is every target's verdict.
    ///   - request: the request carrying `targets` with `credential`.
    package func deliver(
        to targets: [DispatchTarget], transport: any PushTransport,
        credential: ((_ refresh: Bool, _ previous: String?) async -> CredentialOutcome)?,
        request: (_ targets: [DispatchTarget], _ credential: String?) -> PushHTTPRequest,
        classify: Classify, answers: DeliveryAnswers? = nil
    ) async -> [DeliveryReport] {
        guard !targets.isEmpty else { return [] }
        let started = ContinuousClock.now
        let startedAt = clock.now.secondsSinceEpoch
        var seeds = JitterSeeds()
        var machines = targets.map { _ in RetryStateMachine(policy: policy, startedAt: startedAt, seed: seeds.next()) }
        var reports = [DeliveryReport?](repeating: nil, count: targets.count)
        var lastVerdicts = [DeliveryVerdict?](repeating: nil, count: targets.count)
        var pending = Array(targets.indices)
        var refresh = false
        var freshConnection = false
        var previous: String?
        while !pending.isEmpty {
            var next: [Int] = []
            var (nextRefresh, nextFresh, delay) = (false, false, 0.0)
            var start = 0
            // The credential the last round's answers refused: every request of this round asks for
            // a refresh after it, so the credential source fetches one new credential, not one per
            // request.
            let refused = previous
            while start < pending.count {
                let part = Array(pending[start..<min(start + maximumPerRequest, pending.count)])
                start += part.count
                let partTargets = part.map { targets[$0] }
                var verdicts: [DeliveryVerdict]
                var current: String?
                var credentialRefusal: DeliveryVerdict?
                if let credential {
                    switch await credential(refresh, refresh ? refused : previous) {
                    case .issued(let value): current = value
                    case .refused(let verdict): credentialRefusal = verdict
                    }
                    if current != nil { previous = current }
                }
                let now: Double
                if let credentialRefusal {
                    now = clock.now.secondsSinceEpoch
                    verdicts = Array(repeating: credentialRefusal, count: part.count)
                } else {
                    var outgoing = request(partTargets, current)
                    outgoing.freshConnection = freshConnection
                    let answer: Result<PushHTTPResponse, PushTransportError>
                    do throws(PushTransportError) {
                        answer = .success(try await transport.execute(outgoing))
                    } catch {
                        answer = .failure(error)
                    }
                    now = clock.now.secondsSinceEpoch
                    verdicts = classify(answer, partTargets, now)
                    if verdicts.count != part.count {
                        // A classifier that lost count: nothing can be said per target.
                        verdicts = Array(
                            repeating: DeliveryVerdict(
                                outcome: .unknownError, reason: "the service answered \(verdicts.count) results for \(part.count) targets"),
                            count: part.count)
                    }
                }
                for (index, verdict) in zip(part, verdicts) {
                    lastVerdicts[index] = verdict
                    switch machines[index].record(verdict, now: now) {
                    case .finish:
                        let report = DeliveryReport(
                            target: targets[index], verdict: verdict, attempts: machines[index].attempts,
                            latencyMilliseconds: RetryingDelivery.milliseconds(since: started))
                        answers?.record(report)
                        reports[index] = report
                    case .refreshCredentialsAndRetry:
                        nextRefresh = true
                        next.append(index)
                    case .retryOnNewConnection:
                        nextFresh = true
                        next.append(index)
                    case .retry(let seconds):
                        delay = max(delay, seconds)
                        next.append(index)
                    }
                }
            }
            pending = next
            (refresh, freshConnection) = (nextRefresh, nextFresh)
            if !pending.isEmpty, delay > 0 {
                do { try await clock.sleep(for: .seconds(delay)) } catch { break }
            }
        }
        // Cancelled while waiting to retry: the last answer is the verdict.
        for index in pending where reports[index] == nil {
            reports[index] = DeliveryReport(
                target: targets[index], verdict: lastVerdicts[index] ?? DeliveryVerdict(outcome: .abandoned, reason: "not sent"),
                attempts: machines[index].attempts, latencyMilliseconds: RetryingDelivery.milliseconds(since: started))
        }
        return reports.map { $0! }
    }
}
