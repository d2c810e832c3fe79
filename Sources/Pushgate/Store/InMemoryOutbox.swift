/// The outbox as a value: the notifications, their leased pages and counts, and every transition
/// of ``OutboxStore`` as a mutating method. ``InMemoryRegistrationStore`` keeps one; the walk of
/// an audience comes from the registrations it holds (`audience`).
public struct InMemoryOutbox: Sendable {
    struct Page: Sendable {
        var after: RegistrationID?
        var last: RegistrationID
        var lease: OutboxLease?
        var done = false
        /// A retry page's own targets (its range is not walked).
        var targets: [DispatchTarget]? = nil
        var attempt = 0
        var claims = 1
        /// Targets answered while the page was on the wire (kept until the page is done).
        var answered: [OutboxAnswers.Entry] = []
    }

    /// The owner of a retry page's lease until it is due: nobody.
    static let nobody = ""

    struct Entry: Sendable {
        var notification: OutboxNotification
        var record: NotificationRecord
        var lease: OutboxLease?
        var cursor: RegistrationID?
        var exhausted = false
        var pages: [Page] = []
        /// The numbers of the pages not yet done, in order: what claims, parking and leases look
        /// at (a few in flight and the retries), not every page of a long audience.
        var open: [Int] = []
        var failures: [RegistrationID: TargetResult] = [:]
        /// Parked (only retries not yet due are left): not taken before this.
        var parkedUntil: Timestamp?
        /// Enqueued without a lease (an asynchronous send): other instances may help deliver it.
        var shared = false

        mutating func renew(owner: String, until: Timestamp) {
            guard record.endedAt == nil else { return }
            if lease?.owner == owner { lease?.until = until }
            for number in open where pages[number].lease?.owner == owner { pages[number].lease?.until = until }
        }

        mutating func release(owner: String) {
            guard record.endedAt == nil else { return }
            if lease?.owner == owner { lease = nil }
            for number in open where pages[number].lease?.owner == owner { pages[number].lease = nil }
        }
    }

    struct Key: Hashable, Sendable {
        var app: AppID
        var id: String
    }

    private var entries: [Key: Entry] = [:]
    /// Rows written with pages' records, per app, in order.
    var rows: [AppID: [StoredOutboxRow]] = [:]
    private var rowSequence: Int64 = 0
    /// Webhook events' delivery, by row sequence (``WebhookEventStore``).
    var webhookStates: [Int64: WebhookRowState] = [:]

    /// Changes an entry where it is stored (no copy of its pages).
    private mutating func modify<T>(_ key: Key, _ body: (inout Entry) -> T) -> T? {
        guard let index = entries.index(forKey: key) else { return nil }
        return body(&entries.values[index])
    }

    public init() {}

    /// The delivery targets of an audience after a registration id, in id order, at most `limit`.
    public typealias Audience = (_ notification: OutboxNotification, _ after: RegistrationID?, _ limit: Int) -> [DispatchTarget]

