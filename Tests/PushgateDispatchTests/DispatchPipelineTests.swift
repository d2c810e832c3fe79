import Pushgate
import PushgateDispatch
import PushgateTesting
import Synchronization
import Testing

/// An in-memory push service that answers every target "gone" (a handle removal): how the
/// pipeline's overlap, its bound and its handle changes are observed. Held, its deliveries wait.
func goneProvider() -> InMemoryPushProvider {
    InMemoryPushProvider(.apns) { _ in
        DeliveryVerdict(outcome: .expiredChannel, statusCode: 410, reason: "Unregistered", handleChange: .remove)
    }
}

/// Pages of targets that count how many were asked for.
final class CountingPages: Sendable {
    let pages: Int
    let pageSize: Int
    private let pulled = Mutex(0)

    init(pages: Int, pageSize: Int) {
        self.pages = pages
        self.pageSize = pageSize
    }

    var pulledCount: Int { pulled.withLock { $0 } }

    func sequence() -> AsyncStream<[DispatchTarget]> {
        AsyncStream(unfolding: {
            let index = self.pulled.withLock { pulled -> Int? in
                guard pulled < self.pages else { return nil }
                pulled += 1
                return pulled - 1
            }
            guard let index else { return nil }
            return Self.targets((index * self.pageSize)..<((index + 1) * self.pageSize))
        })
    }

    /// APNs targets numbered `numbers`.
    static func targets(_ numbers: Range<Int>) -> [DispatchTarget] {
        numbers.map { number in
            DispatchTarget(
                registrationID: try! RegistrationID(String(format: "p%07d", number)),
                handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", number)))
        }
    }
}

@Suite struct DispatchPipelineTests {
    static func waitUntil(_ condition: () -> Bool) async throws {
        _ = try await eventually(timeout: .seconds(5), every: .milliseconds(10)) { condition() }
    }

    /// While the first batches are on the wire, the next pages are read (the overlap), but never
    /// more than `batchesInFlight` of them: a slow push service holds memory to that bound
    /// instead of the store streaming the whole audience into it.
    @Test(.timeLimit(.minutes(1))) func pagesAreReadAheadOfDeliveryOnlyUpToTheBatchesInFlight() async throws {
        let provider = goneProvider()
        provider.hold()
        let pages = CountingPages(pages: 20, pageSize: 10)
        let payload = try Payloads.notify(.apns)
        let dispatch = Task {
            await Dispatcher(providers: [provider]).dispatch(
                notificationID: "n", selection: .all, payloads: [.apns: payload], targets: pages.sequence(), batchesInFlight: 3)
        }
        try await Self.waitUntil { provider.waiting == 3 }
        // The reader now waits for a batch to finish: a page is read only to start a batch.
        #expect(provider.deliveries == 3, "three batches out at once")
        #expect(pages.pulledCount == 3, "no page is read while the pipeline is full")
        provider.release()
        let summary = await dispatch.value
        #expect(pages.pulledCount == 20)
        #expect(summary.result.platforms.first?.total == 200)
        #expect(summary.handleUpdates.count == 200, "with no applier, every change is returned")
    }

    /// Each page comes back with the handle changes its services asked for, as it finishes and
    /// while further pages are still being sent: a caller prunes devices as the send goes,
    /// holding a page's changes, not all of them.
    @Test(.timeLimit(.minutes(1))) func eachPageBringsItsHandleChangesWhileTheSendGoesOn() async throws {
        let wire = Dispatcher(providers: [goneProvider()]).wire(selection: .all)
        let payloads = [Platform.apns: try Payloads.notify(.apns)]
        var seen: [(updates: Int, sentBefore: Int, index: Int)] = []
        var sent = 0
        while sent < 10 || wire.inFlight > 0 {
            while sent < 10, wire.inFlight < 2 {
                #expect(
                    wire.send(DispatchPage(targets: CountingPages.targets((sent * 25)..<((sent + 1) * 25)), payloads: payloads)) == sent)
                sent += 1
            }
            guard case .finished(let batch)? = await wire.next() else {
                Issue.record("early answers came although none were asked for")
                continue
            }
            seen.append((batch.handleUpdates.count, sent, batch.index))
        }
        #expect(await wire.next() == nil, "nothing outstanding")
        await wire.close()
        #expect(seen.count == 10)
        #expect(seen.allSatisfy { $0.updates == 25 }, "every removal comes with its page, once")
        #expect(Set(seen.map(\.index)) == Set(0..<10))
        #expect(seen.first.map { $0.sentBefore < 10 } == true, "the first page is back before the last is sent")
    }

