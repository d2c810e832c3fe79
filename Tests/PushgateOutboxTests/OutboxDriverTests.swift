import Logging
import Pushgate
import PushgateDispatch
import PushgateOutbox
import PushgateTesting
import PushgateXML
import Synchronization
import Testing

/// The driver against an in-memory store and an in-memory push service, under a clock the test
/// moves: whole drives, no sockets, no sleeps.
@Suite struct OutboxDriverTests {
    /// How long a condition may take: long, because the parallel suite can starve this test's
    /// tasks for tens of seconds on 2 cores; a passing run waits milliseconds.
    static let patience = Duration.seconds(90)

    let clock = ManualClock(secondsSinceEpoch: 1_800_000_000)
    let store = InMemoryRegistrationStore()
    let metrics = CountingMetrics()

    func driver(
        _ provider: InMemoryPushProvider, pageSize: Int = 100, retries: Int = 2, hooks: any OutboxHooks = NoOutboxHooks(),
        configure: (inout OutboxConfiguration) -> Void = { _ in }
    ) -> OutboxDriver {
        var configuration = OutboxConfiguration()
        configuration.pageSize = pageSize
        configuration.throttledRetries = retries
        configure(&configuration)
        return OutboxDriver(
            app: .default, queue: store, registrations: store, dispatcher: Dispatcher(providers: [provider]),
            control: OutboxControl(configuration: configuration), clock: clock, drives: ActiveDrives(), metrics: metrics,
            settings: OutboxDriver.settings(configuration), templates: CompiledTemplates(), hooks: hooks)
    }

    func seed(_ count: Int) async throws -> [Registration] {
        let registrations = try (0..<count).map { index in
            try Registration(
                id: try RegistrationID(String(format: "r%07d", index)),
                handle: DeviceHandle(uncheckedPlatform: .gcm, value: "token-\(index)"), tags: [try Tag.username("alice")], owner: "alice")
        }
        try await store.restore(registrations, now: clock.now)
        return registrations
    }

