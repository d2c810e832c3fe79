import Foundation
import Pushgate
import PushgateConfig
import PushgateCore
import PushgateDispatch
import PushgateServer
import Synchronization
import Testing

/// A store that works for the first page of an audience and then fails, and that cannot apply
/// handle changes: what a disk error in the middle of a send looks like to the gateway.
final class FailingStore: RegistrationStore, SecureMessageStore, OutboxStore {
    let inner = InMemoryRegistrationStore()
    let failedApplies = Mutex<Int>(0)
    let pagesClaimed = Mutex<Int>(0)

    /// The first page of an outbox notification, then a storage error.
    func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError)
        -> OutboxClaim
    {
        let claimed = pagesClaimed.withLock { count in
            defer { count += 1 }
            return count
        }
        if claimed > 0 { throw StoreError(.storage, "disk I/O error") }
        return await inner.claimPage(
            notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now, helping: helping)
    }
    func takeRunningNotification(app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> OutboxNotification? {
        await inner.takeRunningNotification(app: app, owner: owner, now: now)
    }
    func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) async throws(StoreError) {
        await inner.recordAnswers(notificationID: notificationID, app: app, answers: answers)
    }
    func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) -> OutboxEnqueued {
        try await inner.enqueue(notification, lease: lease)
    }
    func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) async throws(StoreError) -> OutboxKeyHolder? {
        await inner.idempotentNotification(key: key, app: app, sender: sender)
    }
    func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover? {
        await inner.takeDueNotification(app: app, lease: lease, now: now)
    }
    func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?
    ) async throws(StoreError) -> Bool {
        await inner.completePage(notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: retry)
    }
    func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> Timestamp? {
        await inner.parkNotification(notificationID: notificationID, app: app, owner: owner, now: now)
    }
    func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        await inner.finish(notificationID: notificationID, app: app, owner: owner, now: now)
    }
    func renewLeases(owner: String, until: Timestamp) async throws(StoreError) { await inner.renewLeases(owner: owner, until: until) }
    func releaseLeases(owner: String, notificationID: String?) async throws(StoreError) {
        await inner.releaseLeases(owner: owner, notificationID: notificationID)
    }
    func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        await inner.requestCancel(notificationID: notificationID, app: app, now: now)
    }
    func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord? {
        await inner.notificationRecord(id: id, app: app)
    }
    func failedTargets(notificationID: String, app: AppID, after: RegistrationID?, limit: Int) async throws(StoreError) -> [TargetResult] {
        await inner.failedTargets(notificationID: notificationID, app: app, after: after, limit: limit)
    }
    func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord] {
        await inner.notificationRecords(app: app, sender: sender, limit: limit)
    }
    func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int {
        await inner.pruneNotifications(endedBefore: endedBefore)
    }
    func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth { await inner.outboxDepth(now: now) }

    func createRegistrationID(app: AppID, owner: String, maximumReserved: Int, now: Timestamp) async throws(StoreError) -> RegistrationID {
        try await inner.createRegistrationID(app: app, owner: owner, maximumReserved: maximumReserved, now: now)
    }
    func registrationIDs(handle: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        try await inner.registrationIDs(handle: handle, app: app)
    }
    func registrationIDs(handlePrefix: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        try await inner.registrationIDs(handlePrefix: handlePrefix, app: app)
    }
    func upsert(_ registration: Registration, now: Timestamp, writer: WriterGuard?) async throws(StoreError) {
        try await inner.upsert(registration, now: now, writer: writer)
    }
    func registration(id: RegistrationID, app: AppID) async throws(StoreError) -> Registration? {
        try await inner.registration(id: id, app: app)
    }
    func delete(id: RegistrationID, app: AppID) async throws(StoreError) -> Bool { try await inner.delete(id: id, app: app) }
    func restore(_ registrations: [Registration], now: Timestamp) async throws(StoreError) {
        try await inner.restore(registrations, now: now)
    }
    func replace(_ registrations: [Registration], removing: [RegistrationID], app: AppID, now: Timestamp) async throws(StoreError) {
        try await inner.replace(registrations, removing: removing, app: app, now: now)
    }
    func removals(app: AppID, limit: Int) async throws(StoreError) -> [HandleRemoval] { try await inner.removals(app: app, limit: limit) }
    func storeSecureMessage(_ message: SecureMessage) async throws(StoreError) { try await inner.storeSecureMessage(message) }
    func readSecureMessage(id: String, app: AppID, recipient: String, now: Timestamp) async throws(StoreError) -> SecureMessage? {
        try await inner.readSecureMessage(id: id, app: app, recipient: recipient, now: now)
    }

    /// The first page, then a storage error.
    func registrations(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, batchSize: Int, now: Timestamp,
        after: RegistrationID?
    ) -> AsyncThrowingStream<[Registration], any Error> {
        let pages = inner.registrations(matching: expression, platforms: platforms, app: app, batchSize: batchSize, now: now, after: after)
        return AsyncThrowingStream { continuation in
            Task {
                var iterator = pages.makeAsyncIterator()
                if let first = try? await iterator.next() { continuation.yield(first) }
                continuation.finish(throwing: StoreError(.storage, "disk I/O error"))
            }
        }
    }

    /// The first page of targets, then a storage error.
    func deliveryTargets(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, pageSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[DispatchTarget], any Error> {
        let pages = inner.deliveryTargets(matching: expression, platforms: platforms, app: app, pageSize: pageSize, now: now)
        let served = PageCursor()
        return AsyncThrowingStream(unfolding: {
            guard served.position != nil else { throw StoreError(.storage, "disk I/O error") }
            served.advance(past: nil, full: false)
            var iterator = pages.makeAsyncIterator()
            return try await iterator.next()
        })
    }

    func apply(_ changes: [StoredHandleChange], app: AppID, now: Timestamp) async throws(StoreError) {
        failedApplies.withLock { $0 += changes.count }
        throw StoreError(.storage, "disk I/O error")
    }
}

