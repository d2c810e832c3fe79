import Pushgate
import PushgateTesting
import Synchronization
import Testing

@testable import PushgateDispatch

/// A provider whose deliveries wait at a gate until the test opens it, and which answers every
/// target "gone" (a handle removal): how the pipeline's overlap, its bound and its handle-update
/// chunks are observed.
final class GatedProvider: PushProvider {
    let platform = Platform.apns
    private struct State {
        var open = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var deliveriesStarted = 0
    }
    private let state = Mutex(State())

    func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget]) async -> [DeliveryReport] {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                state.deliveriesStarted += 1
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
        return targets.map {
            DeliveryReport(
                target: $0,
                verdict: DeliveryVerdict(outcome: .expiredChannel, statusCode: 410, reason: "Unregistered", handleChange: .remove),
                attempts: 1, latencyMilliseconds: 1)
        }
    }

    var deliveriesStarted: Int { state.withLock { $0.deliveriesStarted } }

    func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func shutdown() async {}
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
        let provider = GatedProvider()
        let pages = CountingPages(pages: 20, pageSize: 10)
        let payload = try Payloads.notify(.apns)
        let dispatch = Task {
            await Dispatcher(providers: [provider]).dispatch(
                notificationID: "n", selection: .all, payloads: [.apns: payload], targets: pages.sequence(), batchesInFlight: 3)
        }
        try await Self.waitUntil { provider.deliveriesStarted == 3 }
        try await Task.sleep(for: .milliseconds(200))
        #expect(provider.deliveriesStarted == 3, "three batches out at once")
        #expect(pages.pulledCount == 3, "no page is read while the pipeline is full")
        provider.open()
        let summary = await dispatch.value
        #expect(pages.pulledCount == 20)
        #expect(summary.result.platforms.first?.total == 200)
        #expect(summary.handleUpdates.count == 200, "with no applier, every change is returned")
    }

    /// Handle changes reach the store while the send is still going, in chunks, and none is also
    /// kept in the summary: a broadcast that prunes many devices holds a chunk, not all of them.
    @Test(.timeLimit(.minutes(1))) func handleChangesAreAppliedInChunksWhileTheSendGoesOn() async throws {
        let provider = GatedProvider()
        provider.open()
        let pages = CountingPages(pages: 10, pageSize: 25)
        let chunks = Mutex<[(size: Int, pagesReadBefore: Int)]>([])
        let summary = await Dispatcher(providers: [provider]).dispatch(
            notificationID: "n", selection: .all, payloads: [.apns: try Payloads.notify(.apns)], targets: pages.sequence(),
            batchesInFlight: 2, applyHandleUpdates: { updates in chunks.withLock { $0.append((updates.count, pages.pulledCount)) } },
            handleUpdateChunk: 50)
        let applied = chunks.withLock { $0 }
        #expect(summary.handleUpdates.isEmpty)
        #expect(applied.map(\.size).reduce(0, +) == 250, "every removal applied once")
        #expect(applied.allSatisfy { $0.size >= 50 || $0.size == applied.last?.size }, "chunks, not one change at a time")
        #expect(applied.count >= 4)
        #expect(applied.first.map { $0.pagesReadBefore < 10 } == true, "the first chunk is applied before the audience is read")
        #expect(summary.result.failureCount == 250)
    }

    /// A source that fails mid-way: what was already out is finished and counted, and the
    /// summary says why the rest was not sent.
    @Test func aFailingSourceStopsTheSendAndSaysWhy() async throws {
        struct DiskError: Error, CustomStringConvertible { var description: String { "disk I/O error" } }
        let provider = GatedProvider()
        provider.open()
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
