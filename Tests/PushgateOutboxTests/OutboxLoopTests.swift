import Logging
import Pushgate
import PushgateDispatch
import PushgateOutbox
import PushgateTesting
import Synchronization
import Testing

/// Hooks that say which targets are superseded (handles in `superseded`), write a row per page
/// (its number and outcomes; an oversize one for the pages in `oversize`), and remember every
/// page they were told was recorded.
final class RecordingHooks: OutboxHooks {
    let superseded: Set<String>
    let oversize: Set<Int>
    private let told = Mutex<[(page: Int, outcomes: [Outcome])]>([])

    init(superseded: Set<String> = [], oversize: Set<Int> = []) {
        self.superseded = superseded
        self.oversize = oversize
    }

    var recordedPages: [(page: Int, outcomes: [Outcome])] { told.withLock { $0 } }

    func superseded(_ targets: [DispatchTarget], of notification: OutboxNotification) async -> [RegistrationID: DeliveryVerdict] {
        Dictionary(
            targets.filter { superseded.contains($0.handle.value) }.map {
                ($0.registrationID, DeliveryVerdict(outcome: .skipped, reason: "superseded by a newer message"))
            }, uniquingKeysWith: { first, _ in first })
    }

    func rows(for outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) -> [OutboxRecordRow] {
        let body = oversize.contains(page) ? String(repeating: "x", count: OutboxRecordRow.maximumBodyBytes + 1) : "\(outcomes.count)"
        return [OutboxRecordRow(kind: "test.page", body: body)]
    }

    func recorded(_ outcomes: [DeliveryReport], page: Int, of notification: OutboxNotification) async {
        told.withLock { $0.append((page, outcomes.map(\.verdict.outcome))) }
    }
}

/// What the driver's loop offers features: audience targets that are not registrations, the
/// claim and after-record hooks, and rows written with a page's record.
extension OutboxDriverTests {
    /// A superseded target is not sent and is reported with the hook's verdict; the rest of its
    /// page goes out as usual.
    @Test func aTargetTheClaimHookCallsSupersededIsNotSent() async throws {
        _ = try await seed(10)
        let provider = InMemoryPushProvider(.gcm)
        let hooks = RecordingHooks(superseded: ["token-3", "token-7"])
        let driver = driver(provider, hooks: hooks)
        let notification = try notification()
        try await start(notification, on: driver)
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        #expect(result.counts == [.gcm: [.success: 8, .skipped: 2]])
        #expect(provider.delivered.count == 8)
        #expect(provider.delivered["token-3"] == nil && provider.delivered["token-7"] == nil)
        #expect(result.targets.filter { $0.outcome == .skipped }.allSatisfy { $0.reason == "superseded by a newer message" })
    }

    /// After each page's record the hook is told its final outcomes, once per page, and the rows
    /// the hooks wrote are stored with the record, page by page.
    @Test func theAfterRecordHookIsToldEachRecordedPageAndItsRowsAreStored() async throws {
        _ = try await seed(25)
        let hooks = RecordingHooks(superseded: ["token-0"])
        let driver = driver(InMemoryPushProvider(.gcm), pageSize: 10, hooks: hooks)
        let notification = try notification()
        try await start(notification, on: driver)
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        #expect(result.record?.state == .completed)
        #expect(hooks.recordedPages.map(\.page).sorted() == [0, 1, 2])
        #expect(hooks.recordedPages.flatMap(\.outcomes).count == 25)
        #expect(hooks.recordedPages.first { $0.page == 0 }?.outcomes.filter { $0 == .skipped }.count == 1)
        let rows = await store.recordedRows(app: .default, after: 0, limit: 10)
        #expect(rows.map(\.page).sorted() == [0, 1, 2])
        #expect(rows.allSatisfy { $0.notificationID == "n1" && $0.row.kind == "test.page" })
        #expect(rows.map(\.row.body).sorted() == ["10", "10", "5"])
    }

    /// A row the store refuses fails its page's whole record: the page is not recorded (it is
    /// delivered again by the next driver), its rows are not stored, and the after-record hook is
    /// not told of it.
    @Test func rowsCommitOrFailWithTheirPagesRecord() async throws {
        _ = try await seed(20)
        let hooks = RecordingHooks(oversize: [1])
        let driver = driver(InMemoryPushProvider(.gcm), pageSize: 10, hooks: hooks)
        let notification = try notification()
        try await start(notification, on: driver)
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        guard case .recordFailed? = result.stop else {
            Issue.record("the drive did not stop on the failed record: \(String(describing: result.stop))")
            return
        }
        #expect(hooks.recordedPages.map(\.page) == [0])
        #expect(await store.recordedRows(app: .default, after: 0, limit: 10).map(\.page) == [0])
        let record = await store.notificationRecord(id: "n1", app: .default)
        #expect(record?.counts == [.gcm: [.success: 10]], "page 1's outcomes are not recorded")
    }

    /// An FCM topic is a target of its own kind: sent once, reported as the topic, never pruned:
    /// a registration whose id looks like the topic's target is untouched by a "gone" answer.
    @Test func anAudienceTargetGoesThroughTheLoopAndIsNeverPruned() async throws {
        let lookalike = try Registration(
            id: FCMRecipient.topicTargetID, handle: DeviceHandle(uncheckedPlatform: .gcm, value: "device-token"),
            tags: [try Tag.username("alice")], owner: "alice")
        try await store.restore([lookalike], now: clock.now)
        let provider = InMemoryPushProvider(.fcm) { _ in
            DeliveryVerdict(outcome: .expiredChannel, statusCode: 404, reason: "UNREGISTERED", handleChange: .remove)
        }
        let driver = driver(provider)
        var notification = try notification()
        notification.audience = .fcm(try FCMRecipient(topic: "news"))
        notification.payloads = [
            .fcm: RenderedNotification(
                platform: .fcm, body: Array(#"{"data":{"m":"hi"}}"#.utf8), headers: [], contentType: "application/json")
        ]
        try await start(notification, on: driver)
        let result = await driver.drive(notification, logger: Logger(label: "test"))
        #expect(provider.deliveries == 1 && result.targets.first?.outcome == .expiredChannel)
        #expect(result.targets.count == 1)
        #expect(result.targets.first?.maskedHandle == "/topics/news", "reported as the audience it stands for, whole")
        #expect(result.targets.first?.handleAction == nil, "nothing is removed")
        #expect(try await store.registration(id: FCMRecipient.topicTargetID, app: .default)?.handle.value == "device-token")
    }
}