@Suite struct StoreFailureTests {
    /// A store failure mid-send is no bare 503 that throws away what was delivered, and no handle
    /// removal is dropped silently (`try?`).
    @Test func aStoreFailureMidSendReportsWhatWasDeliveredAndCountsUnappliedRemovals() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let loaded = try ConfigurationLoader.load(file: root.appendingPathComponent("config.json").path)
        let store = FailingStore()
        // 1,200 of carol's devices: the first page (500) is listed, then the store fails.
        var registrations: [Registration] = []
        for index in 0..<1_200 {
            registrations.append(
                try Registration(
                    id: try RegistrationID(String(format: "f%07d", index)),
                    handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", index + 1)),
                    tags: [try .username("carol")], owner: "carol"))
        }
        try await store.restore(registrations, now: Timestamp(secondsSinceEpoch: 0))
        // APNs answers every other device "Unregistered": a handle removal for the store.
        let transport = InMemoryPushTransport { request in
            let gone = (Int(request.url.suffix(1), radix: 16) ?? 0) % 2 == 0
            return .success(
                gone
                    ? PushHTTPResponse(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1}"#.utf8))
                    : PushHTTPResponse(status: 200, headers: [HTTPHeader(name: "apns-id", value: UUID().uuidString)]))
        }
        let provider = APNSProvider(
            endpoint: "https://apns.example", topic: "com.example.app", tokens: nil, transport: transport, policy: RetryPolicy(),
            clock: SystemClock())
        let metrics = GatewayMetrics()
        let gateway = Gateway(
            app: loaded.defaultApp, store: store, dispatcher: Dispatcher(providers: [provider]), shared: Gateway.Shared(metrics: metrics))
        let prepared = try gateway.sends.prepare(
            Sends.SendRequest(pns: "apns", toTag: "carol", body: Array(#""hi""#.utf8)),
            user: AuthenticatedUser(name: "bob", isAdmin: false))
        let outcome = await gateway.sends.deliver(prepared)

        #expect(outcome.ending == .interrupted)
        #expect(outcome.result.error?.contains("500 targets were reached") == true, "\(outcome.result.error ?? "no error")")
        #expect(outcome.result.successCount == 250)
        #expect(outcome.result.platforms.first?.total == 500)
        #expect(store.failedApplies.withLock { $0 } == 250)
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains("pushgate_handle_updates_failed_total 250"), "\(exposition.prefix(400))")
    }
}
