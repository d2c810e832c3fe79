import Pushgate

/// Fans one message out to its targets on every selected platform and gathers the unified result.
///
/// Targets arrive in batches (a store streams them); each batch is delivered with the providers'
/// bounded concurrency before the next is taken, so memory stays proportional to the batch size.
public final class Dispatcher: Sendable {
    private let providers: [Platform: any PushProvider]

    public init(providers: [any PushProvider]) {
        self.providers = Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Delivers the rendered `payloads` (one per platform) to `targets`.
    ///
    /// Targets of a platform with no payload or no configured provider get `Skipped`.
    public func dispatch(
        notificationID: String, selection: PlatformSelection, payloads: [Platform: RenderedNotification],
        targets: some AsyncSequence<[DispatchTarget], Never>
    ) async -> NotificationResult {
        var results: [TargetResult] = []
        for await batch in targets {
            let byPlatform = Dictionary(grouping: batch.filter { selection.contains($0.handle.platform) }, by: \.handle.platform)
            let reports = await withTaskGroup(of: [DeliveryReport].self) { group in
                for (platform, platformTargets) in byPlatform {
                    guard let provider = providers[platform], let payload = payloads[platform] else {
                        let reason = providers[platform] == nil ? "\(platform.serviceName) is not configured" : "no \(platform) template"
                        group.addTask {
                            platformTargets.map {
                                DeliveryReport(
                                    target: $0, verdict: DeliveryVerdict(outcome: .skipped, reason: reason), attempts: 0,
                                    latencyMilliseconds: 0)
                            }
                        }
                        continue
                    }
                    group.addTask { await provider.deliver(payload, to: platformTargets) }
                }
                return await group.reduce(into: [DeliveryReport]()) { $0.append(contentsOf: $1) }
            }
            results.append(contentsOf: reports.map(\.targetResult))
        }
        return NotificationResult(notificationID: notificationID, selection: selection, targets: results)
    }

    /// Delivers to an in-memory list of targets.
    public func dispatch(
        notificationID: String, selection: PlatformSelection, payloads: [Platform: RenderedNotification], targets: [DispatchTarget]
    )
        async -> NotificationResult
    {
        await dispatch(
            notificationID: notificationID, selection: selection, payloads: payloads,
            targets: AsyncStream { continuation in
                continuation.yield(targets)
                continuation.finish()
            })
    }

    /// Shuts every provider down.
    public func shutdown() async {
        for provider in providers.values { await provider.shutdown() }
    }
}