    func notification(_ id: String = "n1") throws -> OutboxNotification {
        OutboxNotification(
            id: id, app: .default, sender: "bob", selection: .all, audience: .tags(.tag(try Tag.username("alice"))),
            payloads: [
                .gcm: RenderedNotification(
                    platform: .gcm, body: Array(#"{"data":{"m":"hi"}}"#.utf8), headers: [], contentType: "application/json")
            ], enqueuedAt: clock.now)
    }

    func start(_ notification: OutboxNotification, on driver: OutboxDriver) async throws {
        try await driver.queue.enqueue(notification, lease: driver.control.lease(from: clock.now))
    }

    @Test func aBroadcastGoesOutPageByPageEachDeviceOnceAndIsRecordedOnce() async throws {
        _ = try await seed(1_050)
        let provider = InMemoryPushProvider(.gcm)
        let driver = driver(provider)
        let notification = try notification()
        try await start(notification, on: driver)
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        #expect(result.stop == nil)
        #expect(result.record?.state == .completed)
        #expect(result.counts == [.gcm: [.success: 1_050]])
        let record = await store.notificationRecord(id: "n1", app: .default)
        #expect(record?.counts == [.gcm: [.success: 1_050]])
        #expect(record?.targetsClaimed == 1_050 && record?.audienceExhausted == true)
        #expect(provider.delivered.count == 1_050 && provider.delivered.values.allSatisfy { $0 == 1 })
        #expect(metrics.pagesClaimed == 11)
    }

    @Test func throttledTargetsWaitForTheirRetryPageUntilTheClockReachesIt() async throws {
        _ = try await seed(100)
        let throttledOnce = Mutex<Set<String>>(Set((0..<10).map { "token-\($0)" }))
        let provider = InMemoryPushProvider(.gcm) { target in
            guard throttledOnce.withLock({ $0.remove(target.handle.value) != nil }) else { return DeliveryVerdict(outcome: .success) }
            return DeliveryVerdict(outcome: .throttled, statusCode: 429, retry: .afterBackoff(retryAfterSeconds: 120))
        }
        let driver = driver(provider)
        let notification = try notification()
        try await start(notification, on: driver)
        let first = await driver.drive(notification, logger: Logger(label: "test"))
        let due = clock.now.adding(seconds: 120)
        #expect(first.stop == .deferred(until: due))
        #expect(first.counts == [.gcm: [.success: 90]], "the throttled ten have no outcome yet")
        #expect(metrics.deferred == 10)
        #expect(await store.notificationRecord(id: "n1", app: .default)?.state == .processing)
        // Parked: nobody takes it before its retry is due.
        clock.advance(seconds: 119)
        #expect(await store.takeDueNotification(app: .default, lease: driver.control.lease(from: clock.now), now: clock.now) == nil)
        clock.advance(seconds: 1)
        let takeover = await store.takeDueNotification(app: .default, lease: driver.control.lease(from: clock.now), now: clock.now)
        #expect(takeover?.notification.id == "n1")
        let second = await driver.drive(try #require(takeover).notification, logger: Logger(label: "test"))
        #expect(second.stop == nil)
        #expect(second.counts == [.gcm: [.success: 10]])
        #expect(second.record?.counts == [.gcm: [.success: 100]])
        #expect(provider.delivered.count == 100 && provider.delivered.values.allSatisfy { $0 == 1 })
    }

    @Test func aUsersCancelStopsThePagesOnTheWireAndCountsTheRestCancelled() async throws {
        _ = try await seed(100)
        let provider = InMemoryPushProvider(.gcm)
        provider.hold()
        let driver = driver(provider, pageSize: 10)
        let notification = try notification()
        try await start(notification, on: driver)
        let drive = Task { await driver.drive(notification, logger: Logger(label: "test")) }
        #expect(
            try await eventually(timeout: Self.patience, every: .milliseconds(5)) { provider.waiting == 3 }, "three batches on the wire")
        _ = await store.requestCancel(notificationID: "n1", app: .default, now: clock.now)
        driver.drives.cancel("n1")
        let result = await drive.value
        #expect(result.stop == nil)
        #expect(result.record?.state == .cancelled)
        #expect(result.record?.counts == [.gcm: [.cancelled: 100]])
        #expect(provider.delivered.isEmpty)
    }

    @Test func drainingStopsADurableDriveBeforeItsFirstPage() async throws {
        _ = try await seed(30)
        let provider = InMemoryPushProvider(.gcm)
        let driver = driver(provider)
        let notification = try notification()
        try await start(notification, on: driver)
        driver.control.beginDraining()
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        #expect(result.stop == .draining)
        #expect(provider.deliveries == 0)
        #expect(await store.notificationRecord(id: "n1", app: .default)?.state == .processing, "resumed after the next start")
    }

    /// The outbox off: the same driver over one send's ephemeral outbox delivers to the whole
    /// audience, draining or not, and leaves nothing in the store.
    @Test func withTheOutboxOffTheSameDriverDeliversThroughAnEphemeralOutbox() async throws {
        _ = try await seed(250)
        let provider = InMemoryPushProvider(.gcm)
        let durable = driver(provider, pageSize: 100)
        let ephemeral = durable.ephemeral()
        let notification = try notification()
        try await start(notification, on: ephemeral)
        durable.control.beginDraining()
        let result = await ephemeral.drive(notification, logger: Logger(label: "test"))
        #expect(result.stop == nil)
        #expect(result.record?.counts == [.gcm: [.success: 250]])
        #expect(provider.delivered.count == 250)
        #expect(await store.notificationRecord(id: "n1", app: .default) == nil)
        let queue = try #require(ephemeral.queue as? EphemeralOutbox)
        #expect(await queue.notificationRecord(id: "n1", app: .default) == nil, "forgotten once finished")
        #expect(metrics.pagesClaimed == 0, "an ephemeral outbox counts no outbox metrics")
    }

    /// Handle changes reach the registration store while the send goes on.
    @Test func goneHandlesArePrunedAsTheSendGoesOn() async throws {
        _ = try await seed(40)
        let provider = InMemoryPushProvider(.gcm) { target in
            target.handle.value.hasSuffix("7")
                ? DeliveryVerdict(outcome: .expiredChannel, statusCode: 404, reason: "UNREGISTERED", handleChange: .remove)
                : DeliveryVerdict(outcome: .success)
        }
        let driver = driver(provider, pageSize: 10)
        let notification = try notification()
        try await start(notification, on: driver)
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        #expect(result.record?.counts == [.gcm: [.success: 36, .expiredChannel: 4]])
        #expect(try await store.removals(app: .default, limit: 100).count == 4)
        #expect(try await store.registration(id: try RegistrationID("r0000007"), app: .default) == nil)
        let failed = await store.failedTargets(notificationID: "n1", app: .default, after: nil, limit: 100)
        #expect(failed.map(\.registrationID.rawValue) == ["r0000007", "r0000017", "r0000027", "r0000037"])
    }
}

extension OutboxDriverTests {
    /// A driver stops (the gateway's shutdown deadline; a crash is the same, minus the stop) with
    /// three pages on the wire, four targets of each already answered and flushed. The driver that
    /// takes the notification over once its lease expired sends only the rest: every device gets
    /// the message once, and the record counts every target once.
    @Test func aPageClaimedAgainSkipsTheTargetsAnsweredBeforeTheDriverStopped() async throws {
        _ = try await seed(30)
        let provider = InMemoryPushProvider(.gcm)
        provider.hold(answering: 4)
        let first = driver(provider, pageSize: 10)
        let notification = try notification()
        try await start(notification, on: first)
        let drive = Task { await first.drive(notification, logger: Logger(label: "test")) }
        #expect(
            try await eventually(timeout: Self.patience, every: .milliseconds(5)) { metrics.answersRecorded == 12 },
            "the early answers are flushed")
        #expect(provider.waiting == 3, "three pages on the wire")
        drive.cancel()
        #expect(await drive.value.stop == .draining)
        #expect(provider.delivered.count == 12)
        provider.release()

        clock.advance(seconds: Double(OutboxConfiguration().leaseSeconds) + 1)
        let next = driver(provider, pageSize: 10)
        let takeover = try #require(
            await store.takeDueNotification(app: .default, lease: next.control.lease(from: clock.now), now: clock.now))
        #expect(takeover.leaseExpired)
        let result = await next.drive(takeover.notification, logger: Logger(label: "test"))
        #expect(result.stop == nil)
        #expect(result.counts == [.gcm: [.success: 18]], "only what was not answered is sent again")
        #expect(result.record?.counts == [.gcm: [.success: 30]])
        #expect(provider.delivered.count == 30 && provider.delivered.values.allSatisfy { $0 == 1 }, "\(provider.delivered)")
    }

