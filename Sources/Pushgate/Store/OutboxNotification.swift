/// A notification as the outbox keeps it: what to send, to whom, and when.
public struct OutboxNotification: Sendable, Hashable {
    public var id: String
    public var app: AppID
    public var sender: String
    public var selection: PlatformSelection
    public var audience: Audience
    /// Rendered once, when the notification was accepted.
    public var payloads: [Platform: RenderedNotification]
    /// The message id of a secure send.
    public var secureID: String?
    public var enqueuedAt: Timestamp
    /// When to deliver; `enqueuedAt` for a send now.
    public var deliverAt: Timestamp
    /// Which registrations it reaches, and with what payload.
    public var delivery: NotificationDelivery
    /// The sender's `Idempotency-Key`, kept with it: a repeat is answered this notification.
    public var idempotencyKey: IdempotencyKey?
    /// For a scheduled notification: the most scheduled notifications its sender may have
    /// waiting for their time; the enqueue is refused past it (nil: no cap). Checked in the
    /// enqueue's transaction, after a repeated key is answered.
    public var maximumScheduledPerSender: Int?

    public init(
        id: String, app: AppID, sender: String, selection: PlatformSelection, audience: Audience,
        payloads: [Platform: RenderedNotification], secureID: String? = nil, enqueuedAt: Timestamp, deliverAt: Timestamp? = nil,
        delivery: NotificationDelivery = .allRegistrations, idempotencyKey: IdempotencyKey? = nil
    ) {
        self.idempotencyKey = idempotencyKey
        self.delivery = delivery
        self.id = id
        self.app = app
        self.sender = sender
        self.selection = selection
        self.audience = audience
        self.payloads = payloads
        self.secureID = secureID
        self.enqueuedAt = enqueuedAt
        self.deliverAt = deliverAt ?? enqueuedAt
    }

    /// The state it is stored in.
    public var initialState: NotificationState { deliverAt > enqueuedAt ? .scheduled : .enqueued }

    /// The refusal of storing it when its sender has `waiting` scheduled notifications (counted
    /// up to ``maximumScheduledPerSender``).
    public func refusal(scheduledWaiting waiting: Int) -> StoreError? {
        guard initialState == .scheduled, let maximum = maximumScheduledPerSender, waiting >= maximum else { return nil }
        return StoreError(
            .limitReached,
            "too many scheduled notifications: at most \(maximum) waiting per sender (limits.maxScheduledPerSender); cancel one or wait")
    }
}

/// A sender's `Idempotency-Key` for a send (the IETF idempotency-key draft): the key, and a
/// digest of the request it came with, so that the key's reuse for another request is told apart
/// from a repeat. Keys are per app and sender, and held for a window.
public struct IdempotencyKey: Sendable, Hashable {
    /// At most this many characters.
    public static let maximumLength = 255

    public var key: String
    /// A digest of the request (the same for a repeat of it), in the version this gateway writes.
    public var fingerprint: String
    /// The same request's digests in the other versions this gateway reads: a key stored by an
    /// instance that wrote another version still matches its repeat.
    public var otherVersions: [String]
    /// A notification stored before this no longer holds the key (the window is over).
    public var storedSince: Timestamp

    public init(key: String, fingerprint: String, otherVersions: [String] = [], storedSince: Timestamp) {
        self.key = key
        self.fingerprint = fingerprint
        self.otherVersions = otherVersions
        self.storedSince = storedSince
    }

    /// Whether a stored fingerprint, of any version, is this request's.
    public func matches(_ stored: String) -> Bool { stored == fingerprint || otherVersions.contains(stored) }
}

/// The notification that holds an idempotency key.
public struct OutboxKeyHolder: Sendable, Hashable {
    public var notificationID: String
    /// The digest of the request that stored it.
    public var fingerprint: String

    public init(notificationID: String, fingerprint: String) {
        self.notificationID = notificationID
        self.fingerprint = fingerprint
    }
}

