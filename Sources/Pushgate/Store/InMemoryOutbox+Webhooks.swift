/// A webhook event's delivery in memory, as the SQL stores' columns of `outbox_rows` keep it.
struct WebhookRowState: Sendable, Hashable {
    var dueAt = Timestamp(secondsSinceEpoch: 0)
    var attempts = 0
    var firstFailedAt: Timestamp?
    var leaseOwner: String?
    var leaseExpires = Timestamp(secondsSinceEpoch: 0)
    var parkedAt: Timestamp?
    var postedAt: Timestamp?
    var lastError: String?
}

/// ``WebhookEventStore`` in memory: the same rules as the SQL stores' statements.
extension InMemoryOutbox {
    private func delivery(_ row: StoredOutboxRow) -> WebhookDelivery {
        let state = webhookStates[row.sequence] ?? WebhookRowState()
        return WebhookDelivery(
            row: row, attempts: state.attempts, firstFailedAt: state.firstFailedAt, parkedAt: state.parkedAt, lastError: state.lastError)
    }

    public mutating func claimWebhookEvents(
        app: AppID, receiver: String, owner: String, until: Timestamp, now: Timestamp, limit: Int
    ) -> [WebhookDelivery] {
        let kind = WebhookSubscriptions.rowKind(receiver: receiver)
        var claimed: [WebhookDelivery] = []
        for row in rows[app] ?? [] where row.row.kind == kind {
            guard claimed.count < limit else { break }
            var state = webhookStates[row.sequence] ?? WebhookRowState()
            guard state.postedAt == nil, state.parkedAt == nil, state.dueAt <= now, state.leaseExpires <= now else { continue }
            state.leaseOwner = owner
            state.leaseExpires = until
            webhookStates[row.sequence] = state
            claimed.append(delivery(row))
        }
        return claimed
    }

    public mutating func webhookEventsPosted(app: AppID, sequences: [Int64], now: Timestamp) {
        for sequence in sequences where rows[app]?.contains(where: { $0.sequence == sequence }) == true {
            webhookStates[sequence, default: WebhookRowState()].postedAt = now
            webhookStates[sequence]?.leaseOwner = nil
            webhookStates[sequence]?.leaseExpires = Timestamp(secondsSinceEpoch: 0)
        }
    }

    public mutating func webhookEventsFailed(app: AppID, sequences: [Int64], error: String, retryAt: Timestamp?, now: Timestamp) {
        for sequence in sequences where rows[app]?.contains(where: { $0.sequence == sequence }) == true {
            var state = webhookStates[sequence] ?? WebhookRowState()
            state.attempts += 1
            state.firstFailedAt = state.firstFailedAt ?? now
            state.lastError = String(error.prefix(500))
            state.leaseOwner = nil
            state.leaseExpires = Timestamp(secondsSinceEpoch: 0)
            state.dueAt = retryAt ?? now
            state.parkedAt = retryAt == nil ? now : nil
            webhookStates[sequence] = state
        }
    }

    public func parkedWebhookEvents(app: AppID, after sequence: Int64, limit: Int) -> [WebhookDelivery] {
        Array(
            (rows[app] ?? []).lazy.filter {
                $0.sequence > sequence && self.webhookStates[$0.sequence]?.parkedAt != nil
                    && self.webhookStates[$0.sequence]?.postedAt == nil
            }.prefix(max(0, limit)).map { self.delivery($0) })
    }

    public mutating func retryParkedWebhookEvents(app: AppID, sequences: [Int64]?, now: Timestamp) -> Int {
        var count = 0
        for row in rows[app] ?? [] where sequences?.contains(row.sequence) ?? true {
            guard var state = webhookStates[row.sequence], state.parkedAt != nil, state.postedAt == nil else { continue }
            state.parkedAt = nil
            state.attempts = 0
            state.firstFailedAt = nil
            state.dueAt = now
            webhookStates[row.sequence] = state
            count += 1
        }
        return count
    }

    public mutating func pruneWebhookEvents(postedBefore: Timestamp, limit: Int) -> Int {
        let old = Set(webhookStates.filter { $0.value.postedAt.map { $0 < postedBefore } ?? false }.keys.sorted().prefix(max(0, limit)))
        guard !old.isEmpty else { return 0 }
        for app in rows.keys { rows[app]?.removeAll { old.contains($0.sequence) } }
        for sequence in old { webhookStates[sequence] = nil }
        return old.count
    }

    public func webhookEventCounts(app: AppID) -> WebhookEventCounts {
        var counts = WebhookEventCounts(pending: 0, parked: 0)
        for row in rows[app] ?? [] where row.row.kind.hasPrefix(WebhookSubscriptions.rowKindPrefix) {
            let state = webhookStates[row.sequence] ?? WebhookRowState()
            guard state.postedAt == nil else { continue }
            if state.parkedAt == nil { counts.pending += 1 } else { counts.parked += 1 }
        }
        return counts
    }
}

extension InMemoryRegistrationStore: WebhookEventStore {
    public func claimWebhookEvents(
        app: AppID, receiver: String, owner: String, until: Timestamp, now: Timestamp, limit: Int
    ) -> [WebhookDelivery] {
        outbox.claimWebhookEvents(app: app, receiver: receiver, owner: owner, until: until, now: now, limit: limit)
    }

    public func webhookEventsPosted(app: AppID, sequences: [Int64], now: Timestamp) {
        outbox.webhookEventsPosted(app: app, sequences: sequences, now: now)
    }

    public func webhookEventsFailed(app: AppID, sequences: [Int64], error: String, retryAt: Timestamp?, now: Timestamp) {
        outbox.webhookEventsFailed(app: app, sequences: sequences, error: error, retryAt: retryAt, now: now)
    }

    public func parkedWebhookEvents(app: AppID, after sequence: Int64, limit: Int) -> [WebhookDelivery] {
        outbox.parkedWebhookEvents(app: app, after: sequence, limit: limit)
    }

    public func retryParkedWebhookEvents(app: AppID, sequences: [Int64]?, now: Timestamp) -> Int {
        outbox.retryParkedWebhookEvents(app: app, sequences: sequences, now: now)
    }

    public func pruneWebhookEvents(postedBefore: Timestamp, limit: Int) -> Int {
        outbox.pruneWebhookEvents(postedBefore: postedBefore, limit: limit)
    }

    public func webhookEventCounts(app: AppID) -> WebhookEventCounts { outbox.webhookEventCounts(app: app) }
}
