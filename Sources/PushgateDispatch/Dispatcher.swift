import Logging
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
    /// Targets of a platform with no payload or no configured provider get `Skipped`. Every
    /// outcome is counted; per-target results are kept up to `maximumReportedTargets` (failures
    /// first once the limit is reached), so memory stays bounded however many targets stream in.
    /// Handle changes (removals, canonical replacements) are all returned, for the store to apply.
    public func dispatch(
        notificationID: String, selection: PlatformSelection, payloads: [Platform: RenderedNotification],
        targets: some AsyncSequence<[DispatchTarget], Never>, maximumReportedTargets: Int = 10_000,
        progress: (@Sendable (DispatchProgress) -> Void)? = nil, logger: Logger = Logger(label: "pushgate.dispatch")
    ) async -> DispatchSummary {
        var sofar = DispatchProgress(processed: 0, succeeded: 0)
        var results: [TargetResult] = []
        var counts: [Platform: [Outcome: Int]] = [:]
        var handleUpdates: [HandleUpdate] = []
        // Indices of listed successes, for a failure to take the place of once the list is full
        // (a stack: each replacement is O(1), not a scan of the list).
        var listedSuccesses: [Int] = []
        for await batch in targets {
            // Cancelled (shutdown past its deadline): targets already listed are not attempted.
            if Task.isCancelled { break }
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
            for report in reports {
                if !report.verdict.outcome.isSuccess {
                    // Handles are masked; reasons are the services' own words, never credentials.
                    logger.debug(
                        "delivery failed",
                        metadata: [
                            "registration": "\(report.target.registrationID)", "platform": "\(report.target.handle.platform)",
                            "handle": "\(report.target.handle.masked)", "outcome": "\(report.verdict.outcome)",
                            "status": "\(report.verdict.statusCode.map(String.init) ?? "-")", "reason": "\(report.verdict.reason ?? "-")",
                            "attempts": "\(report.attempts)",
                        ])
                }
                sofar.processed += 1
                if report.verdict.outcome.isSuccess { sofar.succeeded += 1 }
                counts[report.target.handle.platform, default: [:]][report.verdict.outcome, default: 0] += 1
                if let change = report.verdict.handleChange {
                    handleUpdates.append(
                        HandleUpdate(target: report.target, change: change, outcome: report.verdict.outcome, reason: report.verdict.reason))
                }
                if results.count < maximumReportedTargets {
                    if report.verdict.outcome.isSuccess { listedSuccesses.append(results.count) }
                    results.append(report.targetResult)
                } else if !report.verdict.outcome.isSuccess, let index = listedSuccesses.popLast() {
                    results[index] = report.targetResult
                }
            }
            progress?(sofar)
            logger.trace("batch delivered", metadata: ["targets": "\(batch.count)", "processed": "\(sofar.processed)"])
        }
        return DispatchSummary(
            result: NotificationResult(notificationID: notificationID, selection: selection, counts: counts, targets: results),
            handleUpdates: handleUpdates)
    }

    /// Delivers to an in-memory list of targets.
    public func dispatch(
        notificationID: String, selection: PlatformSelection, payloads: [Platform: RenderedNotification], targets: [DispatchTarget]
    ) async -> DispatchSummary {
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

/// How far a dispatch has got: targets answered so far, and how many of them were delivered.
public struct DispatchProgress: Sendable, Hashable {
    public var processed: Int
    public var succeeded: Int
}

/// What a dispatch produced: the unified result, and the handle changes the services asked for.
public struct DispatchSummary: Sendable {
    public var result: NotificationResult
    /// Every removal and canonical replacement, whether or not its target is listed in `result`.
    public var handleUpdates: [HandleUpdate]
}

/// A stored handle to change because of a push service's answer.
public struct HandleUpdate: Sendable, Hashable {
    public var target: DispatchTarget
    public var change: HandleChange
    /// What the service said (recorded with the removal).
    public var outcome: Outcome
    public var reason: String?
}
