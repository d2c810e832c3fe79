/// The outbox: notifications accepted for delivery, stored before the caller hears back, then
/// delivered in pages under leases by whichever gateway instance holds them.
///
/// Lifecycle of a notification (``NotificationState``):
/// `Scheduled` (a `deliverAt` in the future) or `Enqueued` → `Processing` (a driver holds its
/// lease and claims pages) → `Completed`, `Abandoned`, `NoTargetFound` or `Cancelled`.
///
/// - A driver holds the notification's lease (renewed while it works) and claims pages of its
///   audience, each under a page lease. A page is a range of registration ids `(after, last]` of
///   the audience's keyset walk, so the walk resumes after a crash without materialising the
///   audience.
/// - A page's outcomes are recorded once, with the page marked done, in one transaction
///   (``completePage(notificationID:app:number:counts:failures:)`` answers false for a page done
///   already): a page delivered twice — its lease expired while it was on the wire — is counted
///   once.
/// - A page whose lease expired (its driver died or was stopped) is claimed again; the devices
///   of the pages in flight at a crash are the only ones that can receive the message twice.
/// - A cancelled notification's remaining pages are still claimed, and counted `Cancelled`
///   without being sent.
public protocol OutboxStore: Sendable {
    /// Stores `notification` (durable when the call returns). With a `lease`, the caller drives it
    /// at once (a synchronous send) and it starts `Processing`.
    ///
    /// With an idempotency key, in the same transaction: when a notification of the same app and
    /// sender stored since the key's `storedSince` holds the key, nothing is stored and that one is
    /// answered (concurrent enqueues with one key store one notification); an older holder gives
    /// the key up.
    @discardableResult
    func enqueue(_ notification: OutboxNotification, lease: OutboxLease?) async throws(StoreError) -> OutboxEnqueued
    /// The notification of `app` and `sender` that holds `key` (stored since its `storedSince`); nil when none does.
    func idempotentNotification(key: IdempotencyKey, app: AppID, sender: String) async throws(StoreError) -> OutboxKeyHolder?
    /// Takes the lease of one notification of `app` that is due (`deliverAt` passed or a cancel
    /// asked for, not final, and not leased or its lease expired), oldest first; nil when none is.
    /// A stored notification that can no longer be read is ended `Abandoned` instead (it would
    /// otherwise block the ones behind it).
    func takeDueNotification(app: AppID, lease: OutboxLease, now: Timestamp) async throws(StoreError) -> OutboxTakeover?
    /// The next page of `notificationID` for the lease holder (or, `helping`, for another
    /// instance while a live holder has it and it is shared): an expired page first, else the
    /// audience after the cursor.
    func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp, helping: Bool
    ) async throws(StoreError)
        -> OutboxClaim
    /// A shared notification (an asynchronous send) that another instance holds and is still
    /// paging (its audience not exhausted, its lease alive): pages of it are there for `owner` to
    /// claim and deliver too (``claimPage(notificationID:app:lease:pageSize:now:helping:)``), so
    /// that one broadcast uses every instance. Its holder alone finishes it. nil when none is.
    func takeRunningNotification(app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> OutboxNotification?
    /// Records a page's outcomes and marks it done; false (nothing recorded) when it was done already.
    /// With a `retry`, its targets (which a service throttled; they are not in `counts`) become a
    /// page of their own, due at `retry.due`, in the same transaction.
    func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult],
        retry: OutboxRetry?
    ) async throws(StoreError) -> Bool
    /// Records the final answers of targets of pages still on the wire, as they arrive (a driver
    /// flushes them every few tens of milliseconds): a page claimed again after its driver died
    /// skips the targets answered here and counts them as answered (``OutboxPage/answered``), so
    /// that a crash sends again only what was on the wire and not yet flushed. Answers for a page
    /// that is done already are ignored; the failures among them are listed at once.
    func recordAnswers(notificationID: String, app: AppID, answers: [OutboxAnswers]) async throws(StoreError)
    /// When the audience is exhausted and the only pages left are retries not yet due: gives up
    /// `owner`'s lease on the notification until the first of them is due (so that no driver holds
    /// it meanwhile) and answers that time. nil, with nothing changed, otherwise.
    func parkNotification(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> Timestamp?
    /// Ends the notification when its audience is exhausted and every page is done: the final
    /// state follows its counts (or `Cancelled`). nil while pages are left.
    func finish(notificationID: String, app: AppID, owner: String, now: Timestamp) async throws(StoreError) -> NotificationRecord?
    /// Extends every lease `owner` holds on unfinished work to `until`.
    func renewLeases(owner: String, until: Timestamp) async throws(StoreError)
    /// Gives up the leases `owner` holds on unfinished work (of one notification, or all), so that
    /// the next claim takes it at once.
    func releaseLeases(owner: String, notificationID: String?) async throws(StoreError)
    /// Asks for a notification to stop: it becomes due at once (its `deliverAt` is kept), and its
    /// driver counts the targets not yet sent as `Cancelled`. Answers the record as it was before
    /// (`cancelRequested` false for the one call that asked first; final ones are left unchanged).
    func requestCancel(notificationID: String, app: AppID, now: Timestamp) async throws(StoreError) -> NotificationRecord?
    func notificationRecord(id: String, app: AppID) async throws(StoreError) -> NotificationRecord?
    /// The failed targets of a notification, ordered by registration id, after `after`.
    func failedTargets(notificationID: String, app: AppID, after: RegistrationID?, limit: Int) async throws(StoreError) -> [TargetResult]
    /// Notifications newest first; only `sender`'s when given.
    func notificationRecords(app: AppID, sender: String?, limit: Int) async throws(StoreError) -> [NotificationRecord]
    /// Deletes notifications that ended before `endedBefore`, with their outcomes, at most 100 per
    /// call (a short transaction); how many. Call again while it answers 100.
    func pruneNotifications(endedBefore: Timestamp) async throws(StoreError) -> Int
    /// How much is waiting.
    func outboxDepth(now: Timestamp) async throws(StoreError) -> OutboxDepth
}

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

    public init(
        number: Int, targets: [DispatchTarget], reclaimed: Bool, cancelled: Bool, attempt: Int = 0,
        answered: [Platform: [Outcome: Int]] = [:]
    ) {
        self.answered = answered
        self.number = number
        self.targets = targets
        self.reclaimed = reclaimed
        self.cancelled = cancelled
        self.attempt = attempt
    }
}