/// What an enqueue did.
public enum OutboxEnqueued: Sendable, Hashable {
    /// The notification is stored.
    case stored
    /// Nothing was stored: this notification holds the idempotency key.
    case existing(OutboxKeyHolder)
}

/// What storing a synchronous send did
/// (``OutboxQueue/enqueue(_:lease:claimingFirstPageOf:now:)``).
public struct OutboxSynchronousStart: Sendable, Hashable {
    public var enqueued: OutboxEnqueued
    /// The first page's claim, made with the enqueue; nil when nothing was stored.
    public var firstClaim: OutboxClaim?

    public init(enqueued: OutboxEnqueued, firstClaim: OutboxClaim?) {
        self.enqueued = enqueued
        self.firstClaim = firstClaim
    }
}

/// Who holds work, and until when.
public struct OutboxLease: Sendable, Hashable {
    public var owner: String
    public var until: Timestamp

    public init(owner: String, until: Timestamp) {
        self.owner = owner
        self.until = until
    }
}

/// A due notification a driver took the lease of.
public struct OutboxTakeover: Sendable, Hashable {
    public var notification: OutboxNotification
    /// Another driver held it and its lease expired (it died or was stopped).
    public var leaseExpired: Bool

    public init(notification: OutboxNotification, leaseExpired: Bool) {
        self.notification = notification
        self.leaseExpired = leaseExpired
    }
}

/// A page of a notification's audience, leased to one driver.
public struct OutboxPage: Sendable, Hashable {
    public var number: Int
    public var targets: [DispatchTarget]
    /// The page was claimed before and its lease expired.
    public var reclaimed: Bool
    /// The notification is being cancelled: count these targets `Cancelled`, do not send.
    public var cancelled: Bool
    /// 0 for a page of the audience; n for the n-th retry of targets a service throttled.
    public var attempt: Int
    /// A page claimed again: the outcomes of its targets that an earlier claim's driver had
    /// answered and flushed (``OutboxStore/recordAnswers(notificationID:app:answers:)``). They are
    /// not in `targets` (they are not sent again) and count towards the page's record.
    public var answered: [Platform: [Outcome: Int]]
    /// Nothing is left to claim after this page: the audience ended with it and no other page is
    /// open. Its driver records it and finishes the notification in one transaction
    /// (``OutboxQueue/completeLastPage(notificationID:app:number:counts:failures:owner:now:)``)
    /// and claims nothing more. False when the store cannot tell (then the next claim says so).
    public var last: Bool

    public init(
        number: Int, targets: [DispatchTarget], reclaimed: Bool, cancelled: Bool, attempt: Int = 0,
        answered: [Platform: [Outcome: Int]] = [:], last: Bool = false
    ) {
        self.answered = answered
        self.last = last
        self.number = number
        self.targets = targets
        self.reclaimed = reclaimed
        self.cancelled = cancelled
        self.attempt = attempt
    }
}

/// What recording a notification's last page did
/// (``OutboxQueue/completeLastPage(notificationID:app:number:counts:failures:owner:now:)``).
public enum OutboxLastPageRecord: Sendable, Hashable {
    /// The page was done already (another driver recorded it): nothing was recorded.
    case recordedBefore
    /// The page is recorded; the notification is not finished (pages are open, or another
    /// driver holds it): the drive finishes or parks it as usual.
    case recorded
    /// The page is recorded and the notification finished: its record.
    case finished(NotificationRecord)
}

