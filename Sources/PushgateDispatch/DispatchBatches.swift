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
}

/// The batches of a dispatch, each yielded when it finishes (not in the order they were read):
/// see ``Dispatcher/batches(selection:payloads:targets:batchesInFlight:payloadGroups:logger:)``.
///
/// Iterate it once, to its end. Its batches run as tasks of their own: ``cancel()``, cancelling
/// the task that reads it while it waits for a batch, or dropping the iterator cancels the
/// batches still on the wire (their providers then answer `Abandoned` for what was not sent).
/// A reader that must stop them at any moment — also while it is busy with a finished batch —
/// calls ``cancel()`` from its own cancellation handler.
///
/// The batches go out with the providers the dispatcher had when the sequence was made; the read
/// that ends it (nil, or the targets' failure) gives them back, and shuts them down first when a
/// reload replaced them and no other delivery holds them. A sequence dropped before its end keeps
/// them until the dispatcher shuts down.
public struct DispatchBatches<Targets: AsyncSequence>: AsyncSequence where Targets.Element == [DispatchTarget] {
    public typealias Element = DispatchEvent

    let targets: Targets
    let batchesInFlight: Int
    let logger: Logger
    let deliver: @Sendable ([DispatchTarget], DeliveryAnswers?) async -> [DeliveryReport]
    /// The trace context each batch is delivered in, by index (nil: the reader's).
    let spanContext: (@Sendable (Int) -> ServiceContext?)?
    let wire: DispatchWire
    /// The providers the batches go out with, given back at the end.
    let lease: Dispatcher.Lease

    init(
        targets: Targets, batchesInFlight: Int, answers: AnswerFlush?, tickers: AnswerFlushTickers, logger: Logger,
        spanContext: (@Sendable (Int) -> ServiceContext?)? = nil, lease: Dispatcher.Lease,
        deliver: @escaping @Sendable ([DispatchTarget], DeliveryAnswers?) async -> [DeliveryReport]
    ) {
        self.lease = lease
        self.targets = targets
        self.batchesInFlight = batchesInFlight
        self.logger = logger
        self.spanContext = spanContext
        self.deliver = deliver
        wire = DispatchWire(answers: answers, tickers: tickers)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(targets: targets.makeAsyncIterator(), batches: self, wire: wire)
    }

    /// Cancels the batches on the wire and reads no further page.
    public func cancel() { wire.cancelAll() }

    /// ``cancel()``, to call from a cancellation handler.
    public var cancellation: @Sendable () -> Void { { [wire] in wire.cancelAll() } }

    /// Whether the batches were cancelled (``cancel()``, or the reading task's cancellation), to
    /// ask where the sequence is not at hand (its own targets).
    package var cancelled: @Sendable () -> Bool { { [wire] in wire.isCancelled } }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var targets: Targets.AsyncIterator
        let batches: DispatchBatches
        let wire: DispatchWire
        var read = 0
        var inFlight = 0
        var exhausted = false
        var failure: DispatchTargetsError?

        /// The next finished batch, or early answers; nil once every batch is yielded. Throws
        /// ``DispatchTargetsError`` after the last batch when reading the targets failed.
        public mutating func next() async throws -> DispatchEvent? {
            // Keep the pipeline full: read pages while there is room.
            while !exhausted, inFlight < batches.batchesInFlight {
                // Cancelled (shutdown, a user's cancel): no further page is attempted.
                if Task.isCancelled || wire.isCancelled {
                    exhausted = true
                    wire.cancelAll()
                    break
                }
                let page: [DispatchTarget]?
                do {
                    page = try await targets.next()
                } catch {
                    failure = DispatchTargetsError(description: String(describing: error))
                    page = nil
                }
                guard let page else {
                    exhausted = true
                    break
                }
                wire.start(index: read, targets: page, context: batches.spanContext?(read), deliver: batches.deliver)
                read += 1
                inFlight += 1
            }
            guard inFlight > 0 else {
                // Every batch is done: the providers are no longer needed.
                await batches.lease.release()
                if let failure {
                    self.failure = nil
                    throw failure
                }
                return nil
            }
            let wire = self.wire
            let event = await withTaskCancellationHandler {
                await wire.nextEvent()
            } onCancel: {
                wire.cancelAll()
            }
            guard case .finished(let batch) = event else { return event }
            inFlight -= 1
            for report in batch.reports where !report.verdict.outcome.isSuccess { Self.logFailure(report, logger: batches.logger) }
            batches.logger.trace("batch delivered", metadata: ["batch": "\(batch.index)", "targets": "\(batch.reports.count)"])
            return event
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
    }
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

/// The batches on the wire and those finished but not yet read, first finished first; with
/// answers on, the early answers of the batches on the wire until the reader takes them.
final class DispatchWire: Sendable {
    private struct State {
        var running: [Int: Task<Void, Never>] = [:]
        var finished: [DispatchedBatch] = []
        var reader: CheckedContinuation<Void, Never>?
        var cancelled = false
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

    init(answers: AnswerFlush?, tickers: AnswerFlushTickers) {
        flush = answers
        ticker = answers.map { tickers.ticker(interval: $0.interval) }
    }

    /// Starts delivering batch `index`, in trace context `context` when given (else the caller's).
    func start(
        index: Int, targets: [DispatchTarget], context: ServiceContext? = nil,
        deliver: @escaping @Sendable ([DispatchTarget], DeliveryAnswers?) async -> [DeliveryReport]
    ) {
        let answers = flush == nil ? nil : DeliveryAnswers(wire: self, batch: index)
        state.withLock { state in
            // The batch's own task (a sequence cannot keep a task group open across its reads):
            // it ends when its delivery returns, which the reader waits for (`nextEvent`, to the
            // sequence's end); `cancelAll()` (the reader's cancel or cancellation) or the wire's
            // deinit (the iterator dropped) cancels it, and its providers then answer at once.
            // Weakly: a dropped iterator's wire goes away and cancels what it still runs.
            let task = Task { [weak self] in
                let reports =
                    if let context {
                        await ServiceContext.withValue(context) { await deliver(targets, answers) }
                    } else {
                        await deliver(targets, answers)
                    }
                self?.finish(DispatchedBatch(index: index, reports: reports))
            }
            // Started after a cancel (a page read as it came): cancelled at once.
            if state.cancelled { task.cancel() }
            state.running[index] = task
        }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

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

    /// Waits for a batch to finish, or for early answers to be due (one reader at a time).
    func nextEvent() async -> DispatchEvent {
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

    func cancelAll() {
        let running = state.withLock { state in
            state.cancelled = true
            return Array(state.running.values)
        }
        for task in running { task.cancel() }
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

    public init() {}

    /// The ticker of `interval`, made on first use.
    func ticker(interval: Duration) -> AnswerFlushTicker {
        tickers.withLock { tickers in
            if let ticker = tickers[interval] { return ticker }
            let ticker = AnswerFlushTicker(interval: interval)
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

    fileprivate init(interval: Duration) { self.interval = interval }

    /// `wire` has answers waiting: at the next tick they are due.
    func join(_ wire: DispatchWire) {
        let start = state.withLock { state in
            state.joined.append(Joined(wire: wire))
            guard !state.running else { return false }
            state.running = true
            return true
        }
        // Detached: it outlives the send that started it and carries none of its context.
        if start { Task.detached { await self.run() } }
    }

    private func run() async {
        while true {
            try? await Task.sleep(for: interval)
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