    /// An asynchronous broadcast is shared: while its holder has three pages on the wire, another
    /// instance's driver helps with the pages after them. Every device gets the message once, the
    /// record counts each once, the helper stops once no page is left, and the holder finishes it.
    @Test func anotherInstanceHelpsDeliverASharedBroadcastAndItsHolderFinishesIt() async throws {
        _ = try await seed(100)
        let provider = InMemoryPushProvider(.gcm)
        provider.hold()
        let holder = driver(provider, pageSize: 10)
        let helperMetrics = CountingMetrics()
        let helper = OutboxDriver(
            app: .default, queue: store, registrations: store, dispatcher: Dispatcher(providers: [provider]),
            control: OutboxControl(configuration: holder.control.configuration), clock: clock, drives: ActiveDrives(),
            metrics: helperMetrics, settings: holder.settings, templates: CompiledTemplates())
        let notification = try notification()
        try await store.enqueue(notification, lease: nil)
        let taken = try #require(
            await store.takeDueNotification(app: .default, lease: holder.control.lease(from: clock.now), now: clock.now))
        #expect(await store.takeRunningNotification(app: .default, owner: holder.control.owner, now: clock.now) == nil, "not to its holder")
        let holding = Task { await holder.drive(taken.notification, logger: Logger(label: "holder")) }
        #expect(
            try await eventually(timeout: Self.patience, every: .milliseconds(5)) { provider.waiting == 3 }, "the holder's pipeline is full"
        )
        let shared = try #require(await store.takeRunningNotification(app: .default, owner: helper.control.owner, now: clock.now))
        let helping = Task { await helper.drive(shared, helping: true, logger: Logger(label: "helper")) }
        #expect(
            try await eventually(timeout: Self.patience, every: .milliseconds(5)) { provider.waiting == 6 },
            "the helper's pages are on the wire too")
        provider.release()
        let (held, helped) = (await holding.value, await helping.value)
        #expect(helped.stop == .helped)
        #expect(held.stop == nil && held.record?.state == .completed)
        #expect(held.record?.counts == [.gcm: [.success: 100]])
        let (byHolder, byHelper) = (held.counts[.gcm]?[.success] ?? 0, helped.counts[.gcm]?[.success] ?? 0)
        #expect(byHelper >= 30 && byHolder >= 30 && byHolder + byHelper == 100, "holder \(byHolder), helper \(byHelper)")
        #expect(helperMetrics.pagesHelped * 10 == byHelper)
        #expect(provider.delivered.count == 100 && provider.delivered.values.allSatisfy { $0 == 1 })
    }

    /// A synchronous send (its caller waits for every target's outcome) is not shared.
    @Test func aSynchronousSendIsNotShared() async throws {
        _ = try await seed(30)
        let provider = InMemoryPushProvider(.gcm)
        let holder = driver(provider, pageSize: 10)
        let notification = try notification()
        try await start(notification, on: holder)
        #expect(await store.takeRunningNotification(app: .default, owner: "someone-else", now: clock.now) == nil)
        let claim = await store.claimPage(
            notificationID: notification.id, app: .default, lease: OutboxLease(owner: "someone-else", until: clock.now.adding(seconds: 30)),
            pageSize: 10, now: clock.now, helping: true)
        #expect(claim == .lost)
    }

    /// A direct send's handles are no registrations: a service's "gone" for one of them removes
    /// nothing, not even a registration whose id reads like the handle's place in the send.
    @Test func aDirectSendsGoneHandleRemovesNoRegistration() async throws {
        let lookalike = try Registration(
            id: try RegistrationID("direct-0001"), handle: DeviceHandle(uncheckedPlatform: .gcm, value: "token-kept"),
            tags: [try Tag.username("alice")], owner: "alice")
        try await store.restore([lookalike], now: clock.now)
        let provider = InMemoryPushProvider(.gcm) { _ in
            DeliveryVerdict(outcome: .expiredChannel, statusCode: 404, reason: "UNREGISTERED", handleChange: .remove)
        }
        let driver = driver(provider)
        var notification = try notification()
        notification.audience = .direct(handles: [DeviceHandle(uncheckedPlatform: .gcm, value: "token-gone")])
        try await start(notification, on: driver)
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        #expect(result.record?.counts == [.gcm: [.expiredChannel: 1]])
        #expect(try await store.registration(id: lookalike.id, app: .default) == lookalike)
        #expect(try await store.removals(app: .default, limit: 10).isEmpty)
    }
}

