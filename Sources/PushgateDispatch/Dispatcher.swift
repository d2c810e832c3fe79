import Logging
import Pushgate
import Synchronization
import Tracing

/// Delivers pages of targets to the push services and answers per target: it knows pages,
/// providers and the wire, nothing above them. Its caller (the outbox driver) claims the pages,
/// resolves each target's payload, hands them over through a ``DispatchWire`` and records what
/// comes back; the dispatcher never calls back up.
///
/// Its providers can be replaced (a configuration reload with new credentials): the pages of a
/// wire (``wire(selection:answers:logger:)``) are delivered to their end by the providers it
/// opened with; the next wire uses the new ones.
/// Replaced providers are shut down when the last delivery that started with them lets go of
/// them, however many reloads came meanwhile.
public final class Dispatcher: Sendable {
    private typealias Generations = ProviderGenerations<[Platform: any PushProvider], CheckedContinuation<Void, Never>>
    private let generations: Mutex<Generations>
    /// The gateway's tracing, for those who drive deliveries through this dispatcher (the outbox
    /// pages' spans); the providers were given the same.
    public let tracing: PushgateTracing
    /// The clocks of early answers (``AnswerFlushTickers``): the server's, shared by its dispatchers.
    public let answerTickers: AnswerFlushTickers

    public init(providers: [any PushProvider], tracing: PushgateTracing = .off, answerTickers: AnswerFlushTickers = AnswerFlushTickers()) {
        generations = Mutex(Generations(Self.byPlatform(providers)))
        self.tracing = tracing
        self.answerTickers = answerTickers
    }

