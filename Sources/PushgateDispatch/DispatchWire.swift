import Logging
import Pushgate
import Synchronization
import Tracing

/// A batch of targets whose every target has its answer.
public struct DispatchedBatch: Sendable {
    /// The batch's position among the batches read from the targets (0 for the first).
    public var index: Int
    /// A report per target of the batch.
    public var reports: [DeliveryReport]

    public init(index: Int, reports: [DeliveryReport]) {
        self.index = index
        self.reports = reports
    }

    /// What the services said about handles: removals and canonical replacements, in report order.
    public var handleUpdates: [HandleUpdate] {
        reports.compactMap { report in
            report.verdict.handleChange.map {
                HandleUpdate(target: report.target, change: $0, outcome: report.verdict.outcome, reason: report.verdict.reason)
            }
        }
    }
}

/// What the reader of ``DispatchBatches`` gets: a batch whose every target has its answer, or,
/// when it asked for them, the final answers of targets whose batches are still on the wire.
public enum DispatchEvent: Sendable {
    /// A batch is done: a report per target.
    case finished(DispatchedBatch)
    /// Targets answered for good while their batches are on the wire, by batch index (only with
    /// `answers` on; a batch's answers never come after the batch itself). Their reports are in
    /// their batch's ``DispatchedBatch/reports`` again once it is done.
    case answered([Int: [DeliveryReport]])
}

/// When a batch's early answers go to the reader: after `interval` or once `count` are waiting,
/// whichever comes first.
public struct AnswerFlush: Sendable, Hashable {
    public var interval: Duration
    public var count: Int

    public init(interval: Duration = .milliseconds(50), count: Int = 500) {
        self.interval = interval
        self.count = max(1, count)
    }
}

/// Where a provider hands a target's final report as soon as it is known, while the rest of its
/// batch is still on the wire (``DispatchEvent/answered(_:)``).
public struct DeliveryAnswers: Sendable {
    let wire: DispatchWire
    let batch: Int

    public func record(_ report: DeliveryReport) { wire.answered(report, batch: batch) }
}

/// The targets stopped coming before their end (the store failed while reading them).
public struct DispatchTargetsError: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(description: String) { self.description = description }
}

/// A page of targets handed to the wire: its targets grouped by the payloads they get (one group
/// for a plain send; one per distinct template for a template send), and the targets answered
/// without a request (`Skipped`, a template that cannot render, a superseded message), which come
/// back in the batch's reports with the rest.
public struct DispatchPage: Sendable {
    public struct Group: Sendable {
        public var targets: [DispatchTarget]
        /// One payload per platform.
        public var payloads: [Platform: RenderedNotification]

        public init(targets: [DispatchTarget], payloads: [Platform: RenderedNotification]) {
            self.targets = targets
            self.payloads = payloads
        }
    }

    public var groups: [Group]
    public var answered: [DeliveryReport]

    public init(groups: [Group], answered: [DeliveryReport] = []) {
        self.groups = groups
        self.answered = answered
    }

    /// Every target gets its platform's payload of `payloads`.
    public init(targets: [DispatchTarget], payloads: [Platform: RenderedNotification]) {
        self.init(groups: [Group(targets: targets, payloads: payloads)])
    }

    /// How many targets the page holds, answered or not.
    public var count: Int { groups.reduce(answered.count) { $0 + $1.targets.count } }
}

/// Counts reports per platform and outcome and lists their targets up to a limit, failures first
/// once the list is full: what a send answers.
public struct OutcomeTally: Sendable {
    public let maximumReportedTargets: Int
    public private(set) var progress = DispatchProgress(processed: 0, succeeded: 0)
    public private(set) var counts: [Platform: [Outcome: Int]] = [:]
    public private(set) var results: [TargetResult] = []
    /// Indices of listed successes, for a failure to take the place of once the list is full
    /// (a stack: each replacement is O(1), not a scan of the list).
    private var listedSuccesses: [Int] = []

    public init(maximumReportedTargets: Int) { self.maximumReportedTargets = max(0, maximumReportedTargets) }

    /// Counts `report` with `outcome` (its verdict's unless the caller decided otherwise).
    public mutating func record(_ report: DeliveryReport, as outcome: Outcome? = nil) {
        var result = report.targetResult
        let outcome = outcome ?? report.verdict.outcome
        result.outcome = outcome
        let succeeded = outcome.isSuccess
        progress.processed += 1
        if succeeded { progress.succeeded += 1 }
        counts[report.target.handle.platform, default: [:]][outcome, default: 0] += 1
        if results.count < maximumReportedTargets {
            if succeeded { listedSuccesses.append(results.count) }
            results.append(result)
        } else if !succeeded, let index = listedSuccesses.popLast() {
            results[index] = result
        }
    }
}