/// Counts what the driver tells the metrics.
final class CountingMetrics: OutboxMetrics {
    private let counts = Mutex<[String: Int]>([:])

    private func add(_ name: String, _ value: Int = 1) { counts.withLock { $0[name, default: 0] += value } }

    var pagesClaimed: Int { counts.withLock { $0["pages", default: 0] } }
    var deferred: Int { counts.withLock { $0["deferred", default: 0] } }
    var answersRecorded: Int { counts.withLock { $0["answers", default: 0] } }
    var pagesHelped: Int { counts.withLock { $0["helped", default: 0] } }

    func outboxPageClaimed(reclaimed: Bool) { add("pages") }
    func outboxTargetsDeferred(_ count: Int) { add("deferred", count) }
    func outboxAnswersRecorded(_ count: Int) { add("answers", count) }
    func outboxPageHelped() { add("helped") }
    func outboxRecordFailed() { add("recordFailed") }
    func handleUpdatesFailed(_ count: Int) { add("handleUpdatesFailed", count) }
    func outboxNotificationTakenOver() { add("takenOver") }
    func outboxDepth(_ depth: OutboxDepth, now: Timestamp) {}
    func outboxPruned(_ count: Int) { add("pruned", count) }
    func sent(_ result: NotificationResult) {}
    func sendFinished(duration: Duration) {}
}
