import Pushgate
import PushgateDispatch
import PushgateTesting
import Synchronization
import Testing

/// Reloads replace a dispatcher's providers while pages are on the wire: a page finishes with
/// the providers it started with, which are shut down when the last such page ends, however many
/// reloads came meanwhile; providers no page holds are shut down at once, and none twice.
@Suite struct ProviderGenerationTests {
    @Test(.timeLimit(.minutes(1))) func replacedProvidersStayOpenUntilTheLastPageThatStartedWithThemEnds() async throws {
        let first = InMemoryPushProvider()
        first.hold()
        let dispatcher = Dispatcher(providers: [first])
        let payloads = [Platform.apns: try Payloads.notify(.apns)]
        let pages = CountingPages(pages: 1, pageSize: 10)
        let reader = Task {
            await dispatcher.dispatch(notificationID: "n", selection: .all, payloads: payloads, targets: pages.sequence()).result
                .platforms.reduce(0) { $0 + $1.total }
        }
        _ = try await eventually {
            first.waiting
        } until: {
            $0 == 1
        }
        // Six reloads while the page is on the wire: the providers in between, which no page
        // holds, are shut down as they are replaced; the page's own stay open.
        var later: [InMemoryPushProvider] = []
        for _ in 0..<6 {
            let next = InMemoryPushProvider()
            later.append(next)
            await dispatcher.replace(providers: [next])
        }
        #expect(first.shutdowns == 0 && first.waiting == 1)
        #expect(later.dropLast().allSatisfy { $0.shutdowns == 1 } && later.last?.shutdowns == 0)
        #expect(dispatcher.retiredGenerations == 1)

        first.release()
        #expect(await reader.value == 10)
        #expect(first.delivered.count == 10 && later.allSatisfy { $0.deliveries == 0 })
        // The page has ended and let go of its providers.
        _ = try await eventually {
            first.shutdowns
        } until: {
            $0 == 1
        }
        #expect(dispatcher.retiredGenerations == 0)

        // The next send goes out with the newest providers.
        let newest = try #require(later.last)
        let summary = await dispatcher.dispatch(
            notificationID: "next", selection: .all, payloads: payloads, targets: CountingPages(pages: 2, pageSize: 5).sequence())
        let total = summary.result.platforms.reduce(0) { $0 + $1.total }
        #expect(total == 10)
        #expect(newest.delivered.count == 10)
        await dispatcher.shutdown()
        await dispatcher.shutdown()
        #expect(first.shutdowns == 1 && later.allSatisfy { $0.shutdowns == 1 }, "each provider shut down once")
    }

    @Test(.timeLimit(.minutes(1))) func aReplacementWithNoPageOnTheWireShutsTheOldProvidersDownAtOnce() async throws {
        let first = InMemoryPushProvider()
        let dispatcher = Dispatcher(providers: [first])
        // A finished send holds nothing.
        let summary = await dispatcher.dispatch(
            notificationID: "n", selection: .all, payloads: [.apns: try Payloads.notify(.apns)],
            targets: CountingPages(pages: 1, pageSize: 3).sequence())
        #expect(first.delivered.count == 3 && summary.result.targets.count == 3)
        let second = InMemoryPushProvider()
        // The send gave its providers back when it read its end.
        _ = try await eventually {
            dispatcher.deliveriesHolding(generation: 0)
        } until: {
            $0 == 0
        }
        await dispatcher.replace(providers: [second])
        #expect(first.shutdowns == 1 && second.shutdowns == 0)
        #expect(dispatcher.retiredGenerations == 0)
        await dispatcher.shutdown()
        #expect(first.shutdowns == 1 && second.shutdowns == 1)
        // A replacement after the shutdown is closed at once, not installed.
        let late = InMemoryPushProvider()
        await dispatcher.replace(providers: [late])
        #expect(late.shutdowns == 1 && second.shutdowns == 1)
    }

    /// A page that ends just before the dispatcher shuts down: the shutdown waits for its
    /// providers' closing, begun by the page's end.
    @Test(.timeLimit(.minutes(1))) func theShutdownWaitsForProvidersAPageLetGoOf() async throws {
        let first = SlowClosingProvider()
        let dispatcher = Dispatcher(providers: [first])
        let payloads = [Platform.apns: try Payloads.notify(.apns)]
        do {
            let wire = dispatcher.wire(selection: .all)
            wire.send(DispatchPage(targets: CountingPages.targets(0..<2), payloads: payloads))
            await dispatcher.replace(providers: [InMemoryPushProvider()])
            #expect(first.closed == 0 && dispatcher.retiredGenerations == 1)
            while await wire.next() != nil {}
            await wire.close()
        }
        // The page is over: the wire's close gave its providers back and shut them down.
        _ = try await eventually {
            dispatcher.retiredGenerations
        } until: {
            $0 == 0
        }
        await dispatcher.shutdown()
        #expect(first.closed == 1, "the shutdown returned before the retired provider was closed")
    }
}

/// A provider whose shutdown takes a while (a connection pool closing), and says when it is done.
final class SlowClosingProvider: PushProvider {
    let platform = Platform.apns
    private let done = Mutex(0)
    var closed: Int { done.withLock { $0 } }

    func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?) async -> [DeliveryReport] {
        targets.map { DeliveryReport(target: $0, verdict: DeliveryVerdict(outcome: .success), attempts: 1, latencyMilliseconds: 0) }
    }

    func shutdown() async {
        try? await Task.sleep(for: .milliseconds(300))
        done.withLock { $0 += 1 }
    }
}
