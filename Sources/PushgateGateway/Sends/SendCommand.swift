import Crypto
import Foundation
import Pushgate

/// One send, as either API asks for it: what the tutorial API's `POST /api/notifications` and the
/// hub API's `POST /{hub}/messages` and `/schedulednotifications` parse a request into, and all
/// that ``Sends`` needs to decide it. Each API checks its own syntax while parsing (query
/// parameters, headers); every rule of a send is the core's (``Sends/check(_:)``).
public struct SendCommand: Sendable {
    /// Who sends: a signed-in user of the tutorial API, or a hub key (its rule's name).
    public enum Sender: Sendable, Hashable {
        case user(AuthenticatedUser)
        case hubKey(rule: String)

        /// The name notifications record as their sender.
        public var name: String {
            switch self {
            case .user(let user): user.name
            case .hubKey(let rule): "$rule:" + rule
            }
        }
    }

    /// Which API and route it came through: part of what makes two requests the same send.
    public enum Route: String, Sendable, Hashable {
        case tutorialNotifications = "POST /api/notifications"
        case hubMessages = "POST /{hub}/messages"
        case hubScheduled = "POST /{hub}/schedulednotifications"
        case hubBatch = "POST /{hub}/messages/$batch"
        case tutorialLiveActivity = "POST /api/liveactivities/{name}"
        case hubLiveActivity = "POST /{hub}/liveactivities/{name}"
    }

    /// Whom it reaches.
    public enum Audience: Sendable, Hashable {
        /// One user's devices (`to_tag`): their `username:` tag.
        case user(String)
        /// A tag or tag expression (`tags=`, `ServiceBusNotification-Tags`; an installation is
        /// `$InstallationId:{id}`).
        case tags(String)
        /// An FCM topic or condition (`topic=`, `condition=`): Firebase knows the devices.
        case fcmTopic(String)
        case fcmCondition(String)
        /// Device handles given with the send (`?direct`, `$batch`), and where they were given (for errors).
        case devices([String], field: String)
        /// Every registration of the hub (a hub send without tags).
        case everyone
        /// A Live Activity's own tokens: its owner's push-to-start tokens for a start (narrowed
        /// by tags when given: ``SendCommand/LiveActivity/tags``), its update tokens otherwise.
        case liveActivity
    }

    /// A Live Activity send (`POST /api/liveactivities/{name}`, `POST /{hub}/liveactivities/{name}`).
    public struct LiveActivity: Sendable, Hashable {
        /// The activity's name, as given.
        public var name: String
        public var event: LiveActivityEvent
        /// `apns-priority`, 10 or 5.
        public var priority: Int
        /// Whose activity, as the hub API names it (`owner=`; nil: the hub's own); the tutorial
        /// API's is always its sender's.
        public var owner: String?
        /// A start's tag expression, narrowing the owner's push-to-start tokens (the hub's
        /// `ServiceBusNotification-Tags`, the tutorial API's `tags=`).
        public var tags: String?
        /// A broadcast: the channel (by the name Pushgate keeps it under) whose subscribed
        /// activities Apple reaches with one request, instead of the activity's update tokens.
        public var channel: String?

        public init(
            name: String, event: LiveActivityEvent, priority: Int = 10, owner: String? = nil, tags: String? = nil, channel: String? = nil
        ) {
            self.name = name
            self.event = event
            self.priority = priority
            self.owner = owner
            self.tags = tags
            self.channel = channel
        }
    }

    /// What is sent.
    public enum Content: Sendable, Hashable {
        /// The tutorial API's: a JSON string (the message) or an object of properties carrying
        /// `message`, rendered by the app's templates; `secure` stores the message for its one
        /// recipient and sends only its id.
        case message(body: [UInt8], secure: Bool)
        /// Notification Hubs': by `ServiceBusNotification-Format`, one platform's native payload
        /// (with the request's headers that pass through to that service) or a template send's
        /// properties for each registration's own template.
        case notificationHubs(format: String?, body: [UInt8], headers: [Header])
        /// A Live Activity's start, update or end; the body's members are Apple's `aps` keys
        /// (``LiveActivityMessage``).
        case liveActivity(LiveActivity, body: [UInt8])
    }

    /// A request header, as given.
    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// How the caller is answered.
    public enum Mode: Sendable, Hashable {
        /// Delivered, then answered with the result.
        case synchronous
        /// Delivered, answered as it goes (progress lines, then the result).
        case streamed
        /// Answered once stored (`202`, or `201` in the hub API); delivered in the background.
        case asynchronous
        /// Notification Hubs' test send: delivered now, answered with (at most 10) outcomes.
        case test
        /// Who it would reach and what each service would get; nothing stored or sent.
        case dryRun(sample: Int)
    }

    /// A time given as text: the value, and the text (part of what makes two requests the same).
    public struct Given<Value: Sendable & Hashable>: Sendable, Hashable {
        public var value: Value
        public var text: String

        public init(_ value: Value, text: String) {
            self.value = value
            self.text = text
        }
    }