extension OutboxQueue {
    /// Stores, then claims the first page: two transactions. Stores that can do both in one (the
    /// SQL outbox) answer it themselves; the test kit's `FaultyStore` keeps them apart, so that a
    /// fault can fall between them.
    public func enqueue(
        _ notification: OutboxNotification, lease: OutboxLease, claimingFirstPageOf pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxSynchronousStart {
        let enqueued = try await enqueue(notification, lease: lease)
        guard case .stored = enqueued else { return OutboxSynchronousStart(enqueued: enqueued, firstClaim: nil) }
        let claim = try await claimPage(
            notificationID: notification.id, app: notification.app, lease: lease, pageSize: pageSize, now: now, helping: false)
        return OutboxSynchronousStart(enqueued: enqueued, firstClaim: claim)
    }

    /// Records the last page, then finishes: two transactions. Stores that can do both in one
    /// (the SQL outbox) answer it themselves.
    public func completeLastPage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], owner: String,
        now: Timestamp, rows: [OutboxRecordRow], completion: CompletionEvents
    ) async throws(StoreError) -> OutboxLastPageRecord {
        guard
            try await completePage(
                notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: nil, rows: rows)
        else { return .recordedBefore }
        return try await finish(notificationID: notificationID, app: app, owner: owner, now: now, completion: completion)
            .map(OutboxLastPageRecord.finished) ?? .recorded
    }

    /// Records the last page and finishes, no events written with the end.
    public func completeLastPage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], owner: String,
        now: Timestamp, rows: [OutboxRecordRow]
    ) async throws(StoreError) -> OutboxLastPageRecord {
        try await completeLastPage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, owner: owner, now: now,
            rows: rows, completion: .none)
    }

    /// Finishes, no events written with the end.
    public func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> NotificationRecord? {
        try await finish(notificationID: notificationID, app: app, owner: owner, now: now, completion: .none)
    }

    /// The next page for the lease holder.
    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxClaim {
        try await claimPage(notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now, helping: false)
    }

    /// Records a page's outcomes with no retry and no rows.
    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult]
    ) async throws(StoreError) -> Bool {
        try await completePage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: nil, rows: [])
    }

    /// Records a page's outcomes with no rows.
    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?
    ) async throws(StoreError) -> Bool {
        try await completePage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: retry, rows: [])
    }

    /// Records the last page with no rows.
    public func completeLastPage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult], owner: String,
        now: Timestamp
    ) async throws(StoreError) -> OutboxLastPageRecord {
        try await completeLastPage(
            notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, owner: owner, now: now, rows: [])
    }
}

/// Targets a push service throttled (FCM `QUOTA_EXCEEDED`, a 429) past what the in-place retry
/// waits: sent again later as a page of their own, at the delay the service asks for.
public struct OutboxRetry: Sendable, Hashable {
    public var targets: [DispatchTarget]
    /// Which retry this is: 1 for the first.
    public var attempt: Int
    /// When the page is due.
    public var due: Timestamp

    public init(targets: [DispatchTarget], attempt: Int, due: Timestamp) {
        self.targets = targets
        self.attempt = attempt
        self.due = due
    }

    /// The stored form of the targets: a line per target, `id TAB platform TAB handle` (handles
    /// hold neither tabs nor line breaks).
    public static func encode(_ targets: [DispatchTarget]) -> String {
        targets.map { "\($0.registrationID.rawValue)\t\($0.handle.platform.rawValue)\t\($0.handle.value)" }.joined(separator: "\n")
    }

    /// The targets back from ``encode(_:)``, of `kind` (their audience's, ``Audience/targetKind``);
    /// nil when the text is not its form.
    public static func decode(_ text: String, kind: DispatchTarget.Kind = .registration) -> [DispatchTarget]? {
        var targets: [DispatchTarget] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, let id = try? RegistrationID(String(fields[0])), let platform = Platform(rawValue: String(fields[1]))
            else { return nil }
            targets.append(
                DispatchTarget(registrationID: id, handle: DeviceHandle(uncheckedPlatform: platform, value: String(fields[2])), kind: kind))
        }
        return targets
    }

    /// The delay before retry `attempt` (1, 2, …): the service's `Retry-After` when longer, else
    /// `base` doubled per earlier attempt (Firebase: exponential backoff from at least a minute);
    /// never more than `limit`.
    public static func delay(attempt: Int, base: Double, retryAfter: Double?, limit: Double) -> Double {
        min(limit, max(retryAfter.flatMap { $0.isFinite ? $0 : nil } ?? 0, base * Double(1 << min(max(attempt - 1, 0), 20))))
    }
}

