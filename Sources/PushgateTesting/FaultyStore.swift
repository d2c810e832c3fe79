import Pushgate

/// One operation of a store, as ``FaultyStore`` names it to its fault hook.
public enum StoreOperation: String, Sendable, CaseIterable {
    // Registrations
    case createRegistrationID, registrationIDs, upsert, registration, delete, registrations, deliveryTargets, restore, replace
    case hubWrite, registrationCount
    case importRegistrations
    case apply, removals, templates
    // Secure messages
    case storeSecureMessage, readSecureMessage
    // The outbox's queue
    case enqueue, idempotentNotification, takeDueNotification, claimPage, takeRunningNotification, completePage, recordAnswers
    case parkNotification, finish, renewLeases, releaseLeases, requestCancel
    // Its log and housekeeping
    case notificationRecord, failedTargets, notificationRecords, pruneNotifications, outboxDepth
    // Live Activities and broadcast channels
    case stampActivity, activity, activities, retireTokens, channels, addChannel, removeChannel
}

/// A store that does what `inner` does, but first asks `fault` at every operation: the hook
/// lets it through, throws the ``StoreError`` a failing disk or database gives (a fault at that
/// point), or suspends (the process halted there: nothing after it happens, and a test may open
/// the same database again as the next start would). The test kit's one store decorator, for
/// every fault and crash-point test; the hook counts, so "the second page fails" is a few lines.
public final class FaultyStore<Inner: GatewayStore>: GatewayStore {
    public let inner: Inner
    let fault: @Sendable (StoreOperation) async throws(StoreError) -> Void

    public init(_ inner: Inner, fault: @escaping @Sendable (StoreOperation) async throws(StoreError) -> Void) {
        self.inner = inner
        self.fault = fault
    }

    // MARK: Registrations