extension OutboxStore {
    /// The next page for the lease holder.
    public func claimPage(
        notificationID: String, app: AppID, lease: OutboxLease, pageSize: Int, now: Timestamp
    ) async throws(StoreError) -> OutboxClaim {
        try await claimPage(notificationID: notificationID, app: app, lease: lease, pageSize: pageSize, now: now, helping: false)
    }

    /// Records a page's outcomes with no retry.
    public func completePage(
        notificationID: String, app: AppID, number: Int, counts: [Platform: [Outcome: Int]], failures: [TargetResult]
    ) async throws(StoreError) -> Bool {
        try await completePage(notificationID: notificationID, app: app, number: number, counts: counts, failures: failures, retry: nil)
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

    /// The targets back from ``encode(_:)``; nil when the text is not its form.
    public static func decode(_ text: String) -> [DispatchTarget]? {
        var targets: [DispatchTarget] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, let id = try? RegistrationID(String(fields[0])), let platform = Platform(rawValue: String(fields[1]))
            else { return nil }
            targets.append(DispatchTarget(registrationID: id, handle: DeviceHandle(uncheckedPlatform: platform, value: String(fields[2]))))
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

/// A notification's telemetry: where it stands and what happened, per platform and outcome.
public struct NotificationRecord: Sendable, Hashable {
    public var id: String
    public var app: AppID
    public var sender: String
    public var state: NotificationState
    public var selection: PlatformSelection
    /// The audience: a tag expression's text, or an FCM topic or condition (``Audience/description``).
    public var audience: String
    public var secureID: String?
    public var enqueuedAt: Timestamp
    public var deliverAt: Timestamp
    public var startedAt: Timestamp?
    public var endedAt: Timestamp?
    public var counts: [Platform: [Outcome: Int]]
    public var cancelRequested: Bool
    /// Targets in the pages claimed so far: the audience's size once ``audienceExhausted``.
    public var targetsClaimed: Int
    /// Whether the whole audience has been read into pages.
    public var audienceExhausted: Bool

    public init(
        id: String, app: AppID, sender: String, state: NotificationState, selection: PlatformSelection, audience: String,
        secureID: String?, enqueuedAt: Timestamp, deliverAt: Timestamp, startedAt: Timestamp?, endedAt: Timestamp?,
        counts: [Platform: [Outcome: Int]], cancelRequested: Bool, targetsClaimed: Int = 0, audienceExhausted: Bool = false
    ) {
        self.targetsClaimed = targetsClaimed
        self.audienceExhausted = audienceExhausted
        self.id = id
        self.app = app
        self.sender = sender
        self.state = state
        self.selection = selection
        self.audience = audience
        self.secureID = secureID
        self.enqueuedAt = enqueuedAt
        self.deliverAt = deliverAt
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.counts = counts
        self.cancelRequested = cancelRequested
    }

    /// Targets with a final outcome so far.
    public var processed: Int { counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } }
    public var succeeded: Int { counts.values.reduce(0) { $0 + ($1[.success] ?? 0) } }
    /// Targets not sent because the notification was cancelled.
    public var cancelled: Int { counts.values.reduce(0) { $0 + ($1[.cancelled] ?? 0) } }
    /// Targets the push services (or the gateway) failed: neither delivered nor cancelled.
    public var failed: Int { processed - succeeded - cancelled }

    /// The state a notification ends in once every target is counted: `Cancelled` when a cancel
    /// kept some target from being sent (one that came after the last page is too late).
    public static func finalState(counts: [Platform: [Outcome: Int]], selection: PlatformSelection, cancelled: Bool) -> NotificationState {
        if cancelled && counts.values.contains(where: { ($0[.cancelled] ?? 0) > 0 }) { return .cancelled }
        return NotificationResult(notificationID: "", selection: selection, counts: counts, targets: []).state
    }
}

/// What is waiting in the outbox.
public struct OutboxDepth: Sendable, Hashable {
    /// Notifications not yet final (scheduled ones included).
    public var pending: Int
    /// Notifications due now and not final.
    public var due: Int
    /// When the oldest due notification was due, if any.
    public var oldestDue: Timestamp?

    public init(pending: Int, due: Int, oldestDue: Timestamp?) {
        self.pending = pending
        self.due = due
        self.oldestDue = oldestDue
    }
}

/// Which registrations a notification reaches, and what each gets.
public enum NotificationDelivery: Sendable, Hashable {
    /// Every matching registration gets its platform's payload (the tutorial API).
    case allRegistrations
    /// A native send of the hub API: registrations without a template of their own get the
    /// platform's payload; template registrations ignore it (`Skipped`).
    case nativeRegistrations
    /// A template send of the hub API: each template registration gets its own template rendered
    /// with these properties; native registrations ignore it (`Skipped`).
    case templates(TemplateProperties)
}

/// The stored form of rendered payloads: one JSON array, one object per platform, and for a
/// hub-API send one more object saying which registrations it reaches
/// (`{"delivery":"native"}`, `{"delivery":"template","properties":{…}}`).
public enum OutboxPayloadCoding {
    public static func encode(_ payloads: [Platform: RenderedNotification], delivery: NotificationDelivery = .allRegistrations) -> String {
        var output: [UInt8] = Array("[".utf8)
        switch delivery {
        case .allRegistrations: break
        case .nativeRegistrations: output += Array(#"{"delivery":"native"}"#.utf8)
        case .templates(let properties):
            output += Array(#"{"delivery":"template","properties":{"#.utf8)
            for (index, name) in properties.names.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Escaping.appendJSONString(name, to: &output)
                output.append(UInt8(ascii: ":"))
                Escaping.appendJSONString(properties[name] ?? "", to: &output)
            }
            output += Array("}}".utf8)
        }
        for platform in payloads.keys.sorted() {
            guard let payload = payloads[platform] else { continue }
            if output.count > 1 { output.append(UInt8(ascii: ",")) }
            output += Array(#"{"platform":"#.utf8)
            Escaping.appendJSONString(platform.rawValue, to: &output)
            output += Array(#","contentType":"#.utf8)
            Escaping.appendJSONString(payload.contentType, to: &output)
            output += Array(#","headers":["#.utf8)
            for (headerIndex, header) in payload.headers.enumerated() {
                if headerIndex > 0 { output.append(UInt8(ascii: ",")) }
                output.append(UInt8(ascii: "["))
                Escaping.appendJSONString(header.name, to: &output)
                output.append(UInt8(ascii: ","))
                Escaping.appendJSONString(header.value, to: &output)
                output.append(UInt8(ascii: "]"))
            }
            output += Array(#"],"body":"#.utf8)
            Escaping.appendJSONString(String(decoding: payload.body, as: UTF8.self), to: &output)
            if payload.validateOnly { output += Array(#","validateOnly":true"#.utf8) }
            output.append(UInt8(ascii: "}"))
        }
        output.append(UInt8(ascii: "]"))
        return String(decoding: output, as: UTF8.self)
    }

    public static func decodeWithDelivery(
        _ text: String
    ) throws(StoreError) -> (payloads: [Platform: RenderedNotification], delivery: NotificationDelivery) {
        let corrupt = StoreError(.storage, "a stored notification's payloads are corrupt")
        guard let elements = (try? JSONParser.parse(text))?.arrayElements else { throw corrupt }
        var payloads: [Platform: RenderedNotification] = [:]
        var delivery = NotificationDelivery.allRegistrations
        for element in elements {
            if let kind = element["delivery"]?.stringValue {
                switch kind {
                case "native": delivery = .nativeRegistrations
                case "template":
                    guard case .object(let members)? = element["properties"]?.kind else { throw corrupt }
                    var values: [String: String] = [:]
                    for member in members { values[member.key] = member.value.stringValue ?? "" }
                    delivery = .templates(TemplateProperties(values))
                default: throw corrupt
                }
                continue
            }
            guard let platform = element["platform"]?.stringValue.flatMap(Platform.init(rawValue:)),
                let contentType = element["contentType"]?.stringValue, let body = element["body"]?.stringValue,
                let headerElements = element["headers"]?.arrayElements
            else { throw corrupt }
            var headers: [HTTPHeader] = []
            for header in headerElements {
                guard let pair = header.arrayElements, pair.count == 2, let name = pair[0].stringValue, let value = pair[1].stringValue
                else { throw corrupt }
                headers.append(HTTPHeader(name: name, value: value))
            }
            payloads[platform] = RenderedNotification(
                platform: platform, body: Array(body.utf8), headers: headers, contentType: contentType,
                validateOnly: element["validateOnly"]?.kind == .bool(true))
        }
        return (payloads, delivery)
    }
}

/// Everything a gateway keeps: registrations, secure messages and the outbox.
public typealias GatewayStore = RegistrationStore & SecureMessageStore & OutboxStore

/// A store on a database the gateway opened itself (SQLite, PostgreSQL): what the server and the
/// CLI need beyond the stores' operations.
public protocol DatabaseStore: GatewayStore {
    /// What and where it is (`SQLite /var/lib/pushgate.sqlite`, `PostgreSQL postgres://…`), no secret.
    var summary: String { get }
    func schemaVersion() async throws(StoreError) -> Int
    /// The database's health as its monitor last found it (`/healthz` answers 503 with the
    /// reason while it is down): probed at most once per interval, and at once after a call failed.
    var health: HealthMonitor { get }
    /// Wakes `wake` whenever another instance has outbox work (PostgreSQL's LISTEN/NOTIFY); runs
    /// until cancelled. Stores with only one instance return at once.
    func listenForOutboxWork(_ wake: @escaping @Sendable () -> Void) async
    /// Whether several gateway instances run on this database (PostgreSQL): only then is there
    /// another instance's broadcast to help with.
    var servesSeveralInstances: Bool { get }
    func close() async
}
