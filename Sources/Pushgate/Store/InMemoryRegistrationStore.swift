/// A registration store in memory: for tests and throwaway setups. Same semantics as the SQLite
/// store.
public actor InMemoryRegistrationStore: RegistrationStore {
    /// How long a created but unused registration id stays valid, in seconds. Default one day.
    public let reservationLifetime: Double
    private var reserved: [AppID: [RegistrationID: (expiry: Timestamp, owner: String)]] = [:]
    private var registrations: [AppID: [RegistrationID: Registration]] = [:]
    private var removalLog: [AppID: [HandleRemoval]] = [:]
    private var secureMessages: [AppID: [String: SecureMessage]] = [:]
    private var liveActivities: [LiveActivityKey: LiveActivityRecord] = [:]
    private var apnsChannels: [AppID: [String: APNSChannel]] = [:]
    var outbox = InMemoryOutbox()

    public init(reservationLifetime: Double = 86400) { self.reservationLifetime = reservationLifetime }

    public func createRegistrationID(
        app: AppID, owner: String, maximumReserved: Int, lifetime: Double?, now: Timestamp
    ) throws(StoreError)
        -> RegistrationID
    {
        reserved[app] = reserved[app]?.filter { now < $0.value.expiry }
        let held = reserved[app]?.values.count(where: { $0.owner == owner }) ?? 0
        if held >= maximumReserved { throw StoreError.tooManyReservations(maximumReserved) }
        let id = RegistrationID.random()
        reserved[app, default: [:]][id] = (now.adding(seconds: lifetime ?? reservationLifetime), owner)
        return id
    }

    public func registrationIDs(handle: String, app: AppID) throws(StoreError) -> [RegistrationID] {
        (registrations[app] ?? [:]).values.filter { $0.handle.value == handle }.map(\.id).sorted()
    }

    public func registrationIDs(handlePrefix: String, app: AppID) throws(StoreError) -> [RegistrationID] {
        (registrations[app] ?? [:]).values.filter { $0.handle.value.utf8.starts(with: handlePrefix.utf8) }.map(\.id).sorted()
    }

    public func upsert(_ registration: Registration, now: Timestamp, writer: WriterGuard?) throws(StoreError) {
        let app = registration.app
        if let writer {
            let held = (registrations[app] ?? [:]).values.contains { other in
                other.id != registration.id && !other.owner.isUser(writer.owner)
                    && (other.handle.value == writer.handle
                        || writer.handlePrefixes.contains { other.handle.value.utf8.starts(with: $0.utf8) })
            }
            if let refusal = writer.refusal(
                id: registration.id, idOwner: registrations[app]?[registration.id]?.owner, handleHeldByAnother: held)
            {
                throw refusal
            }
        }
        if registrations[app]?[registration.id] == nil {
            if let writer, writer.maximumRegistrations != nil {
                let tagged = (registrations[app] ?? [:]).values.count { $0.tags.contains { $0.rawValue == writer.ownTag } }
                if let refusal = writer.refusal(registrationsTagged: tagged) { throw refusal }
            }
            guard let reservation = reserved[app]?[registration.id], now < reservation.expiry else { throw .gone(registration.id) }
            if let refusal = writer?.refusal(id: registration.id, reservedBy: reservation.owner) { throw refusal }
            reserved[app]?[registration.id] = nil
        }
        registrations[app, default: [:]][registration.id] = registration
    }

    public func restore(_ registrations: [Registration], now: Timestamp) throws(StoreError) {
        for registration in registrations {
            reserved[registration.app]?[registration.id] = nil
            self.registrations[registration.app, default: [:]][registration.id] = registration
        }
    }

    /// The batches are kept aside as they come, and written together once the sequence has ended:
    /// other callers, served between batches, see none of them before then.
    public func importRegistrations<Batches: AsyncSequence<[Registration], Failure> & Sendable, Failure: Error>(
        _ batches: Batches, now: Timestamp
    ) async throws(RegistrationImportFailure<Failure>) -> Int {
        var pending: [Registration] = []
        do {
            for try await batch in batches { pending += batch }
        } catch {
            throw .batches(error)
        }
        do { try restore(pending, now: now) } catch { throw .store(error) }
        return pending.count
    }

    public func replace(_ registrations: [Registration], removing: [RegistrationID], app: AppID, now: Timestamp) throws(StoreError) {
        try restore(registrations, now: now)
        for id in removing { _ = try delete(id: id, app: app) }
    }

    public func write(_ write: HubWrite, now: Timestamp) throws(StoreError) {
        let app = write.app
        for id in write.expected.keys {
            if let refusal = write.refusal(id: id, stored: registrations[app]?[id]) { throw refusal }
        }
        for registration in write.registrations where registrations[app]?[registration.id] == nil {
            if let reservation = reserved[app]?[registration.id], now < reservation.expiry,
                let refusal = write.refusal(id: registration.id, reservedBy: reservation.owner)
            {
                throw refusal
            }
        }
        try replace(write.registrations, removing: write.removing, app: app, now: now)
    }

    public func registration(id: RegistrationID, app: AppID) throws(StoreError) -> Registration? { registrations[app]?[id] }

    public func registrationCount(app: AppID, upTo limit: Int) throws(StoreError) -> Int {
        min(limit, registrations[app]?.count ?? 0)
    }

    public func delete(id: RegistrationID, app: AppID) throws(StoreError) -> Bool {
        reserved[app]?[id] = nil
        return registrations[app]?.removeValue(forKey: id) != nil
    }

    public nonisolated func registrations(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, batchSize: Int, now: Timestamp,
        after: RegistrationID?
    ) -> AsyncThrowingStream<[Registration], any Error> {
        AsyncThrowingStream { continuation in
            // The stream's producer: it ends after the last batch, or when the reader stops or
            // drops the stream (`onTermination` below cancels it).
            let task = Task {
                let all = await self.snapshot(app: app).filter { registration in
                    after.map { registration.id > $0 } ?? true
                }.filter {
                    platforms.contains($0.platform) && !$0.isExpired(at: now) && (expression?.matches($0.tags) ?? true)
                }
                for start in stride(from: 0, to: all.count, by: max(1, batchSize)) {
                    // A reader that stopped (a dry run's sample) wants no more batches.
                    if case .terminated = continuation.yield(Array(all[start..<min(start + batchSize, all.count)])) { return }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public nonisolated func deliveryTargets(
        selecting selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, pageSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[DispatchTarget], any Error> {
        let cursor = PageCursor()
        let size = max(1, pageSize)
        return AsyncThrowingStream(unfolding: {
            guard let after = cursor.position else { return nil }
            let page = await self.snapshot(app: app).lazy.filter { registration in
                (after.map { registration.id > $0 } ?? true) && platforms.contains(registration.platform)
                    && !registration.isExpired(at: now) && selector.admits(registration)
            }.prefix(size).map { DispatchTarget(registrationID: $0.id, handle: $0.handle) }
            cursor.advance(past: page.last?.registrationID, full: page.count == size)
            return page.isEmpty ? nil : Array(page)
        })
    }

    /// The registrations of `app` by id.
    func registrations(app: AppID) -> [RegistrationID: Registration] { registrations[app] ?? [:] }

    func snapshot(app: AppID) -> [Registration] { (registrations[app] ?? [:]).values.sorted { $0.id < $1.id } }

    public func apply(_ changes: [StoredHandleChange], app: AppID, now: Timestamp, events: HandleChangeEvents) throws(StoreError) {
        let rows = changes.flatMap { change in
            registrations[app]?[change.registrationID].map { events.rows(for: change, of: $0, now: now) } ?? []
        }
        // As the SQL stores' table refuses it, failing the whole transaction.
        if let refusal = OutboxRecordRow.refusal(rows) { throw refusal }
        outbox.appendRows(rows, notificationID: events.notificationID, page: 0, app: app)
        for change in changes {
            guard var registration = registrations[app]?[change.registrationID] else { continue }
            switch change.change {
            case .remove:
                registrations[app]?[change.registrationID] = nil
                removalLog[app, default: []].append(
                    HandleRemoval(
                        registrationID: registration.id, platform: registration.platform, handle: registration.handle.masked,
                        outcome: change.outcome, reason: change.reason, removedAt: now))
            case .replace(let handle):
                registration.handle = DeviceHandle(uncheckedPlatform: registration.platform, value: handle)
                registrations[app]?[change.registrationID] = registration
            }
        }
    }

    public func removals(app: AppID, limit: Int) throws(StoreError) -> [HandleRemoval] {
        Array((removalLog[app] ?? []).reversed().prefix(limit))
    }

    public func storeSecureMessage(_ message: SecureMessage) throws(StoreError) {
        secureMessages[message.app, default: [:]][message.id] = message
    }

    public func readSecureMessage(id: String, app: AppID, recipient: String, now: Timestamp) throws(StoreError) -> SecureMessage? {
        guard let message = secureMessages[app]?[id], message.recipient == recipient, now < message.expiresAt else { return nil }
        secureMessages[app]?[id]?.read = true
        return message
    }
}

extension InMemoryRegistrationStore: LiveActivityStore {
    public func stamp(_ key: LiveActivityKey, _ send: LiveActivityStamping) throws(StoreError) -> LiveActivityRecord {
        let record = try LiveActivityRecord.stamping(liveActivities[key], key: key, send: send).get()
        liveActivities[key] = record
        return record
    }

    public func activity(_ key: LiveActivityKey) throws(StoreError) -> LiveActivityRecord? { liveActivities[key] }

    /// Live Activities not stamped since `time` (an activity lives 12 hours at most), at most 100:
    /// pruned with the notifications that stamped them.
    func pruneActivities(stampedBefore time: Timestamp) -> Int {
        let old = liveActivities.filter { $0.value.updatedAt < time }.keys.prefix(100)
        for key in old { liveActivities[key] = nil }
        return old.count
    }

    public func activities(app: AppID, owner: RegistrationOwner?, limit: Int) throws(StoreError) -> [LiveActivityRecord] {
        Array(
            liveActivities.values.filter { $0.key.app == app && (owner == nil || $0.key.owner == owner) }
                .sorted { ($0.updatedAt, $0.key.name) > ($1.updatedAt, $1.key.name) }.prefix(limit))
    }

    public func retireTokens(of key: LiveActivityKey, ids: [RegistrationID]) throws(StoreError) -> Int {
        let selector = key.updateTokens
        let retired = ids.filter { registrations[key.app]?[$0].map(selector.admits) ?? false }
        for id in retired { registrations[key.app]?[id] = nil }
        return retired.count
    }

    public func channels(app: AppID) throws(StoreError) -> [APNSChannel] {
        (apnsChannels[app] ?? [:]).values.sorted { $0.name < $1.name }
    }

    public func addChannel(_ channel: APNSChannel, maximum: Int) throws(StoreError) {
        let existing = apnsChannels[channel.app] ?? [:]
        if existing[channel.name] != nil { throw APNSChannel.nameTaken(channel.name) }
        if existing.count >= maximum { throw APNSChannel.limitReached(maximum) }
        apnsChannels[channel.app, default: [:]][channel.name] = channel
    }

    public func removeChannel(app: AppID, name: String) throws(StoreError) -> Bool {
        apnsChannels[app]?.removeValue(forKey: name) != nil
    }
}