    public var route: Route
    public var sender: Sender
    public var audience: Audience
    public var content: Content
    /// The tutorial API's `pns` (platforms), as given; the hub's platform comes from the format.
    public var platforms: String?
    /// How the caller asked to be answered; nil: not said (synchronous, unless scheduled).
    public var mode: Mode?
    /// When to deliver (`deliverAt`, `ServiceBusNotification-ScheduleTime`).
    public var deliverAt: Given<Timestamp>?
    /// `ttl=`: seconds the services keep it for an offline device.
    public var timeToLive: Given<Int>?
    /// `validateOnly=true`: the services validate without delivering (FCM, legacy GCM).
    public var validateOnly: Bool
    /// The `Idempotency-Key` header, as given.
    public var idempotencyKey: String?

    /// (Ten parameters: a command is its ten parts, each named; the optional ones default.)
    public init(
        route: Route, sender: Sender, audience: Audience, content: Content, platforms: String? = nil, mode: Mode? = nil,
        deliverAt: Given<Timestamp>? = nil, timeToLive: Given<Int>? = nil, validateOnly: Bool = false, idempotencyKey: String? = nil
    ) {
        self.route = route
        self.sender = sender
        self.audience = audience
        self.content = content
        self.platforms = platforms
        self.mode = mode
        self.deliverAt = deliverAt
        self.timeToLive = timeToLive
        self.validateOnly = validateOnly
        self.idempotencyKey = idempotencyKey
    }

    /// Whether the caller is answered once the send is stored (delivered in the background):
    /// asked for, scheduled, or any hub send but a test send.
    public var isAccepted: Bool {
        if case .notificationHubs = content, mode != .test { return true }
        return mode == .asynchronous || deliverAt != nil
    }

    /// Whether the message is stored for its recipient (secure push).
    public var isSecure: Bool {
        if case .message(_, let secure) = content { return secure }
        return false
    }

    var body: [UInt8] {
        switch content {
        case .message(let body, _), .notificationHubs(_, let body, _), .liveActivity(_, let body): body
        }
    }
}

// MARK: The idempotency fingerprint

extension SendCommand {
    /// The version of the fingerprint this gateway writes. A stored key is compared in every
    /// version this gateway reads (``knownFingerprintVersions``, ``IdempotencyKey/matches(_:)``),
    /// so that keys stored before a change keep answering as they did for their window, also
    /// while instances of a cluster run both versions: a new version is first added to the versions
    /// read, and written only by a later release, once every instance reads it.
    ///
    /// Version 1 (written unprefixed, as before the send command existed) digests the route, the
    /// parameters as given in a fixed order, the headers that shape a hub send, and the body.
    public static let fingerprintVersion = 1
    /// The versions this gateway reads.
    public static let knownFingerprintVersions = [1]

    /// The digest of what makes two requests the same send, in `version`'s terms (nil for a
    /// version this gateway does not know). Version N > 1 is written `N:<hex>`.
    public func fingerprint(version: Int = fingerprintVersion) -> String? {
        guard version == 1 else { return nil }
        var digest = SHA256()
        for part in fingerprintPartsVersion1 {
            // Each part with its length (nil apart from empty), so that no two requests run together.
            let bytes = part.map { Array($0.utf8) }
            digest.update(data: Array("\(bytes.map { String($0.count) } ?? "-"):".utf8))
            digest.update(data: bytes ?? [])
        }
        digest.update(data: Array("\(body.count):".utf8))
        digest.update(data: body)
        return digest.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Version 1's parts, in the order each API wrote them.
    private var fingerprintPartsVersion1: [String?] {
        switch content {
        case .message(_, let secure):
            var toTag: String?
            var tags: String?
            var topic: String?
            var condition: String?
            switch audience {
            case .user(let name): toTag = name
            case .tags(let expression): tags = expression
            case .fcmTopic(let name): topic = name
            case .fcmCondition(let text): condition = text
            case .devices, .everyone, .liveActivity: break
            }
            return [
                route.rawValue, platforms, toTag, tags, timeToLive?.text, deliverAt?.text, secure ? "secure" : nil,
                mode == .asynchronous ? "async" : nil, validateOnly ? "validateOnly" : nil, topic, condition,
            ]
        case .notificationHubs(let format, _, let headers):
            func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
            let passed = headers.filter { header in
                let name = header.name.lowercased()
                return name == "content-type" || Platform.allCases.contains { HubPayloads.passesThrough(name, to: $0) }
            }.map { "\($0.name.lowercased()): \($0.value)" }.sorted()
            let collection = route == .hubScheduled ? "schedulednotifications" : "messages"
            var direct = false
            if case .devices = audience { direct = true }
            return [
                "POST /{hub}/\(collection)", direct ? "direct" : nil, mode == .test ? "test" : nil, format,
                header("servicebusnotification-tags"), header("servicebusnotification-devicehandle"), header("p256dh"),
                header("auth"), header("servicebusnotification-scheduletime"),
            ] + passed
        case .liveActivity(let activity, _):
            return [
                route.rawValue, activity.name, activity.event.rawValue, String(activity.priority), activity.owner, activity.tags,
                mode == .asynchronous ? "async" : nil, activity.channel,
            ]
        }
    }
}