    public func createRegistrationID(
        app: AppID, owner: String, maximumReserved: Int, lifetime: Double?, now: Timestamp
    ) async throws(StoreError) -> RegistrationID {
        try await fault(.createRegistrationID)
        return try await inner.createRegistrationID(app: app, owner: owner, maximumReserved: maximumReserved, lifetime: lifetime, now: now)
    }
    public func registrationIDs(handle: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        try await fault(.registrationIDs)
        return try await inner.registrationIDs(handle: handle, app: app)
    }
    public func registrationIDs(handlePrefix: String, app: AppID) async throws(StoreError) -> [RegistrationID] {
        try await fault(.registrationIDs)
        return try await inner.registrationIDs(handlePrefix: handlePrefix, app: app)
    }
    public func upsert(_ registration: Registration, now: Timestamp, writer: WriterGuard?) async throws(StoreError) {
        try await fault(.upsert)
        try await inner.upsert(registration, now: now, writer: writer)
    }
    public func registration(id: RegistrationID, app: AppID) async throws(StoreError) -> Registration? {
        try await fault(.registration)
        return try await inner.registration(id: id, app: app)
    }
    public func delete(id: RegistrationID, app: AppID) async throws(StoreError) -> Bool {
        try await fault(.delete)
        return try await inner.delete(id: id, app: app)
    }
    /// The hook is asked before each page.
    public func registrations(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, batchSize: Int, now: Timestamp,
        after: RegistrationID?
    ) -> AsyncThrowingStream<[Registration], any Error> {
        Self.paged(
            inner.registrations(matching: expression, platforms: platforms, app: app, batchSize: batchSize, now: now, after: after),
            .registrations, fault: fault)
    }
    /// The hook is asked before each page.
    public func deliveryTargets(
        selecting selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, pageSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[DispatchTarget], any Error> {
        Self.paged(
            inner.deliveryTargets(selecting: selector, platforms: platforms, app: app, pageSize: pageSize, now: now), .deliveryTargets,
            fault: fault)
    }
    public func restore(_ registrations: [Registration], now: Timestamp) async throws(StoreError) {
        try await fault(.restore)
        try await inner.restore(registrations, now: now)
    }
    /// The hook is asked before the import and before each batch after the first: a fault there
    /// is the store failing mid-import (`inner` rolls the import back).
    public func importRegistrations<Batches: AsyncSequence<[Registration], Failure> & Sendable, Failure: Error>(
        _ batches: Batches, now: Timestamp
    ) async throws(RegistrationImportFailure<Failure>) -> Int {
        do { try await fault(.importRegistrations) } catch { throw .store(error) }
        do {
            return try await inner.importRegistrations(FaultyBatches(batches, fault: fault), now: now)
        } catch {
            switch error {
            case .store(let error), .batches(.store(let error)): throw .store(error)
            case .batches(.batches(let failure)): throw .batches(failure)
            }
        }
    }
    public func replace(_ registrations: [Registration], removing: [RegistrationID], app: AppID, now: Timestamp) async throws(StoreError) {
        try await fault(.replace)
        try await inner.replace(registrations, removing: removing, app: app, now: now)
    }
    public func registrationCount(app: AppID, upTo limit: Int) async throws(StoreError) -> Int {
        try await fault(.registrationCount)
        return try await inner.registrationCount(app: app, upTo: limit)
    }
    public func write(_ write: HubWrite, now: Timestamp) async throws(StoreError) {
        try await fault(.hubWrite)
        try await inner.write(write, now: now)
    }
    public func apply(_ changes: [StoredHandleChange], app: AppID, now: Timestamp, events: HandleChangeEvents) async throws(StoreError) {
        try await fault(.apply)
        try await inner.apply(changes, app: app, now: now, events: events)
    }
    public func removals(app: AppID, limit: Int) async throws(StoreError) -> [HandleRemoval] {
        try await fault(.removals)
        return try await inner.removals(app: app, limit: limit)
    }
    public func templates(of ids: [RegistrationID], app: AppID) async throws(StoreError) -> [RegistrationID: RegistrationTemplate] {
        try await fault(.templates)
        return try await inner.templates(of: ids, app: app)
    }

    // MARK: Secure messages

    public func storeSecureMessage(_ message: SecureMessage) async throws(StoreError) {
        try await fault(.storeSecureMessage)
        try await inner.storeSecureMessage(message)
    }
    public func readSecureMessage(id: String, app: AppID, recipient: String, now: Timestamp) async throws(StoreError) -> SecureMessage? {
        try await fault(.readSecureMessage)
        return try await inner.readSecureMessage(id: id, app: app, recipient: recipient, now: now)
    }

    // MARK: The outbox's queue

    public func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) -> OutboxEnqueued {
        try await fault(.enqueue)
        return try await inner.enqueue(notification, lease: lease)
    }
    public func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) async throws(StoreError) -> OutboxKeyHolder? {
        try await fault(.idempotentNotification)
        return try await inner.idempotentNotification(key: key, app: app, sender: sender)
    }
    public func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover? {
        try await fault(.takeDueNotification)
        return try await inner.takeDueNotification(app: app, lease: lease, now: now)
    }
    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError) -> OutboxClaim {
        try await fault(.claimPage)
        return try await inner.claimPage(
            notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now, helping: helping)
    }
    public func takeRunningNotification(app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> OutboxNotification? {
        try await fault(.takeRunningNotification)
        return try await inner.takeRunningNotification(app: app, owner: owner, now: now)
    }
    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?, rows: [OutboxRecordRow]
    ) async throws(StoreError) -> Bool {
        try await fault(.completePage)
        return try await inner.completePage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: retry, rows: rows)
    }
    public func recordedRows(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [StoredOutboxRow] {
        try await inner.recordedRows(app: app, after: sequence, limit: limit)
    }
    public func removeRecordedRows(app: AppID, through sequence: Int64) async throws(StoreError) -> Int {
        try await inner.removeRecordedRows(app: app, through: sequence)
    }
    public func appendRows(_ rows: [OutboxRecordRow], notificationID: String, page: Int, app: AppID) async throws(StoreError) {
        try await inner.appendRows(rows, notificationID: notificationID, page: page, app: app)
    }
    public func claimWebhookEvents(
        app: AppID, receiver: String, owner: String, until: Timestamp, now: Timestamp, limit: Int
    ) async throws(StoreError) -> [WebhookDelivery] {
        try await inner.claimWebhookEvents(app: app, receiver: receiver, owner: owner, until: until, now: now, limit: limit)
    }
    public func webhookEventsPosted(app: AppID, sequences: [Int64], now: Timestamp) async throws(StoreError) {
        try await inner.webhookEventsPosted(app: app, sequences: sequences, now: now)
    }
    public func webhookEventsFailed(
        app: AppID, sequences: [Int64], error: String, retryAt: Timestamp?, now: Timestamp
    ) async throws(StoreError) {
        try await inner.webhookEventsFailed(app: app, sequences: sequences, error: error, retryAt: retryAt, now: now)
    }
    public func parkedWebhookEvents(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [WebhookDelivery] {
        try await inner.parkedWebhookEvents(app: app, after: sequence, limit: limit)
    }
    public func retryParkedWebhookEvents(app: AppID, sequences: [Int64]?, now: Timestamp) async throws(StoreError) -> Int {
        try await inner.retryParkedWebhookEvents(app: app, sequences: sequences, now: now)
    }
    public func pruneWebhookEvents(postedBefore: Timestamp, limit: Int) async throws(StoreError) -> Int {
        try await inner.pruneWebhookEvents(postedBefore: postedBefore, limit: limit)
    }
    public func webhookEventCounts(app: AppID) async throws(StoreError) -> WebhookEventCounts {
        try await inner.webhookEventCounts(app: app)
    }
    public func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) async throws(StoreError) {
        try await fault(.recordAnswers)
        try await inner.recordAnswers(notificationID: notificationID, app: app, answers: answers)
    }
    public func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> Timestamp? {
        try await fault(.parkNotification)
        return try await inner.parkNotification(notificationID: notificationID, app: app, owner: owner, now: now)
    }
    public func finish(
        notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents
    ) async throws(StoreError) -> NotificationRecord? {
        try await fault(.finish)
        return try await inner.finish(notificationID: notificationID, app: app, owner: owner, now: now, completion: completion)
    }
    public func renewLeases(owner: String, until: Timestamp) async throws(StoreError) {
        try await fault(.renewLeases)
        try await inner.renewLeases(owner: owner, until: until)
    }
    public func releaseLeases(owner: String, notificationID: String?) async throws(StoreError) {
        try await fault(.releaseLeases)
        try await inner.releaseLeases(owner: owner, notificationID: notificationID)
    }
    public var servesSeveralInstances: Bool { inner.servesSeveralInstances }
    public func listenForOutboxWork(_ wake: @escaping @Sendable () -> Void) async { await inner.listenForOutboxWork(wake) }
    public func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        try await fault(.requestCancel)
        return try await inner.requestCancel(notificationID: notificationID, app: app, now: now)
    }

    // MARK: The outbox's log and housekeeping

    public func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord? {
        try await fault(.notificationRecord)
        return try await inner.notificationRecord(id: id, app: app)
    }
    public func failedTargets(
        notificationID: String, app: AppID, after: RegistrationID?, limit: Int
    ) async throws(StoreError) -> [TargetResult] {
        try await fault(.failedTargets)
        return try await inner.failedTargets(notificationID: notificationID, app: app, after: after, limit: limit)
    }
    public func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord] {
        try await fault(.notificationRecords)
        return try await inner.notificationRecords(app: app, sender: sender, limit: limit)
    }
    public func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int {
        try await fault(.pruneNotifications)
        return try await inner.pruneNotifications(endedBefore: endedBefore)
    }
    public func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth {
        try await fault(.outboxDepth)
        return try await inner.outboxDepth(now: now)
    }

    /// `pages`, the hook asked before each one (a throw ends the stream with it).
    static func paged<Element: Sendable>(
        _ pages: AsyncThrowingStream<Element, any Error>, _ operation: StoreOperation,
        fault: @escaping @Sendable (StoreOperation) async throws(StoreError) -> Void
    ) -> AsyncThrowingStream<Element, any Error> {
        let iterator = PageIterator(pages.makeAsyncIterator())
        return AsyncThrowingStream(unfolding: {
            try await fault(operation)
            return try await iterator.next()
        })
    }
}

