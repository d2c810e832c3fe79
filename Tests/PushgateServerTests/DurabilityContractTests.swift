import Foundation
import Logging
import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateGateway
import PushgateOutbox
import PushgateSQLite
import PushgateTesting
import Synchronization
import Testing

/// The outbox's durability contract (docs/outbox.md, "What is durable when"), one test per
/// clause, each stopping the gateway at the moment the clause is about: in process, a
/// ``FaultyStore`` halts the store at that operation as a killed process would stop there, and a
/// second gateway opens the same SQLite file as the next start would. (Kill -9 of real processes
/// mid-broadcast: `OutboxRecoveryTests`, `MultiInstanceTests`.)
@Suite struct DurabilityContractTests {
    static let config = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config.json").path

    /// Where a halted store's first gateway stopped, and whether it got there.
    final class HaltPoint: Sendable {
        let operation: StoreOperation
        private let reached = Mutex(false)

        init(_ operation: StoreOperation) { self.operation = operation }

        var isReached: Bool { reached.withLock { $0 } }

        /// The hook: lets everything through until `operation`, then halts there for good (a
        /// cancel throws, so nothing after the halt reaches the store).
        func hook(_ operation: StoreOperation) async throws(StoreError) {
            guard operation == self.operation else { return }
            reached.withLock { $0 = true }
            do { try await Task.sleep(for: .seconds(3600)) } catch {}
            throw StoreError(.unavailable, "halted at \(operation)")
        }
    }

    static func registrations(user: String, count: Int) throws -> [Registration] {
        try (0..<count).map { index in
            try Registration(
                id: try RegistrationID("r-\(user)-\(index)"),
                handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", index + 1 + user.count * 1000)),
                tags: [try .username(user)], owner: user)
        }
    }

    /// The repository's configuration, and a new SQLite file in a folder of its own holding
    /// `devices` APNs registrations of `user`, opened.
    static func database(
        user: String, devices count: Int
    ) async throws -> (LoadedConfiguration, path: String, devices: [Registration], store: SQLiteStore) {
        let directory = NSTemporaryDirectory() + "pushgate-contract-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/pushgate.sqlite"
        let devices = try registrations(user: user, count: count)
        let store = try await SQLiteStore.open(path: path)
        try await store.restore(devices, now: SystemClock().now)
        return (try ConfigurationLoader.load(file: config), path, devices, store)
    }

