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
            return (0..<self.pageSize).map { offset in
                let number = index * self.pageSize + offset
                return DispatchTarget(
                    registrationID: try! RegistrationID(String(format: "p%07d", number)),
                    handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", number)))
            }
        })
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

    /// Each batch comes with the handle changes its services asked for, as it finishes and while
    /// the audience is still being read: a caller prunes devices as the send goes, holding a
    /// batch's changes, not all of them.
    @Test(.timeLimit(.minutes(1))) func eachBatchBringsItsHandleChangesWhileTheSendGoesOn() async throws {
        let provider = goneProvider()
        let pages = CountingPages(pages: 10, pageSize: 25)
        var seen: [(updates: Int, pagesReadBefore: Int, index: Int)] = []
        for try await event in Dispatcher(providers: [provider]).batches(
            selection: .all, payloads: [.apns: try Payloads.notify(.apns)], targets: pages.sequence(), batchesInFlight: 2)
        {
            guard case .finished(let batch) = event else {
                Issue.record("early answers came although none were asked for")
                continue
            }
            seen.append((batch.handleUpdates.count, pages.pulledCount, batch.index))
        }
        #expect(seen.count == 10)
        #expect(seen.allSatisfy { $0.updates == 25 }, "every removal comes with its batch, once")
        #expect(Set(seen.map(\.index)) == Set(0..<10))
        #expect(seen.first.map { $0.pagesReadBefore < 10 } == true, "the first batch is yielded before the audience is read")
    }

    /// A reader that stops early cancels the batches still on the wire.
    @Test(.timeLimit(.minutes(1))) func droppingTheBatchesCancelsWhatIsOnTheWire() async throws {
        let provider = goneProvider()
        provider.hold()
        let pages = CountingPages(pages: 5, pageSize: 10)
        let reader = Task {
            var iterator = Dispatcher(providers: [provider]).batches(
                selection: .all, payloads: [.apns: try Payloads.notify(.apns)], targets: pages.sequence(), batchesInFlight: 3
            ).makeAsyncIterator()
            guard case .finished(let batch)? = try await iterator.next() else { return nil as DispatchedBatch? }
            return batch
        }
        try await Self.waitUntil { provider.waiting == 3 }
        reader.cancel()
        let first = try await reader.value
        #expect(first?.reports.count == 10)
        #expect(first?.reports.allSatisfy { $0.verdict.outcome == .abandoned } == true, "\(String(describing: first?.reports.first))")
        #expect(pages.pulledCount == 3, "no page is read once cancelled")
    }

    typealias HeldBatches = DispatchBatches<AsyncStream<[DispatchTarget]>>.AsyncIterator

    /// A send of one page of 10 APNs targets, with early answers per `flush`, whose provider
    /// answers its first `answering` targets and then holds the rest until released.
    static func heldSend(answering: Int, flush: AnswerFlush) throws -> (InMemoryPushProvider, HeldBatches) {
        let provider = InMemoryPushProvider()
        provider.hold(answering: answering)
        let iterator = Dispatcher(providers: [provider]).batches(
            selection: .all, payloads: [.apns: try Payloads.notify(.apns)], targets: CountingPages(pages: 1, pageSize: 10).sequence(),
            answers: flush
        ).makeAsyncIterator()
        return (provider, iterator)
    }

    /// The held send's next event, which must be early answers (nil, recorded as an issue, if not).
    static func earlyAnswers(_ iterator: inout HeldBatches) async throws -> [Int: [DeliveryReport]]? {
        guard case .answered(let early)? = try await iterator.next() else {
            Issue.record("the held batch's answers did not come ahead of it")
            return nil
        }
        return early
    }

    /// Releases the held send: its batch finishes with a report per target, and nothing follows.
    static func expectFinished(_ provider: InMemoryPushProvider, _ iterator: inout HeldBatches) async throws {
        provider.release()
        guard case .finished(let batch)? = try await iterator.next() else {
            Issue.record("the batch did not finish")
            return
        }
        #expect(batch.reports.count == 10)
        #expect(try await iterator.next() == nil)
    }

    /// Asked for them, the final answers of a batch still on the wire come ahead of it, within the
    /// flush interval: a reader records them before the batch is done (what a crash then sends
    /// again is only what was on the wire). The batch itself still reports every target.
    @Test(.timeLimit(.minutes(1))) func finalAnswersComeAheadOfTheirBatchWhenAskedFor() async throws {
        var (provider, iterator) = try Self.heldSend(answering: 4, flush: AnswerFlush(interval: .milliseconds(20), count: 1000))
        guard let early = try await Self.earlyAnswers(&iterator) else { return }
        #expect(early.keys.sorted() == [0])
        #expect(early[0]?.count == 4)
        #expect(early[0]?.allSatisfy { $0.verdict.outcome == .success } == true)
        #expect(provider.waiting == 1, "the batch is still on the wire")
        try await Self.expectFinished(provider, &iterator)
        #expect(provider.delivered.count == 10, "each target delivered once")
    }

    /// Enough answers waiting go to the reader at once, without waiting for the interval; those
    /// still waiting when their batch finishes come with the batch instead.
    @Test(.timeLimit(.minutes(1))) func enoughWaitingAnswersComeWithoutWaitingForTheInterval() async throws {
        var (provider, iterator) = try Self.heldSend(answering: 6, flush: AnswerFlush(interval: .seconds(3600), count: 5))
        guard let early = try await Self.earlyAnswers(&iterator) else { return }
        #expect((5...6).contains(early[0]?.count ?? 0), "\(early.mapValues(\.count))")
        try await Self.expectFinished(provider, &iterator)
    }

    /// The flush interval's clock is shared by every send and runs only while answers wait: two
    /// sends held at once both get their answers at its tick, and once it has stopped (a tick with
    /// none waiting) the next send's answers start it again.
    @Test(.timeLimit(.minutes(1))) func theSharedFlushClockServesConcurrentSendsAndStartsAgainAfterIdling() async throws {
        // An interval of its own: no other test's sends share this clock.
        let flush = AnswerFlush(interval: .milliseconds(17), count: 1000)
        var (first, firstIterator) = try Self.heldSend(answering: 3, flush: flush)
        var (second, secondIterator) = try Self.heldSend(answering: 5, flush: flush)
        #expect(try await Self.earlyAnswers(&firstIterator)?[0]?.count == 3)
        #expect(try await Self.earlyAnswers(&secondIterator)?[0]?.count == 5)
        try await Self.expectFinished(first, &firstIterator)
        try await Self.expectFinished(second, &secondIterator)
        // Several ticks with nothing waiting: the clock has stopped.
        try await Task.sleep(for: .milliseconds(120))
        var (third, thirdIterator) = try Self.heldSend(answering: 4, flush: flush)
        #expect(try await Self.earlyAnswers(&thirdIterator)?[0]?.count == 4)
        try await Self.expectFinished(third, &thirdIterator)
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