    /// Cancelling the task that reads the wire cancels the pages on it (their providers answer
    /// `Abandoned` for what they had not sent), and a page sent after that is abandoned at once.
    @Test(.timeLimit(.minutes(1))) func cancellingTheReaderCancelsWhatIsOnTheWire() async throws {
        let provider = goneProvider()
        provider.hold()
        let wire = Dispatcher(providers: [provider]).wire(selection: .all)
        let payloads = [Platform.apns: try Payloads.notify(.apns)]
        for page in 0..<3 { wire.send(DispatchPage(targets: CountingPages.targets((page * 10)..<((page + 1) * 10)), payloads: payloads)) }
        let reader = Task {
            guard case .finished(let batch)? = await wire.next() else { return nil as DispatchedBatch? }
            return batch
        }
        try await Self.waitUntil { provider.waiting == 3 }
        reader.cancel()
        let first = await reader.value
        #expect(first?.reports.count == 10)
        #expect(first?.reports.allSatisfy { $0.verdict.outcome == .abandoned } == true, "\(String(describing: first?.reports.first))")
        #expect(wire.isCancelled)
        wire.send(DispatchPage(targets: CountingPages.targets(30..<31), payloads: payloads))
        var rest: [DeliveryReport] = []
        while let event = await wire.next() { if case .finished(let batch) = event { rest += batch.reports } }
        #expect(rest.count == 21 && rest.allSatisfy { $0.verdict.outcome == .abandoned })
        await wire.close()
    }

    /// A page whose every target was answered before the wire (superseded, skipped) comes back
    /// with those answers and sends nothing.
    @Test func aPageAnsweredBeforeTheWireSendsNothing() async throws {
        let provider = goneProvider()
        let wire = Dispatcher(providers: [provider]).wire(selection: .all)
        let target = CountingPages.targets(0..<1)[0]
        let skipped = DeliveryReport(
            target: target, verdict: DeliveryVerdict(outcome: .skipped, reason: "newer"), attempts: 0, latencyMilliseconds: 0)
        wire.send(DispatchPage(groups: [], answered: [skipped]))
        guard case .finished(let batch)? = await wire.next() else {
            Issue.record("no batch")
            return
        }
        #expect(batch.reports == [skipped])
        #expect(provider.deliveries == 0)
        await wire.close()
    }

    /// A send of one page of 10 APNs targets, with early answers per `flush` on `tickers`, whose
    /// provider answers its first `answering` targets and then holds the rest until released.
    static func heldSend(answering: Int, flush: AnswerFlush, tickers: AnswerFlushTickers) throws -> (InMemoryPushProvider, DispatchWire) {
        let provider = InMemoryPushProvider()
        provider.hold(answering: answering)
        let wire = Dispatcher(providers: [provider], answerTickers: tickers).wire(selection: .all, answers: flush)
        wire.send(DispatchPage(targets: CountingPages.targets(0..<10), payloads: [.apns: try Payloads.notify(.apns)]))
        return (provider, wire)
    }

    /// The held send's next event, which must be early answers (nil, recorded as an issue, if not).
    static func earlyAnswers(_ wire: DispatchWire) async -> [Int: [DeliveryReport]]? {
        guard case .answered(let early)? = await wire.next() else {
            Issue.record("the held page's answers did not come ahead of it")
            return nil
        }
        return early
    }

    /// Releases the held send: its page finishes with a report per target, and nothing follows.
    static func expectFinished(_ provider: InMemoryPushProvider, _ wire: DispatchWire) async {
        provider.release()
        guard case .finished(let batch)? = await wire.next() else {
            Issue.record("the page did not finish")
            return
        }
        #expect(batch.reports.count == 10)
        #expect(await wire.next() == nil)
        await wire.close()
    }

