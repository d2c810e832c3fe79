/// A stored webhook event as its poster sees it: the row (kind `webhook:<receiver>`, the event's
/// JSON body) and its delivery state.
public struct WebhookDelivery: Sendable, Hashable {
    public var row: StoredOutboxRow
    /// Failed POSTs so far.
    public var attempts: Int
    /// When its first POST failed (retries stop ``WebhooksConfiguration/retryForSeconds`` after it).
    public var firstFailedAt: Timestamp?
    /// When it was parked (retries ran out); nil while it is pending or posted.
    public var parkedAt: Timestamp?
    /// What the last failed POST got.
    public var lastError: String?

    public init(
        row: StoredOutboxRow, attempts: Int = 0, firstFailedAt: Timestamp? = nil, parkedAt: Timestamp? = nil, lastError: String? = nil
    ) {
        self.row = row
        self.attempts = attempts
        self.firstFailedAt = firstFailedAt
        self.parkedAt = parkedAt
        self.lastError = lastError
    }

    /// The receiver it is for (from its row's kind).
    public var receiver: String { String(row.row.kind.dropFirst(WebhookSubscriptions.rowKindPrefix.count)) }
}

/// How many webhook events wait: not yet posted (due or retrying), and parked.
public struct WebhookEventCounts: Sendable, Hashable {
    public var pending: Int
    public var parked: Int

    public init(pending: Int, parked: Int) {
        self.pending = pending
        self.parked = parked
    }
}

/// The delivery state of webhook events (outbox rows of kind `webhook:<receiver>`): claimed
/// under a lease by one poster at a time (several instances on one database never post an event
/// at once), posted, retried, parked, kept a while and deleted.
public protocol WebhookEventStore: Sendable {
    /// Claims up to `limit` of `receiver`'s events of `app` that are due (not posted, not parked,
    /// their retry time passed, no live lease), oldest first, leasing them to `owner` until `until`.
    func claimWebhookEvents(
        app: AppID, receiver: String, owner: String, until: Timestamp, now: Timestamp, limit: Int
    ) async throws(StoreError) -> [WebhookDelivery]
    /// Marks events posted (their lease ends); they are deleted once older than the keep time.
    func webhookEventsPosted(app: AppID, sequences: [Int64], now: Timestamp) async throws(StoreError)
    /// Records a failed POST of events: retried at `retryAt`, or parked when it is nil.
    func webhookEventsFailed(app: AppID, sequences: [Int64], error: String, retryAt: Timestamp?, now: Timestamp) async throws(StoreError)
    /// Parked events of `app` after `sequence`, oldest first.
    func parkedWebhookEvents(app: AppID, after sequence: Int64, limit: Int) async throws(StoreError) -> [WebhookDelivery]
    /// Makes parked events of `app` due again (those of `sequences`, or all when nil) with fresh
    /// retries; how many.
    func retryParkedWebhookEvents(app: AppID, sequences: [Int64]?, now: Timestamp) async throws(StoreError) -> Int
    /// Deletes events posted before `postedBefore`, at most `limit`; how many.
    func pruneWebhookEvents(postedBefore: Timestamp, limit: Int) async throws(StoreError) -> Int
    /// How many events of `app` wait.
    func webhookEventCounts(app: AppID) async throws(StoreError) -> WebhookEventCounts
}