    @discardableResult
    public mutating func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) throws(StoreError) -> OutboxEnqueued {
        let key = Key(app: notification.app, id: notification.id)
        guard entries[key] == nil else { throw StoreError(.storage, "notification \(notification.id) exists already") }
        if let idempotency = notification.idempotencyKey,
            let holder = idempotentNotification(key: idempotency, app: notification.app, sender: notification.sender)
        {
            return .existing(holder)
        }
        if notification.initialState == .scheduled, notification.maximumScheduledPerSender != nil {
            let waiting = entries.values.count {
                $0.notification.app == notification.app && $0.notification.sender == notification.sender
                    && $0.record.state == .scheduled && $0.record.endedAt == nil
            }
            if let refusal = notification.refusal(scheduledWaiting: waiting) { throw refusal }
        }
        let record = NotificationRecord(
            id: notification.id, app: notification.app, sender: notification.sender,
            state: lease == nil ? notification.initialState : .processing, selection: notification.selection,
            audience: notification.audience.description, secureID: notification.secureID, enqueuedAt: notification.enqueuedAt,
            deliverAt: notification.deliverAt, startedAt: lease == nil ? nil : notification.enqueuedAt, endedAt: nil, counts: [:],
            cancelRequested: false)
        entries[key] = Entry(notification: notification, record: record, lease: lease, shared: lease == nil)
        return .stored
    }

    public func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) -> OutboxKeyHolder? {
        entries.values.first { entry in
            entry.notification.app == app && entry.notification.sender == sender && entry.notification.idempotencyKey?.key == key.key
                && entry.notification.enqueuedAt >= key.storedSince
        }.map { OutboxKeyHolder(notificationID: $0.notification.id, fingerprint: $0.notification.idempotencyKey?.fingerprint ?? "") }
    }

    public func takeRunningNotification(app: AppID, owner: String, now: Timestamp) -> OutboxNotification? {
        entries.values.filter { entry in
            entry.notification.app == app && entry.shared && entry.record.endedAt == nil && !entry.exhausted
                && !entry.record.cancelRequested && (entry.lease.map { $0.owner != owner && $0.until > now } ?? false)
        }.min { $0.record.deliverAt < $1.record.deliverAt }?.notification
    }

    public mutating func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) -> OutboxTakeover? {
        let due = entries.filter { entry in
            entry.key.app == app && entry.value.record.endedAt == nil
                && (entry.value.record.deliverAt <= now || entry.value.record.cancelRequested)
                && (entry.value.lease.map { $0.until <= now } ?? true) && (entry.value.parkedUntil.map { $0 <= now } ?? true)
        }
        guard let key = due.min(by: { $0.value.record.deliverAt < $1.value.record.deliverAt })?.key else { return nil }
        return modify(key) { entry in
            let expired = entry.lease != nil
            entry.lease = lease
            entry.parkedUntil = nil
            entry.record.state = .processing
            if entry.record.startedAt == nil { entry.record.startedAt = now }
            return OutboxTakeover(notification: entry.notification, leaseExpired: expired)
        }
    }

    /// `current` gives a retry page's target as it is now (its registration's handle), or nil when
    /// the registration is gone; a retry page of an audience that is no walk of registrations (a
    /// topic, direct handles) keeps its targets as they were sent.
    public mutating func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool = false,
        current: (DispatchTarget) -> DispatchTarget?, audience: Audience
    ) -> OutboxClaim {
        let size = max(1, pageSize)
        return modify(Key(app: app, id: notificationID)) { entry -> OutboxClaim in
            guard entry.record.endedAt == nil else { return .lost }
            if helping {
                // Helping: while a live holder that is not the claimer has it, and it is shared.
                guard entry.shared, let holder = entry.lease, holder.owner != lease.owner, holder.until > now else { return .lost }
            } else {
                guard entry.lease?.owner == lease.owner else { return .lost }
            }
            if let number = entry.open.first(where: { entry.pages[$0].lease.map { $0.until <= now } ?? true }) {
                entry.pages[number].lease = lease
                entry.pages[number].claims += 1
                let page = entry.pages[number]
                let notification = entry.notification
                let walked =
                    page.targets.map { $0.compactMap { $0.isRegistration ? current($0) : $0 } }
                    ?? OutboxPage.targets(after: page.after, through: page.last, size: size) { after, limit in
                        audience(notification, after, limit)
                    }
                let (targets, answered) = OutboxAnswers.skipping(page.answered, in: walked)
                return .page(
                    OutboxPage(
                        number: number, targets: targets, reclaimed: page.claims > 1, cancelled: entry.record.cancelRequested,
                        attempt: page.attempt, answered: answered))
            }
            if entry.exhausted { return .exhausted }
            let targets = audience(entry.notification, entry.cursor, size)
            guard let last = targets.last?.registrationID else {
                entry.exhausted = true
                entry.record.audienceExhausted = true
                return .exhausted
            }
            entry.open.append(entry.pages.count)
            entry.pages.append(Page(after: entry.cursor, last: last, lease: lease))
            entry.cursor = last
            entry.exhausted = targets.count < size
            entry.record.targetsClaimed += targets.count
            entry.record.audienceExhausted = entry.exhausted
            // The audience ends with this page: the last one when no other page is open.
            return .page(
                OutboxPage(
                    number: entry.pages.count - 1, targets: targets, reclaimed: false, cancelled: entry.record.cancelRequested,
                    last: entry.exhausted && entry.open.count == 1))
        } ?? .lost
    }

    public mutating func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?, rows written: [OutboxRecordRow] = []
    ) -> Bool {
        let recorded =
            modify(Key(app: app, id: notificationID)) { entry -> Bool in
                guard entry.pages.indices.contains(number), !entry.pages[number].done else { return false }
                entry.pages[number].done = true
                entry.pages[number].answered = []
                entry.open.removeAll { $0 == number }
                if let retry, let last = retry.targets.last {
                    entry.open.append(entry.pages.count)
                    entry.pages.append(
                        Page(
                            after: nil, last: last.registrationID,
                            lease: OutboxLease(
                                owner: Self.nobody, until: entry.record.cancelRequested ? Timestamp(secondsSinceEpoch: 0) : retry.due),
                            targets: retry.targets, attempt: retry.attempt, claims: 0))
                }
                for (platform, outcomes) in counts {
                    for (outcome, count) in outcomes where count > 0 {
                        entry.record.counts[platform, default: [:]][outcome, default: 0] += count
                    }
                }
                for failure in failures { entry.failures[failure.registrationID] = failure }
                return true
            } ?? false
        if recorded { appendRows(written, notificationID: notificationID, page: number, app: app) }
        return recorded
    }

    /// Rows written with a record (or on their own: ``OutboxRowLog/appendRows(_:notificationID:page:app:)``).
    public mutating func appendRows(_ written: [OutboxRecordRow], notificationID: String, page: Int, app: AppID) {
        for row in written {
            rowSequence += 1
            rows[app, default: []].append(StoredOutboxRow(sequence: rowSequence, notificationID: notificationID, page: page, row: row))
        }
    }

    public func recordedRows(app: AppID, after sequence: Int64, limit: Int) -> [StoredOutboxRow] {
        Array((rows[app] ?? []).lazy.filter { $0.sequence > sequence }.prefix(max(0, limit)))
    }

    public mutating func removeRecordedRows(app: AppID, through sequence: Int64) -> Int {
        let before = rows[app]?.count ?? 0
        rows[app]?.removeAll { $0.sequence <= sequence }
        webhookStates = webhookStates.filter { $0.key > sequence }
        return before - (rows[app]?.count ?? 0)
    }

    public mutating func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) {
        _ = modify(Key(app: app, id: notificationID)) { entry in
            guard entry.record.endedAt == nil else { return }
            for page in answers where entry.pages.indices.contains(page.page) {
                // Listed whatever the page's state (the failures are final); kept for a page not yet done.
                for failure in page.failures { entry.failures[failure.registrationID] = failure }
                if !entry.pages[page.page].done { entry.pages[page.page].answered += page.entries }
            }
        }
    }

    public mutating func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) -> NotificationRecord? {
        modify(Key(app: app, id: notificationID)) { entry -> NotificationRecord? in
            if entry.record.state.isFinal { return entry.record }
            guard entry.exhausted, entry.lease?.owner == owner, entry.open.isEmpty else { return nil }
            entry.record.state = NotificationRecord.finalState(
                counts: entry.record.counts, selection: entry.record.selection, cancelled: entry.record.cancelRequested)
            entry.record.endedAt = now
            entry.lease = nil
            entry.pages = []
            return entry.record
        } ?? nil
    }

    public mutating func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) -> Timestamp? {
        modify(Key(app: app, id: notificationID)) { entry -> Timestamp? in
            guard entry.record.endedAt == nil, entry.exhausted, entry.lease?.owner == owner, !entry.record.cancelRequested else {
                return nil
            }
            let open = entry.open.map { entry.pages[$0] }
            guard !open.isEmpty, open.allSatisfy({ $0.lease?.owner == Self.nobody && $0.lease!.until > now }),
                let due = open.compactMap({ $0.lease?.until }).min()
            else { return nil }
            entry.lease = nil
            entry.parkedUntil = due
            return due
        } ?? nil
    }

    public mutating func renewLeases(owner: String, until: Timestamp) {
        for index in entries.indices {
            entries.values[index].renew(owner: owner, until: until)
        }
    }

    public mutating func releaseLeases(owner: String, notificationID: String?) {
        for index in entries.indices where notificationID.map({ $0 == entries.keys[index].id }) ?? true {
            entries.values[index].release(owner: owner)
        }
    }

    public mutating func requestCancel(notificationID: String, app: AppID, now: Timestamp) -> NotificationRecord? {
        modify(Key(app: app, id: notificationID)) { entry -> NotificationRecord in
            let before = entry.record
            guard !before.state.isFinal else { return before }
            entry.record.cancelRequested = true
            // Parked work is due at once: its targets are counted Cancelled.
            entry.parkedUntil = nil
            for number in entry.open where entry.pages[number].lease?.owner == Self.nobody {
                entry.pages[number].lease?.until = Timestamp(secondsSinceEpoch: 0)
            }
            return before
        }
    }

    public func record(id: String, app: AppID) -> NotificationRecord? { entries[Key(app: app, id: id)]?.record }

    /// Where the walk of a notification's audience stands: the last registration id paged, and
    /// whether the audience is exhausted; nil for an unknown or ended notification.
    public func walk(of id: String, app: AppID) -> (notification: OutboxNotification, cursor: RegistrationID?, exhausted: Bool)? {
        guard let entry = entries[Key(app: app, id: id)], entry.record.endedAt == nil else { return nil }
        return (entry.notification, entry.cursor, entry.exhausted)
    }

    /// Forgets a notification.
    public mutating func remove(id: String, app: AppID) { entries[Key(app: app, id: id)] = nil }

    public func failedTargets(notificationID: String, app: AppID, after: RegistrationID?, limit: Int) -> [TargetResult] {
        guard let failures = entries[Key(app: app, id: notificationID)]?.failures else { return [] }
        return Array(
            failures.values.filter { failure in after.map { failure.registrationID > $0 } ?? true }
                .sorted { $0.registrationID < $1.registrationID }.prefix(max(0, limit)))
    }

    public func records(app: AppID, sender: String?, limit: Int) -> [NotificationRecord] {
        Array(
            entries.values.map(\.record).filter { $0.app == app && (sender == nil || $0.sender == sender) }
                .sorted { ($0.enqueuedAt, $1.id) > ($1.enqueuedAt, $0.id) }.prefix(max(0, limit)))
    }

    public mutating func prune(endedBefore: Timestamp) -> Int {
        let old = entries.filter { $0.value.record.endedAt.map { $0 < endedBefore } ?? false }.keys.prefix(100)
        for key in old { entries[key] = nil }
        return old.count
    }

    public func depth(now: Timestamp) -> OutboxDepth {
        let pending = entries.values.filter { $0.record.endedAt == nil }
        // Parked (only retries of throttled targets left, not yet due) is not due.
        let ready = pending.filter { $0.record.deliverAt <= now && ($0.parkedUntil.map { $0 <= now } ?? true) }
        let due = pending.filter { $0.record.cancelRequested }.count + ready.filter { !$0.record.cancelRequested }.count
        return OutboxDepth(pending: pending.count, due: due, oldestDue: ready.map(\.record.deliverAt).min())
    }
}