    private static func byPlatform(_ providers: [any PushProvider]) -> [Platform: any PushProvider] {
        Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// A delivery's hold on the providers it starts with. The delivery gives it back at its end
    /// with ``release()``, which shuts the providers down when they were replaced meanwhile and
    /// this was the last delivery holding them.
    final class Lease: Sendable {
        let providers: [Platform: any PushProvider]
        private let generation: Int
        private let owner: Dispatcher
        private let released = Atomic(false)

        fileprivate init(providers: [Platform: any PushProvider], generation: Int, owner: Dispatcher) {
            self.providers = providers
            self.generation = generation
            self.owner = owner
        }

        /// Lets go of the providers (the first call; later ones do nothing), and returns once they
        /// are shut down if that falls to this delivery.
        func release() async {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            await owner.perform(owner.generations.withLock { $0.release(generation) })
        }
    }

    /// Takes a hold on the current providers, to give back with ``Lease/release()``.
    func lease() -> Lease {
        generations.withLock { generations in
            let (providers, generation) = generations.lease()
            return Lease(providers: providers, generation: generation, owner: self)
        }
    }

    /// Shuts down the providers a step of the generations says to, and resumes whoever waited
    /// for their closing (a shutdown).
    private func perform(_ action: Generations.Action) async {
        guard case .shutDown(let providers, let generation) = action else { return }
        for provider in providers.values { await provider.shutdown() }
        for waiter in generations.withLock({ $0.closed(generation) }) { waiter.resume() }
    }

    /// Deliveries holding the providers of `generation` (0: the first providers).
    package func deliveriesHolding(generation: Int) -> Int { generations.withLock { $0.holders(of: generation) } }

    /// Replaced generations not shut down yet (held by a delivery).
    package var retiredGenerations: Int { generations.withLock { $0.heldReplacedGenerations } }

    /// The providers deliveries start with now.
    private var current: [Platform: any PushProvider] { generations.withLock { $0.current } }

    /// The platforms with a provider.
    public var platforms: Set<Platform> { Set(current.keys) }

    /// Replaces every provider: deliveries that start from now on use `providers`; the ones on
    /// the wire finish with theirs, which are shut down when the last of them ends (here, before
    /// this returns, when none holds them).
    public func replace(providers replacement: [any PushProvider]) async {
        await perform(generations.withLock { $0.replace(with: Self.byPlatform(replacement)) })
    }

    /// Opens a wire for the pages of one round of a delivery (``DispatchWire``): the caller sends
    /// pages as it has them and reads their answers, with the providers the dispatcher has now.
    ///
    /// Targets of a platform with no configured provider get `InvalidCredentials`, with no payload
    /// `InvalidNotificationFormat`; a second target with the same handle in a payload group gets
    /// `Skipped`; targets of platforms outside `selection` get no report. With `answers`, targets
    /// whose answer is final while the rest of their page is still on the wire come early too
    /// (``DispatchEvent/answered(_:)``), at most `answers.interval` late or `answers.count` at a
    /// time: what a reader that records them as they arrive needs.
    public func wire(
        selection: PlatformSelection, answers: AnswerFlush? = nil, logger: Logger = Logger(label: "pushgate.dispatch")
    ) -> DispatchWire {
        DispatchWire(selection: selection, answers: answers, tickers: answerTickers, lease: lease(), logger: logger)
    }

    /// Delivers to every target and sums up: counts per platform and outcome, targets listed up
    /// to `maximumReportedTargets` (failures first once the limit is reached), and every handle
    /// change the services asked for. The tools' and benchmarks' whole dispatch: it reads pages of
    /// `targets` while fewer than `batchesInFlight` are on the wire (memory follows that bound ×
    /// the page size, not the audience). When `targets` throws, the pages already out are counted
    /// and the summary says why the rest was not sent.
    public func dispatch<Targets: AsyncSequence>(
        notificationID: String, selection: PlatformSelection, payloads: [Platform: RenderedNotification],
        targets: Targets, maximumReportedTargets: Int = 10_000, batchesInFlight: Int = 3,
        logger: Logger = Logger(label: "pushgate.dispatch")
    ) async -> DispatchSummary where Targets.Element == [DispatchTarget] {
        var tally = OutcomeTally(maximumReportedTargets: maximumReportedTargets)
        var updates: [HandleUpdate] = []
        var targetsFailure: String?
        let wire = wire(selection: selection, logger: logger)
        var pages = targets.makeAsyncIterator()
        var exhausted = false
        while true {
            while !exhausted, wire.inFlight < max(1, batchesInFlight), !Task.isCancelled, !wire.isCancelled {
                do {
                    guard let page = try await pages.next() else {
                        exhausted = true
                        break
                    }
                    wire.send(DispatchPage(targets: page, payloads: payloads))
                } catch {
                    targetsFailure = String(describing: error)
                    exhausted = true
                }
            }
            guard let event = await wire.next() else { break }
            guard case .finished(let batch) = event else { continue }
            for report in batch.reports { tally.record(report) }
            updates += batch.handleUpdates
        }
        await wire.close()
        return DispatchSummary(
            result: NotificationResult(notificationID: notificationID, selection: selection, counts: tally.counts, targets: tally.results),
            handleUpdates: updates, targetsFailure: targetsFailure)
    }

    /// One payload group of a page: each platform's targets to its provider, concurrently; a
    /// group of one platform (a user's devices, as a rule) on this task, without a task of its own.
    static func deliver(
        _ batch: [DispatchTarget], providers: [Platform: any PushProvider], selection: PlatformSelection,
        payloads: [Platform: RenderedNotification], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        let byPlatform = Dictionary(grouping: batch.filter { selection.contains($0.handle.platform) }, by: \.handle.platform)
        // What needs no push service is answered here; the rest goes to the providers.
        var answered: [DeliveryReport] = []
        var deliveries: [(provider: any PushProvider, payload: RenderedNotification, targets: [DispatchTarget])] = []
        for (platform, platformTargets) in byPlatform {
            guard let provider = providers[platform], let payload = payloads[platform] else {
                // Notification Hubs' names: no credentials for the service, or no payload for it.
                let (outcome, reason) =
                    providers[platform] == nil
                    ? (Outcome.invalidCredentials, "\(platform.serviceName) is not configured")
                    : (Outcome.invalidNotificationFormat, "no \(platform) template")
                let verdict = DeliveryVerdict(outcome: outcome, reason: reason)
                answered += platformTargets.map { DeliveryReport(target: $0, verdict: verdict, attempts: 0, latencyMilliseconds: 0) }
                continue
            }
            // One push per device: a second registration with the same handle is Skipped.
            var first: [String: RegistrationID] = [:]
            var unique: [DispatchTarget] = []
            for target in platformTargets {
                if let holder = first[target.handle.value] {
                    let verdict = DeliveryVerdict(outcome: .skipped, reason: "registration \(holder) holds the same handle")
                    answered.append(DeliveryReport(target: target, verdict: verdict, attempts: 0, latencyMilliseconds: 0))
                } else {
                    first[target.handle.value] = target.registrationID
                    unique.append(target)
                }
            }
            deliveries.append((provider, payload, unique))
        }
        if deliveries.count <= 1 {
            guard let only = deliveries.first else { return answered }
            return answered + (await only.provider.deliver(only.payload, to: only.targets, answers: answers))
        }
        return await withTaskGroup(of: [DeliveryReport].self) { group in
            for delivery in deliveries {
                group.addTask { await delivery.provider.deliver(delivery.payload, to: delivery.targets, answers: answers) }
            }
            return await group.reduce(into: answered) { $0.append(contentsOf: $1) }
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

    /// The request `platform`'s provider would send `notification` to `target` with (credentials
    /// left out); nil when the platform has no provider or the provider cannot tell.
    public func preview(_ notification: RenderedNotification, on platform: Platform, to target: DispatchTarget) -> PushHTTPRequest? {
        current[platform]?.preview(notification, to: target)
    }

    /// Shuts every provider down, the replaced ones too, and waits for those the last delivery
    /// holding them is shutting down.
    public func shutdown() async {
        // A second call closes nothing twice; it waits for what is still closing.
        for providers in generations.withLock({ $0.shutdown() }) {
            for provider in providers.values { await provider.shutdown() }
        }
        await withCheckedContinuation { continuation in
            if case .resume(let waiter) = generations.withLock({ $0.waitForClosings(continuation) }) { waiter.resume() }
        }
    }
}

/// How far a dispatch has got: targets answered so far, and how many of them were delivered.
public struct DispatchProgress: Sendable, Hashable {
    public var processed: Int
    public var succeeded: Int

    public init(processed: Int, succeeded: Int) {
        self.processed = processed
        self.succeeded = succeeded
    }
}

/// What a dispatch produced: the unified result, and the handle changes the services asked for.
public struct DispatchSummary: Sendable {
    public var result: NotificationResult
    /// Every removal and canonical replacement, whether or not its target is listed in `result`.
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
