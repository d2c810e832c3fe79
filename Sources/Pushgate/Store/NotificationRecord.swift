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
