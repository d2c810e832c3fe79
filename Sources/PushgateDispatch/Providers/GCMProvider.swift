import Pushgate

/// The legacy GCM/FCM HTTP API: targets in batches of up to 1000 per request, per-token results,
/// canonical ids as handle replacements; only the tokens the service calls transient are retried.
public final class GCMProvider: PushProvider {
    public let platform = Platform.gcm
    private let endpoint: String
    private let serverKey: String
    private let transport: any PushTransport
    private let policy: RetryPolicy
    private let clock: any PushgateClock
    private let batchSize: Int
    private let maximumBatchesInFlight: Int
    private let spans: PushRequestSpans

    public init(
        endpoint: String, serverKey: String, transport: any PushTransport, policy: RetryPolicy, clock: any PushgateClock,
        batchSize: Int = GCMWire.maximumBatch, maximumBatchesInFlight: Int = 8, tracing: PushgateTracing = .off
    ) {
        self.endpoint = endpoint
        self.serverKey = serverKey
        self.transport = transport
        self.policy = policy
        self.clock = clock
        self.batchSize = min(max(1, batchSize), GCMWire.maximumBatch)
        self.maximumBatchesInFlight = maximumBatchesInFlight
        spans = tracing.pushRequests(service: "gcm")
    }

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        let batches = stride(from: 0, to: targets.count, by: batchSize).map { Array(targets[$0..<min($0 + batchSize, targets.count)]) }
        return await boundedConcurrentMap(Array(batches.enumerated()), limit: maximumBatchesInFlight) { index, batch in
            await self.deliver(notification, batch: batch, first: index == 0)
        }
        .flatMap { $0 }
    }

    /// One request for `batch`, and more for its tokens the service called transient; `first`:
    /// the first of the provider's batch (its span is not left to sampling).
    private func deliver(_ notification: RenderedNotification, batch: [DispatchTarget], first: Bool) async -> [DeliveryReport] {
        let started = ContinuousClock.now
        let span = spans.start(first: first)
        var (rounds, lastStatus): (Int, Int?) = (0, nil)
        var seeds = JitterSeeds()
        var machines = batch.map { _ in RetryStateMachine(policy: policy, startedAt: clock.now.secondsSinceEpoch, seed: seeds.next()) }
        var final = [DeliveryVerdict?](repeating: nil, count: batch.count)
        // Each target's latest answer, named if a cancellation ends its wait for a retry.
        var latest = [DeliveryVerdict?](repeating: nil, count: batch.count)
        var pending = Array(batch.indices)
        while !pending.isEmpty {
            let request = GCMWire.request(
                endpoint: endpoint, serverKey: serverKey, tokens: pending.map { batch[$0].handle.value }, notification: notification)
            let verdicts: [DeliveryVerdict]
            rounds += 1
            do {
                let response = try await transport.execute(request)
                lastStatus = response.status
                verdicts = GCMWire.classify(response, tokens: pending.map { batch[$0].handle.value }, now: clock.now.secondsSinceEpoch)
            } catch {
                lastStatus = nil
                verdicts = Array(repeating: .transportFailure(error.failure, detail: error.detail), count: pending.count)
            }
            var retryDelay = 0.0
            var again: [Int] = []
            for (index, verdict) in zip(pending, verdicts) {
                latest[index] = verdict
                switch machines[index].record(verdict, now: clock.now.secondsSinceEpoch) {
                case .retry(let delay):
                    retryDelay = max(retryDelay, delay)
                    again.append(index)
                case .finish, .refreshCredentialsAndRetry, .retryOnNewConnection:
                    final[index] = verdict
                }
            }
            pending = again
            if !pending.isEmpty {
                do {
                    try await clock.sleep(for: .seconds(retryDelay))
                } catch {
                    // Cancelled while waiting to retry: each pending target is abandoned on its
                    // own account, never given another target's verdict (verdicts[0] could be
                    // another token's Success).
                    for index in pending {
                        let previous = latest[index]?.reason ?? "a transient failure"
                        final[index] = .transportFailure(.cancelled, detail: "cancelled while waiting to retry after \(previous)")
                    }
                    pending = []
                }
            }
        }
        let milliseconds = RetryingDelivery.milliseconds(since: started)
        if span != nil { PushRequestSpans.end(span, multicast: final.map { $0! }, lastStatus: lastStatus, rounds: rounds) }
        return batch.indices.map { index in
            DeliveryReport(
                target: batch[index], verdict: final[index]!, attempts: machines[index].attempts, latencyMilliseconds: milliseconds)
        }
    }

    public func shutdown() async { await transport.shutdown() }

    public func preview(_ notification: RenderedNotification, to target: DispatchTarget) -> PushHTTPRequest? {
        GCMWire.request(
            endpoint: endpoint, serverKey: Self.credentialPlaceholder, tokens: [target.handle.value], notification: notification)
    }
}
