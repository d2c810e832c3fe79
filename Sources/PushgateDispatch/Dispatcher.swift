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

    /// Delivers the rendered `payloads` (one per platform) to `targets`, as a pipeline.
    ///
    /// Up to `batchesInFlight` batches are out at once: while the push services answer one, the
    /// next page of targets is read, and the answers of a finished batch are counted while the
    /// others are still on the wire. Pages are pulled only when there is room for them, so
    /// memory follows `batchesInFlight` × the page size, not the audience.
    ///
    /// Targets of a platform with no configured provider get `InvalidCredentials`, with no payload
    /// `InvalidNotificationFormat`; a second target with the same handle in a batch gets `Skipped`. Every
    /// outcome is counted; per-target results are kept up to `maximumReportedTargets` (failures
    /// first once the limit is reached). Handle changes (removals, canonical replacements) go to
    /// `applyHandleUpdates` in chunks of up to `handleUpdateChunk` as the send goes, or, when it is
    /// nil, are all returned in the summary. When `targets` throws (the store failed), the
    /// batches already out are finished and counted and the summary's `targetsFailure` says why
    /// the rest was not sent.
    ///
    /// `batchFinished` gets each batch's reports as it finishes, with the batch's position in
    /// `targets` (0 for the first batch read): how the outbox records a page's outcomes.
    public func dispatch<Targets: AsyncSequence>(
        notificationID: String, selection: PlatformSelection, payloads: [Platform: RenderedNotification],
        targets: Targets, maximumReportedTargets: Int = 10_000, batchesInFlight: Int = 3,
        applyHandleUpdates: (@Sendable ([HandleUpdate]) async -> Void)? = nil, handleUpdateChunk: Int = 500,
        batchFinished: (@Sendable (_ index: Int, _ reports: [DeliveryReport]) async -> Void)? = nil,
        progress: (@Sendable (DispatchProgress) -> Void)? = nil, payloadGroups: PayloadGrouping? = nil,
        logger: Logger = Logger(label: "pushgate.dispatch")
    ) async -> DispatchSummary where Targets.Element == [DispatchTarget] {
        var tally = Tally(maximumReportedTargets: maximumReportedTargets)
        var pendingUpdates: [HandleUpdate] = []
        var allUpdates: [HandleUpdate] = []
        var targetsFailure: String?
        await withTaskGroup(of: (Int, [DeliveryReport]).self) { group in
            var iterator = targets.makeAsyncIterator()
            var inFlight = 0
            var batchesRead = 0
            var exhausted = false
            while true {
                // Keep the pipeline full: read pages while there is room.
                while !exhausted, inFlight < max(1, batchesInFlight) {
                    // Cancelled (shutdown past its deadline): no further page is attempted.
                    if Task.isCancelled {
                        exhausted = true
                        break
                    }
                    let batch: [DispatchTarget]?
                    do {
                        batch = try await iterator.next()
                    } catch {
                        targetsFailure = String(describing: error)
                        batch = nil
                    }
                    guard let batch else {
                        exhausted = true
                        break
                    }
                    let index = batchesRead
                    group.addTask {
                        guard let payloadGroups else { return (index, await self.deliver(batch, selection: selection, payloads: payloads)) }
                        // Each target's own payload (template registrations): one delivery per distinct payload.
                        let grouped = await payloadGroups(batch)
                        var reports = grouped.ignored
                        for part in grouped.groups {
                            reports += await self.deliver(part.targets, selection: selection, payloads: part.payloads)
                        }
                        return (index, reports)
                    }
                    batchesRead += 1
                    inFlight += 1
                }
                guard inFlight > 0, let (index, reports) = await group.next() else { break }
                inFlight -= 1
                await batchFinished?(index, reports)
                for report in reports {
                    if !report.verdict.outcome.isSuccess { Self.logFailure(report, logger: logger) }
                    tally.record(report)
                    if let change = report.verdict.handleChange {
                        let update = HandleUpdate(
                            target: report.target, change: change, outcome: report.verdict.outcome, reason: report.verdict.reason)
                        if applyHandleUpdates == nil { allUpdates.append(update) } else { pendingUpdates.append(update) }
                    }
                }
                if let applyHandleUpdates, pendingUpdates.count >= handleUpdateChunk {
                    // The other batches stay on the wire meanwhile.
                    await applyHandleUpdates(pendingUpdates)
                    pendingUpdates.removeAll(keepingCapacity: true)
                }
                progress?(tally.progress)
                logger.trace("batch delivered", metadata: ["targets": "\(reports.count)", "processed": "\(tally.progress.processed)"])
            }
        }
        if let applyHandleUpdates, !pendingUpdates.isEmpty { await applyHandleUpdates(pendingUpdates) }
        return DispatchSummary(
            result: NotificationResult(notificationID: notificationID, selection: selection, counts: tally.counts, targets: tally.results),
            handleUpdates: allUpdates, targetsFailure: targetsFailure)
    }

    /// One batch: each platform's targets to its provider, concurrently.
    private func deliver(
        _ batch: [DispatchTarget], selection: PlatformSelection, payloads: [Platform: RenderedNotification]
    ) async -> [DeliveryReport] {
        let byPlatform = Dictionary(grouping: batch.filter { selection.contains($0.handle.platform) }, by: \.handle.platform)
        return await withTaskGroup(of: [DeliveryReport].self) { group in
            for (platform, platformTargets) in byPlatform {
                guard let provider = providers[platform], let payload = payloads[platform] else {
                    // Notification Hubs' names: no credentials for the service, or no payload for it.
                    let (outcome, reason) =
                        providers[platform] == nil
                        ? (Outcome.invalidCredentials, "\(platform.serviceName) is not configured")
                        : (Outcome.invalidNotificationFormat, "no \(platform) template")
                    group.addTask {
                        platformTargets.map {
                            DeliveryReport(
                                target: $0, verdict: DeliveryVerdict(outcome: outcome, reason: reason), attempts: 0, latencyMilliseconds: 0)
                        }
                    }
                    continue
                }
                // One push per device: a second registration with the same handle is Skipped.
                var first: [String: RegistrationID] = [:]
                var unique: [DispatchTarget] = []
                var skipped: [DeliveryReport] = []
                for target in platformTargets {
                    if let holder = first[target.handle.value] {
                        let verdict = DeliveryVerdict(outcome: .skipped, reason: "registration \(holder) holds the same handle")
                        skipped.append(DeliveryReport(target: target, verdict: verdict, attempts: 0, latencyMilliseconds: 0))
                    } else {
                        first[target.handle.value] = target.registrationID
                        unique.append(target)
                    }
                }
                if !skipped.isEmpty { group.addTask { skipped } }
                group.addTask { await provider.deliver(payload, to: unique) }
            }
            return await group.reduce(into: [DeliveryReport]()) { $0.append(contentsOf: $1) }
        }
    }

    /// Handles are masked; reasons are the services' own words, never credentials.
    private static func logFailure(_ report: DeliveryReport, logger: Logger) {
        logger.debug(
            "delivery failed",
            metadata: [
                "registration": "\(report.target.registrationID)", "platform": "\(report.target.handle.platform)",
                "handle": "\(report.target.handle.masked)", "outcome": "\(report.verdict.outcome)",
                "status": "\(report.verdict.statusCode.map(String.init) ?? "-")", "reason": "\(report.verdict.reason ?? "-")",
                "attempts": "\(report.attempts)",
            ])
    }

    /// What a dispatch has counted so far: per platform and outcome, and the listed targets.
    private struct Tally {
        let maximumReportedTargets: Int
        var progress = DispatchProgress(processed: 0, succeeded: 0)
        var counts: [Platform: [Outcome: Int]] = [:]
        var results: [TargetResult] = []
        /// Indices of listed successes, for a failure to take the place of once the list is full
        /// (a stack: each replacement is O(1), not a scan of the list).
        var listedSuccesses: [Int] = []

        init(maximumReportedTargets: Int) { self.maximumReportedTargets = maximumReportedTargets }

        mutating func record(_ report: DeliveryReport) {
            let succeeded = report.verdict.outcome.isSuccess
            progress.processed += 1
            if succeeded { progress.succeeded += 1 }
            counts[report.target.handle.platform, default: [:]][report.verdict.outcome, default: 0] += 1
            if results.count < maximumReportedTargets {
                if succeeded { listedSuccesses.append(results.count) }
                results.append(report.targetResult)
            } else if !succeeded, let index = listedSuccesses.popLast() {
                results[index] = report.targetResult
            }
        }
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

/// Splits a batch of targets by the payload each gets (a template registration renders its own
/// template): the groups to deliver, and the reports of targets the notification does not reach.
public typealias PayloadGrouping = @Sendable (_ batch: [DispatchTarget]) async -> PayloadGroups

/// A batch split by payload.
public struct PayloadGroups: Sendable {
    public var groups: [(targets: [DispatchTarget], payloads: [Platform: RenderedNotification])]
    /// Targets answered without a request (`Skipped`, or a template that cannot render).
    public var ignored: [DeliveryReport]

    public init(groups: [(targets: [DispatchTarget], payloads: [Platform: RenderedNotification])] = [], ignored: [DeliveryReport] = []) {
        self.groups = groups
        self.ignored = ignored
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
    /// Every removal and canonical replacement, whether or not its target is listed in `result`
    /// (empty when they went to the dispatch's `applyHandleUpdates` as it ran).
    public var handleUpdates: [HandleUpdate]
    /// Why the targets stopped coming before the end (the store failed), or nil.
    public var targetsFailure: String?
}

/// A stored handle to change because of a push service's answer.
public struct HandleUpdate: Sendable, Hashable {
    public var target: DispatchTarget
    public var change: HandleChange
    /// What the service said (recorded with the removal).
    public var outcome: Outcome
    public var reason: String?
}