/// The final answers a driver got for targets of one page still on the wire.
public struct OutboxAnswers: Sendable, Hashable {
    public var page: Int
    /// One result per target answered for good: its outcome decided (not a throttled target that
    /// may be retried later, not one abandoned by shutdown).
    public var targets: [TargetResult]

    public init(page: Int, targets: [TargetResult]) {
        self.page = page
        self.targets = targets
    }

    /// One answered target as it is kept: which registration, on which platform, with what outcome.
    public struct Entry: Sendable, Hashable {
        public var registrationID: RegistrationID
        public var platform: Platform
        public var outcome: Outcome

        public init(registrationID: RegistrationID, platform: Platform, outcome: Outcome) {
            self.registrationID = registrationID
            self.platform = platform
            self.outcome = outcome
        }
    }

    public var entries: [Entry] { targets.map { Entry(registrationID: $0.registrationID, platform: $0.platform, outcome: $0.outcome) } }

    /// The failures among them (neither delivered nor cancelled): listed as soon as they are known.
    public var failures: [TargetResult] { targets.filter { !$0.outcome.isSuccess && $0.outcome != .cancelled } }

    /// The stored form of answered targets: a line per target, `id TAB platform TAB outcome`.
    public static func encode(_ entries: [Entry]) -> String {
        entries.map { "\($0.registrationID.rawValue)\t\($0.platform.rawValue)\t\($0.outcome.rawValue)" }.joined(separator: "\n")
    }

    /// The entries back from ``encode(_:)``; nil when the text is not its form.
    public static func decode(_ text: String) -> [Entry]? {
        var entries: [Entry] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 3, !fields[2].isEmpty, let id = try? RegistrationID(String(fields[0])),
                let platform = Platform(rawValue: String(fields[1]))
            else { return nil }
            entries.append(Entry(registrationID: id, platform: platform, outcome: Outcome(rawValue: String(fields[2]))))
        }
        return entries
    }

    /// A page's targets less those answered before (each registration once), and the counts of
    /// the answered ones: what a page claimed again sends, and what it records without sending.
    public static func skipping(
        _ answered: [Entry], in targets: [DispatchTarget]
    ) -> (targets: [DispatchTarget], answered: [Platform: [Outcome: Int]]) {
        guard !answered.isEmpty else { return (targets, [:]) }
        var seen: Set<RegistrationID> = []
        var counts: [Platform: [Outcome: Int]] = [:]
        for entry in answered where seen.insert(entry.registrationID).inserted {
            counts[entry.platform, default: [:]][entry.outcome, default: 0] += 1
        }
        return (targets.filter { !seen.contains($0.registrationID) }, counts)
    }
}

extension OutboxPage {
    /// The targets of a page's range `(after, last]` read again (a page claimed anew): the walk
    /// `walk(after, limit)` in steps of `size`, until it passes `last`. Registrations added to the
    /// range since the first claim are included; deleted ones are not.
    public static func targets<Failure: Error>(
        after: RegistrationID?, through last: RegistrationID, size: Int,
        walk: (_ after: RegistrationID?, _ limit: Int) throws(Failure) -> [DispatchTarget]
    ) throws(Failure) -> [DispatchTarget] {
        var targets: [DispatchTarget] = []
        var position = after
        while true {
            let step = try walk(position, size)
            targets += step.prefix { $0.registrationID <= last }
            guard step.count == size, let tail = step.last, tail.registrationID < last else { return targets }
            position = tail.registrationID
        }
    }
}

/// What claiming a page gave.
public enum OutboxClaim: Sendable, Hashable {
    case page(OutboxPage)
    /// No page is left to claim (pages may still be in flight).
    case exhausted
    /// The caller no longer holds the notification (it ended, or another driver took it); a
    /// helper: it ended, or its holder's lease expired.
    case lost
}