/// A stream's iterator shared with the unfolding closure that reads it (one reader at a time).
final class PageIterator<Element: Sendable>: @unchecked Sendable {
    // The closure of `AsyncThrowingStream(unfolding:)` is called by one reader at a time.
    private var iterator: AsyncThrowingStream<Element, any Error>.AsyncIterator

    init(_ iterator: AsyncThrowingStream<Element, any Error>.AsyncIterator) { self.iterator = iterator }

    func next() async throws -> Element? { try await iterator.next() }
}

/// An import's batches with the fault hook asked before each one after the first: the hook's
/// error ends the sequence as the store's (``RegistrationImportFailure/store(_:)``).
struct FaultyBatches<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == [Registration] {
    typealias Element = [Registration]
    typealias Failure = RegistrationImportFailure<Base.Failure>

    let base: Base
    let fault: @Sendable (StoreOperation) async throws(StoreError) -> Void

    init(_ base: Base, fault: @escaping @Sendable (StoreOperation) async throws(StoreError) -> Void) {
        self.base = base
        self.fault = fault
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), fault: fault) }

    struct AsyncIterator: AsyncIteratorProtocol {
        typealias Element = [Registration]
        typealias Failure = RegistrationImportFailure<Base.Failure>

        var base: Base.AsyncIterator
        let fault: @Sendable (StoreOperation) async throws(StoreError) -> Void
        var first = true

        mutating func next() async throws(Failure) -> [Registration]? { try await next(isolation: nil) }

        mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> [Registration]? {
            if !first {
                do { try await fault(.importRegistrations) } catch { throw .store(error) }
            }
            first = false
            do { return try await base.next(isolation: actor) } catch { throw .batches(error) }
        }
    }
}