/// The pages a driver hands to the push services, on the wire at once, and their answers as they
/// come: ``Dispatcher/wire(selection:answers:logger:)`` opens one per round of a drive.
///
/// The driver calls it; it calls nothing above itself. ``send(_:context:)`` starts a page on a
/// task of its own (a driver cannot keep a task group open across its other awaits: the claims,
/// the records); ``next()`` waits for the first page to finish or, with `answers`, for final
/// answers of pages still on the wire; ``close()`` gives back the providers.
///
/// The pages go out with the providers the dispatcher had when the wire was opened, whatever a
/// reload does meanwhile; ``close()`` gives them back, and shuts them down first when a reload
/// replaced them and no other delivery holds them. A wire dropped without ``close()`` keeps them
/// until the dispatcher shuts down, and cancels what it still runs.
///
/// Pages are numbered in the order they are sent (``DispatchedBatch/index``): the n-th page sent
/// is batch n.
public final class DispatchWire: Sendable {
    private struct State {
        var running: [Int: Task<Void, Never>] = [:]
        var finished: [DispatchedBatch] = []
        var reader: CheckedContinuation<Void, Never>?
        var cancelled = false
        /// Pages sent whose batch the reader has not taken yet.
        var outstanding = 0
        var sent = 0
        /// Early answers not yet read, by batch.
        var answers: [Int: [DeliveryReport]] = [:]
        var answersWaiting = 0
        /// The reader is to get the answers now (the interval passed, or enough are waiting).
        var answersDue = false
        /// Joined to the ticker, whose next tick makes the waiting answers due.
        var awaitingTick = false
    }

    private let state = Mutex(State())
    private let flush: AnswerFlush?
    /// The server's clock for `flush`'s interval, which this wire joins while answers wait.
    private let ticker: AnswerFlushTicker?
    private let lease: Dispatcher.Lease
    private let selection: PlatformSelection
    private let logger: Logger

    init(selection: PlatformSelection, answers: AnswerFlush?, tickers: AnswerFlushTickers, lease: Dispatcher.Lease, logger: Logger) {
        flush = answers
        ticker = answers.map { tickers.ticker(interval: $0.interval) }
        self.lease = lease
        self.selection = selection
        self.logger = logger
    }

    /// Starts delivering `page`, in trace context `context` when given (else the caller's), and
    /// returns its batch index. A page sent after ``cancel()`` is cancelled at once: its targets
    /// are answered `Abandoned` without a request.
    @discardableResult
    public func send(_ page: DispatchPage, context: ServiceContext? = nil) -> Int {
        let index = state.withLock { state in
            defer { state.sent += 1 }
            state.outstanding += 1
            return state.sent
        }
        // A page answered without the wire (every target skipped or superseded) needs no task.
        if page.groups.allSatisfy(\.targets.isEmpty) {
            finish(DispatchedBatch(index: index, reports: page.answered))
            return index
        }
        let answers = flush == nil ? nil : DeliveryAnswers(wire: self, batch: index)
        let (providers, selection) = (lease.providers, selection)
        // The page's own task: it ends when its delivery returns, which the reader waits for
        // (``next()``, until nothing is outstanding); ``cancel()`` (the driver's, from its
        // cancellation handler or a user's cancel) or the wire's deinit cancels it, and its
        // providers then answer at once. Weakly: a dropped wire goes away and cancels what it runs.
        state.withLock { state in
            // The page's own task: it ends when its delivery returns, which the reader waits for
            // (``next()``, until nothing is outstanding); ``cancel()`` (the driver's, from its
            // cancellation handler or a user's cancel) or the wire's deinit cancels it, and its
            // providers then answer at once. Weakly: a dropped wire goes away and cancels what it runs.
            let task = Task { [weak self] in
                let deliver = {
                    var reports = page.answered
                    for group in page.groups where !group.targets.isEmpty {
                        reports += await Dispatcher.deliver(
                            group.targets, providers: providers, selection: selection, payloads: group.payloads, answers: answers)
                    }
                    return reports
                }
                let reports = if let context { await ServiceContext.withValue(context) { await deliver() } } else { await deliver() }
                self?.finish(DispatchedBatch(index: index, reports: reports))
            }
            // Sent after a cancel: cancelled at once.
            if state.cancelled { task.cancel() }
            state.running[index] = task
        }
        return index
    }

    /// Pages sent whose batch ``next()`` has not returned yet.
    public var inFlight: Int { state.withLock { $0.outstanding } }

    /// Whether the wire was cancelled (``cancel()``).
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    private func finish(_ batch: DispatchedBatch) {
        let reader = state.withLock { state in
            state.running[batch.index] = nil
            // Its answers are in the batch now.
            state.answersWaiting -= state.answers.removeValue(forKey: batch.index)?.count ?? 0
            state.finished.append(batch)
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume()
    }

    /// An early answer of batch `batch` (from a provider, on any thread).
    func answered(_ report: DeliveryReport, batch: Int) {
        guard let flush else { return }
        let (reader, joinTicker) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            guard state.running[batch] != nil else { return (nil, false) }
            state.answers[batch, default: []].append(report)
            state.answersWaiting += 1
            var joinTicker = false
            if state.answersWaiting >= flush.count {
                state.answersDue = true
            } else if !state.awaitingTick {
                state.awaitingTick = true
                joinTicker = true
            }
            guard state.answersDue, let reader = state.reader else { return (nil, joinTicker) }
            state.reader = nil
            return (reader, joinTicker)
        }
        reader?.resume()
        // Once until the tick (`awaitingTick`); the ticker holds the wire weakly, so a batch done
        // before the tick (an everyday send's) leaves nothing behind.
        if joinTicker { ticker?.join(self) }
    }