extension InMemoryRegistrationStore: OutboxStore {
    @discardableResult
    public func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) throws(StoreError) -> OutboxEnqueued {
        try outbox.enqueue(notification, lease: lease)
    }

    public func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) -> OutboxKeyHolder? {
        outbox.idempotentNotification(key: key, app: app, sender: sender)
    }

    public func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) -> OutboxTakeover? {
        outbox.takeDueNotification(app: app, lease: lease, now: now)
    }

    public func takeRunningNotification(app: AppID, owner: String, now: Timestamp) -> OutboxNotification? {
        outbox.takeRunningNotification(app: app, owner: owner, now: now)
    }

    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) -> OutboxClaim {
        let snapshot = snapshot(app: app)
        let stored = registrations(app: app)
        return outbox.claimPage(
            notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now, helping: helping,
            current: { target in
                guard let registration = stored[target.registrationID], !registration.isExpired(at: now) else { return nil }
                return DispatchTarget(registrationID: registration.id, handle: registration.handle)
            }
        ) {
            notification, after, limit in
            notification.audience.targets(after: after, limit: limit) { selector, after, limit in
                snapshot.lazy.filter { registration in
                    (after.map { registration.id > $0 } ?? true) && notification.selection.contains(registration.platform)
                        && !registration.isExpired(at: now) && selector.admits(registration)
                }.prefix(limit).map { DispatchTarget(registrationID: $0.id, handle: $0.handle) }
            }
        }
    }

    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?, rows: [OutboxRecordRow]
    ) throws(StoreError) -> Bool {
        // As the SQL stores' table refuses it, failing the whole record.
        if let refusal = OutboxRecordRow.refusal(rows) { throw refusal }
        return outbox.completePage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: retry, rows: rows)
    }

    public func recordedRows(app: AppID, after sequence: Int64, limit: Int) -> [StoredOutboxRow] {
        outbox.recordedRows(app: app, after: sequence, limit: limit)
    }

    @discardableResult
    public func removeRecordedRows(app: AppID, through sequence: Int64) -> Int { outbox.removeRecordedRows(app: app, through: sequence) }

    public func appendRows(_ rows: [OutboxRecordRow], notificationID: String, page: Int, app: AppID) throws(StoreError) {
        if let refusal = OutboxRecordRow.refusal(rows) { throw refusal }
        outbox.appendRows(rows, notificationID: notificationID, page: page, app: app)
    }

    public func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) {
        outbox.recordAnswers(notificationID: notificationID, app: app, answers: answers)
    }

    public func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) -> Timestamp? {
        outbox.parkNotification(notificationID: notificationID, app: app, owner: owner, now: now)
    }

    public func finish(
        notificationID: String, app: AppID, owner: String, now: Timestamp, completion: CompletionEvents
    ) throws(StoreError) -> NotificationRecord? {
        let endedBefore = outbox.record(id: notificationID, app: app)?.endedAt != nil
        let record = outbox.finish(notificationID: notificationID, app: app, owner: owner, now: now)
        if let record, !endedBefore {
            let rows = completion.rows(for: record, now: now)
            // As the SQL stores' table refuses it (here after the end: memory has no rollback).
            if let refusal = OutboxRecordRow.refusal(rows) { throw refusal }
            outbox.appendRows(rows, notificationID: notificationID, page: 0, app: app)
        }
        return record
    }

    public func renewLeases(owner: String, until: Timestamp) { outbox.renewLeases(owner: owner, until: until) }

    public func releaseLeases(owner: String, notificationID: String?) {
        outbox.releaseLeases(owner: owner, notificationID: notificationID)
    }

    public func requestCancel(notificationID: String, app: AppID, now: Timestamp) -> NotificationRecord? {
        outbox.requestCancel(notificationID: notificationID, app: app, now: now)
    }

    public func notificationRecord(id: String, app: AppID) -> NotificationRecord? { outbox.record(id: id, app: app) }

    public func failedTargets(notificationID: String, app: AppID, after: RegistrationID?, limit: Int) -> [TargetResult] {
        outbox.failedTargets(notificationID: notificationID, app: app, after: after, limit: limit)
    }

    public func notificationRecords(app: AppID, sender: String?, limit: Int) -> [NotificationRecord] {
        outbox.records(app: app, sender: sender, limit: limit)
    }

    public func pruneNotifications(endedBefore: Timestamp) -> Int {
        outbox.prune(endedBefore: endedBefore) + pruneActivities(stampedBefore: endedBefore)
    }

    public func outboxDepth(now: Timestamp) -> OutboxDepth { outbox.depth(now: now) }
}