    static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }

    static func command(user: String, key: String) -> SendCommand {
        SendCommand(
            route: .tutorialNotifications, sender: .user(AuthenticatedUser(name: "bob", isAdmin: false)), audience: .user(user),
            content: .message(body: Array(#""see you at 8""#.utf8), secure: false), platforms: "apns", mode: .synchronous,
            idempotencyKey: key)
    }

    /// A send is accepted once its notification is stored, before anything goes on the wire: a
    /// synchronous send stopped right after its enqueue committed (before its first page is
    /// claimed, so before its `200`) is delivered by the next start, once, and its telemetry
    /// shows it; the caller, who got no answer, repeats it with its `Idempotency-Key` and is
    /// answered the first notification.
    @Test func aSynchronousSendStoppedBeforeItsAnswerIsDeliveredByTheNextStartAndARepeatGetsItsResult() async throws {
        let (loaded, path, devices, first) = try await Self.database(user: "alice", devices: 3)
        defer { Self.remove(path) }

        // The first start: stopped once the notification is stored, before a page is claimed.
        let halt = HaltPoint(.claimPage)
        let before = InMemoryPushProvider(.apns)
        let stopped = Gateway(
            app: loaded.defaultApp, store: FaultyStore(first, fault: halt.hook), dispatcher: Dispatcher(providers: [before]))
        let unanswered = Task { try await stopped.sends.run(Self.command(user: "alice", key: "dinner-1"), logger: Logger(label: "t")) }
        #expect(try await eventually { halt.isReached }, "the send reached its first page claim")
        #expect(before.deliveries == 0, "nothing went on the wire before the notification was stored")

        // The next start, on the same file, once the first one's lease has expired.
        let second = try await SQLiteStore.open(path: path)
        let later = ManualClock(now: SystemClock().now.adding(seconds: 3600))
        let after = InMemoryPushProvider(.apns)
        let restarted = Gateway(
            app: loaded.defaultApp, store: second, dispatcher: Dispatcher(providers: [after]), shared: Gateway.Shared(clock: later))
        let held = try #require(try await second.notificationRecords(app: loaded.defaultApp.id, sender: "bob", limit: 10).first)
        #expect(held.state == .processing || held.state == .enqueued, "\(held.state)")
        let service = OutboxDeliveryService(
            driver: restarted.driver, maintenance: second, deadline: .seconds(5), logger: Logger(label: "pushgate.contract"))
        let delivering = Task { try await service.run() }
        let record = try await eventually {
            try await second.notificationRecord(id: held.id, app: loaded.defaultApp.id)
        } until: {
            $0?.state.isFinal == true
        }
        delivering.cancel()
        _ = try? await delivering.value
        #expect(record?.state == .completed, "\(String(describing: record?.state))")
        #expect(record?.succeeded == 3, "\(String(describing: record))")
        #expect(Set(after.delivered.keys) == Set(devices.map(\.handle.value)) && after.delivered.values.allSatisfy { $0 == 1 })

        // The caller repeats the send with its key: the first notification's result, nothing sent again.
        let repeated = try await restarted.sends.run(Self.command(user: "alice", key: "dinner-1"), logger: Logger(label: "t"))
        guard case .delivered(let outcome) = repeated else {
            Issue.record("a repeat is answered as delivered, not \(repeated)")
            return
        }
        #expect(outcome.replayed && outcome.result.notificationID == held.id && outcome.result.state == .completed)
        #expect(after.delivered.values.reduce(0, +) == 3, "the repeat sent nothing")
        unanswered.cancel()
        _ = try? await unanswered.value
    }

    /// A synchronous send's `200` is answered only after what it reports is durable: when it is
    /// answered, a second connection to the same file (the next start's view) reads its finished
    /// telemetry and the handles it pruned.
    @Test func aSynchronousSendIsAnsweredOnlyAfterItsTelemetryAndPrunedHandlesAreDurable() async throws {
        let (loaded, path, devices, store) = try await Self.database(user: "carol", devices: 4)
        defer { Self.remove(path) }
        let uninstalled = devices[0].handle.value
        let provider = InMemoryPushProvider(.apns) { target in
            target.handle.value == uninstalled
                ? DeliveryVerdict(outcome: .expiredChannel, statusCode: 410, reason: "Unregistered", handleChange: .remove)
                : DeliveryVerdict(outcome: .success)
        }
        let gateway = Gateway(app: loaded.defaultApp, store: store, dispatcher: Dispatcher(providers: [provider]))
        let answer = try await gateway.sends.run(Self.command(user: "carol", key: "pruned-1"), logger: Logger(label: "t"))
        guard case .delivered(let outcome) = answer else {
            Issue.record("a synchronous send is answered as delivered, not \(answer)")
            return
        }
        #expect(outcome.ending == .finished && outcome.result.successCount == 3 && outcome.result.failureCount == 1)

        // What the answer reported, read through another connection as the next start would.
        let next = try await SQLiteStore.open(path: path)
        let record = try #require(try await next.notificationRecord(id: outcome.result.notificationID, app: loaded.defaultApp.id))
        #expect(record.state.isFinal && record.succeeded == 3 && record.failed == 1, "\(record)")
        let failed = try await next.failedTargets(
            notificationID: record.id, app: loaded.defaultApp.id, after: nil, limit: 10)
        #expect(failed.map(\.registrationID) == [devices[0].id], "\(failed)")
        #expect(try await next.registration(id: devices[0].id, app: loaded.defaultApp.id) == nil, "the pruned handle is gone on disk")
        #expect(try await next.registration(id: devices[1].id, app: loaded.defaultApp.id) != nil)
    }

    /// The fewest commits that keep the contract: a synchronous send whose audience fits one page,
    /// with nothing to prune, makes two outbox transactions (its enqueue together with its page's
    /// claim, and its page's record together with its finish) and no claim after its last page;
    /// when it is answered its finished telemetry is on disk.
    @Test func aOnePageSynchronousSendMakesTwoTransactions() async throws {
        let (loaded, path, devices, store) = try await Self.database(user: "erin", devices: 3)
        defer { Self.remove(path) }
        let provider = InMemoryPushProvider(.apns)
        let gateway = Gateway(app: loaded.defaultApp, store: store, dispatcher: Dispatcher(providers: [provider]))
        let before = store.transactionGroupCounts.transactions
        let answer = try await gateway.sends.run(Self.command(user: "erin", key: "one-page"), logger: Logger(label: "t"))
        guard case .delivered(let outcome) = answer else {
            Issue.record("a synchronous send is answered as delivered, not \(answer)")
            return
        }
        #expect(outcome.ending == .finished && outcome.result.successCount == 3 && outcome.result.state == .completed)
        #expect(store.transactionGroupCounts.transactions - before == 2, "\(store.transactionGroupCounts)")
        #expect(Set(provider.delivered.keys) == Set(devices.map(\.handle.value)))

        let next = try await SQLiteStore.open(path: path)
        let record = try #require(try await next.notificationRecord(id: outcome.result.notificationID, app: loaded.defaultApp.id))
        #expect(record.state == .completed && record.succeeded == 3 && record.endedAt != nil, "\(record)")
        #expect(try await next.outboxDepth(now: SystemClock().now.adding(seconds: 3600)).pending == 0)
    }

    /// An asynchronous send's `202` follows the commit of its notification and its key: when it
    /// is answered, the next start's connection reads the notification waiting, and a repeat of
    /// the send with its key, made to that next start, is answered the same notification.
    @Test func anAcceptedSendIsStoredWithItsKeyWhenItIsAnswered() async throws {
        let (loaded, path, _, store) = try await Self.database(user: "dave", devices: 2)
        defer { Self.remove(path) }
        let provider = InMemoryPushProvider(.apns)
        let gateway = Gateway(app: loaded.defaultApp, store: store, dispatcher: Dispatcher(providers: [provider]))
        var command = Self.command(user: "dave", key: "later-1")
        command.mode = .asynchronous
        guard case .accepted(let accepted) = try await gateway.sends.run(command, logger: Logger(label: "t")) else {
            Issue.record("an asynchronous send is answered as accepted")
            return
        }
        #expect(!accepted.replayed && provider.deliveries == 0)

        let next = try await SQLiteStore.open(path: path)
        let record = try #require(try await next.notificationRecord(id: accepted.record.id, app: loaded.defaultApp.id))
        #expect(record.state == .enqueued, "\(record.state)")
        let restarted = Gateway(app: loaded.defaultApp, store: next, dispatcher: Dispatcher(providers: [InMemoryPushProvider(.apns)]))
        guard case .accepted(let repeated) = try await restarted.sends.run(command, logger: Logger(label: "t")) else {
            Issue.record("a repeat of an asynchronous send is answered as accepted")
            return
        }
        #expect(repeated.replayed && repeated.record.id == accepted.record.id)
    }
}