    /// Asked for them, the final answers of a page still on the wire come ahead of it, at the
    /// flush clock's tick: a reader records them before the page is done (what a crash then sends
    /// again is only what was on the wire). The page itself still reports every target.
    @Test(.timeLimit(.minutes(1))) func finalAnswersComeAheadOfTheirPageWhenAskedFor() async throws {
        let clock = SteppedClock()
        let (provider, wire) = try Self.heldSend(
            answering: 4, flush: AnswerFlush(interval: .milliseconds(20), count: 1000), tickers: AnswerFlushTickers(clock: clock))
        try await Self.waitUntil { provider.waiting == 1 && clock.sleepers == 1 }
        clock.step()
        guard let early = await Self.earlyAnswers(wire) else { return }
        #expect(early.keys.sorted() == [0])
        #expect(early[0]?.count == 4)
        #expect(early[0]?.allSatisfy { $0.verdict.outcome == .success } == true)
        #expect(provider.waiting == 1, "the page is still on the wire")
        await Self.expectFinished(provider, wire)
        #expect(provider.delivered.count == 10, "each target delivered once")
    }

    /// Enough answers waiting go to the reader at once, without waiting for the clock's tick;
    /// those still waiting when their page finishes come with the page instead.
    @Test(.timeLimit(.minutes(1))) func enoughWaitingAnswersComeWithoutWaitingForTheTick() async throws {
        let (provider, wire) = try Self.heldSend(
            answering: 6, flush: AnswerFlush(interval: .seconds(3600), count: 5), tickers: AnswerFlushTickers(clock: SteppedClock()))
        guard let early = await Self.earlyAnswers(wire) else { return }
        #expect((5...6).contains(early[0]?.count ?? 0), "\(early.mapValues(\.count))")
        await Self.expectFinished(provider, wire)
    }

    /// The flush clock is shared by every send of a server and runs only while answers wait: two
    /// sends held at once both get their answers at one tick; a tick that finds none waiting
    /// stops it (nothing sleeps on the clock), and the next send's answers start it again.
    @Test(.timeLimit(.minutes(1))) func theSharedFlushClockServesConcurrentSendsAndStartsAgainAfterIdling() async throws {
        let clock = SteppedClock()
        let tickers = AnswerFlushTickers(clock: clock)
        let flush = AnswerFlush(interval: .milliseconds(50), count: 1000)
        let (first, firstWire) = try Self.heldSend(answering: 3, flush: flush, tickers: tickers)
        let (second, secondWire) = try Self.heldSend(answering: 5, flush: flush, tickers: tickers)
        try await Self.waitUntil { first.waiting == 1 && second.waiting == 1 && clock.sleepers == 1 }
        // One clock for both: one sleeper, one tick.
        clock.step()
        #expect(await Self.earlyAnswers(firstWire)?[0]?.count == 3)
        #expect(await Self.earlyAnswers(secondWire)?[0]?.count == 5)
        await Self.expectFinished(first, firstWire)
        await Self.expectFinished(second, secondWire)
        // The tick after found nothing waiting: the clock stops.
        try await Self.waitUntil { clock.sleepers == 1 }
        clock.step()
        try await Self.waitUntil { clock.sleepers == 0 }
        let (third, thirdWire) = try Self.heldSend(answering: 4, flush: flush, tickers: tickers)
        try await Self.waitUntil { third.waiting == 1 && clock.sleepers == 1 }
        clock.step()
        #expect(await Self.earlyAnswers(thirdWire)?[0]?.count == 4)
        await Self.expectFinished(third, thirdWire)
    }

    /// A source that fails mid-way: what was already out is finished and counted, and the
    /// summary says why the rest was not sent.
    @Test func aFailingSourceStopsTheSendAndSaysWhy() async throws {
        struct DiskError: Error, CustomStringConvertible { var description: String { "disk I/O error" } }
        let provider = goneProvider()
        let served = Mutex(0)
        let targets = AsyncThrowingStream<[DispatchTarget], any Error>(unfolding: {
            let page = served.withLock { served -> Int in
                served += 1
                return served
            }
            guard page <= 2 else { throw DiskError() }
            return [
                DispatchTarget(
                    registrationID: try RegistrationID(String(format: "q%07d", page)),
                    handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", page)))
            ]
        })
        let summary = await Dispatcher(providers: [provider]).dispatch(
            notificationID: "n", selection: .all, payloads: [.apns: try Payloads.notify(.apns)], targets: targets)
        #expect(summary.targetsFailure == "disk I/O error")
        #expect(summary.result.platforms.first?.total == 2)
    }
}