    /// The flush interval's tick: the answers waiting are due.
    fileprivate func ticked() {
        let reader = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.awaitingTick = false
            guard state.answersWaiting > 0 else { return nil }
            state.answersDue = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume()
    }

    /// The next finished batch (not in the order sent), or early answers of batches on the wire;
    /// nil when no page is outstanding. One reader at a time. Cancelling the reading task cancels
    /// the pages on the wire (they then finish with what their providers answered).
    public func next() async -> DispatchEvent? {
        guard inFlight > 0 else { return nil }
        let event = await withTaskCancellationHandler {
            await nextEvent()
        } onCancel: {
            cancel()
        }
        guard case .finished(let batch) = event else { return event }
        state.withLock { $0.outstanding -= 1 }
        for report in batch.reports where !report.verdict.outcome.isSuccess { Self.logFailure(report, logger: logger) }
        logger.trace("batch delivered", metadata: ["batch": "\(batch.index)", "targets": "\(batch.reports.count)"])
        return event
    }

    private func nextEvent() async -> DispatchEvent {
        while true {
            let ready = state.withLock { state -> DispatchEvent? in
                if !state.finished.isEmpty { return .finished(state.finished.removeFirst()) }
                guard state.answersDue else { return nil }
                state.answersDue = false
                guard state.answersWaiting > 0 else { return nil }
                defer {
                    state.answers.removeAll(keepingCapacity: true)
                    state.answersWaiting = 0
                }
                return .answered(state.answers)
            }
            if let ready { return ready }
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state in
                    if !state.finished.isEmpty || (state.answersDue && state.answersWaiting > 0) { return true }
                    state.reader = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// Cancels the pages on the wire and every page sent from now on.
    public func cancel() {
        let running = state.withLock { state in
            state.cancelled = true
            return Array(state.running.values)
        }
        for task in running { task.cancel() }
    }

    /// ``cancel()``, to hand to whoever may stop the round (a user's cancel).
    public var cancellation: @Sendable () -> Void { { [weak self] in self?.cancel() } }

    /// Gives back the providers (once every page is read): shuts them down when a reload replaced
    /// them and this was the last delivery holding them.
    public func close() async { await lease.release() }

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

    deinit {
        for task in state.withLock({ Array($0.running.values) }) { task.cancel() }
    }
}

/// The clocks that make waiting early answers due, one per flush interval, owned by the server
/// (``Dispatcher/answerTickers``: every dispatcher of one server shares them): the sends of all its
/// hubs join one clock instead of starting timers of their own.
public final class AnswerFlushTickers: Sendable {
    private let tickers = Mutex<[Duration: AnswerFlushTicker]>([:])
    /// What the tickers wait on (the server's clock; a test's steps it).
    let clock: any PushgateClock

    public init(clock: any PushgateClock = SystemClock()) { self.clock = clock }

    /// The ticker of `interval`, made on first use.
    func ticker(interval: Duration) -> AnswerFlushTicker {
        tickers.withLock { tickers in
            if let ticker = tickers[interval] { return ticker }
            let ticker = AnswerFlushTicker(interval: interval, clock: clock)
            tickers[interval] = ticker
            return ticker
        }
    }
}

/// The clock that makes waiting early answers due, one per flush interval (``AnswerFlushTickers``):
/// a wire joins it when its first answers start waiting, and each tick makes the answers of every
/// wire that joined since the last one due (so an answer waits at most the interval). Its task
/// runs only while wires join: it ends after a tick that found none, and the next join starts it
/// again. An everyday send, whose batch is done long before the tick, so costs a place in a list,
/// not a task and a timer of its own.
final class AnswerFlushTicker: Sendable {
    private struct Joined {
        weak var wire: DispatchWire?
    }

    private struct State {
        var joined: [Joined] = []
        var running = false
    }

    private let state = Mutex(State())
    let interval: Duration
    private let clock: any PushgateClock

    fileprivate init(interval: Duration, clock: any PushgateClock) {
        self.interval = interval
        self.clock = clock
    }

    /// `wire` has answers waiting: at the next tick they are due.
    func join(_ wire: DispatchWire) {
        let start = state.withLock { state in
            state.joined.append(Joined(wire: wire))
            guard !state.running else { return false }
            state.running = true
            return true
        }
        // Detached: it outlives the send that started it and carries none of its context. It ends
        // itself after a tick that found no wire waiting (``run()``), so nobody else ends it.
        if start { Task.detached { await self.run() } }
    }

    private func run() async {
        while true {
            try? await clock.sleep(for: interval)
            let due = state.withLock { state in
                let due = state.joined
                state.joined = []
                if due.isEmpty { state.running = false }
                return due
            }
            guard !due.isEmpty else { return }
            for joined in due { joined.wire?.ticked() }
        }
    }
}