// MARK: Live Activities and broadcast channels

extension FaultyStore {
    public func stamp(_ key: LiveActivityKey, _ send: LiveActivityStamping) async throws(StoreError) -> LiveActivityRecord {
        try await fault(.stampActivity)
        return try await inner.stamp(key, send)
    }
    public func activity(_ key: LiveActivityKey) async throws(StoreError) -> LiveActivityRecord? {
        try await fault(.activity)
        return try await inner.activity(key)
    }
    public func activities(app: AppID, owner: RegistrationOwner?, limit: Int) async throws(StoreError) -> [LiveActivityRecord] {
        try await fault(.activities)
        return try await inner.activities(app: app, owner: owner, limit: limit)
    }
    public func retireTokens(of key: LiveActivityKey, ids: [RegistrationID]) async throws(StoreError) -> Int {
        try await fault(.retireTokens)
        return try await inner.retireTokens(of: key, ids: ids)
    }
    public func channels(app: AppID) async throws(StoreError) -> [APNSChannel] {
        try await fault(.channels)
        return try await inner.channels(app: app)
    }
    public func addChannel(_ channel: APNSChannel, maximum: Int) async throws(StoreError) {
        try await fault(.addChannel)
        try await inner.addChannel(channel, maximum: maximum)
    }
    public func removeChannel(app: AppID, name: String) async throws(StoreError) -> Bool {
        try await fault(.removeChannel)
        return try await inner.removeChannel(app: app, name: name)
    }
}
