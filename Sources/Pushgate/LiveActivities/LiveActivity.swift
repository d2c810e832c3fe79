/// One Live Activity as Pushgate keeps it: an app's activity under the name its owner gave it
/// (`docs/live-activities.md`). Two users' `order-4711` are two activities.
public struct LiveActivityKey: Sendable, Hashable, CustomStringConvertible {
    public var app: AppID
    public var owner: RegistrationOwner
    public var name: ActivityName

    public init(app: AppID, owner: RegistrationOwner, name: ActivityName) {
        self.app = app
        self.owner = owner
        self.name = name
    }

    /// The registrations its `update` and `end` reach: its update tokens, its owner's.
    public var updateTokens: RegistrationSelector { RegistrationSelector(kind: .liveActivity(name: name), owner: owner) }

    public var description: String { "\(owner.exportText)/\(name.rawValue)" }
}

/// `aps.event` of a Live Activity's push.
public enum LiveActivityEvent: String, Sendable, Hashable, CaseIterable, Codable {
    case start, update, end
}

/// What the store keeps of an activity: the newest stamp given to one of its sends (the
/// compare-and-set that keeps an activity's timestamps increasing across instances), what that
/// send was, and its counts.
public struct LiveActivityRecord: Sendable, Hashable {
    public var key: LiveActivityKey
    /// The newest `aps.timestamp` (Unix seconds) given to one of its sends.
    public var stamp: Int64
    /// The event of that send.
    public var event: LiveActivityEvent
    public var sends: Int
    /// Sends at priority 10: each spends the device's budget (Apple advises mixing 5 and 10).
    public var immediateSends: Int
    /// The newest content state sent (JSON), if any.
    public var contentState: String?
    public var startedAt: Timestamp
    public var updatedAt: Timestamp
    /// When an `end` was stamped.
    public var endedAt: Timestamp?
    /// The broadcast channel its devices listen to (a start's `input-push-channel`, a broadcast's).
    public var channel: String?

    public init(
        key: LiveActivityKey, stamp: Int64, event: LiveActivityEvent, sends: Int, immediateSends: Int, contentState: String?,
        startedAt: Timestamp, updatedAt: Timestamp, endedAt: Timestamp?, channel: String? = nil
    ) {
        self.channel = channel
        self.key = key
        self.stamp = stamp
        self.event = event
        self.sends = sends
        self.immediateSends = immediateSends
        self.contentState = contentState
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.endedAt = endedAt
    }

    /// The record after a send stamped `stamp` (the compare-and-set's new row), or nil when
    /// `requested` is not newer than the newest stamp: the device would not show it.
    public static func stamping(
        _ previous: LiveActivityRecord?, key: LiveActivityKey, send: LiveActivityStamping
    ) -> Result<LiveActivityRecord, StoreError> {
        let now = send.now
        let floor = previous.map { $0.stamp + 1 } ?? Int64.min
        let stamp: Int64
        if let requested = send.requested {
            guard requested >= floor else {
                return .failure(
                    StoreError(
                        .conflict,
                        "timestamp \(requested) is not newer than the activity's newest, \(previous!.stamp): the device would not show it; "
                            + "leave timestamp out and Pushgate stamps it"))
            }
            stamp = requested
        } else {
            stamp = max(Int64(now.secondsSinceEpoch.rounded(.down)), floor)
        }
        var record =
            previous
            ?? LiveActivityRecord(
                key: key, stamp: stamp, event: send.event, sends: 0, immediateSends: 0, contentState: nil, startedAt: now, updatedAt: now,
                endedAt: nil)
        record.stamp = stamp
        record.event = send.event
        record.sends += 1
        if send.priority == 10 { record.immediateSends += 1 }
        if let state = send.contentState { record.contentState = state }
        record.updatedAt = now
        if send.event == .end { record.endedAt = now }
        if let channel = send.channel { record.channel = channel }
        if send.event == .start, previous?.endedAt != nil {
            // A name used again after its end: a new activity.
            record.startedAt = now
            record.endedAt = nil
        }
        return .success(record)
    }
}

/// A send's part in its activity's stamp: what ``LiveActivityStore/stamp(_:_:)`` records.
public struct LiveActivityStamping: Sendable, Hashable {
    public var event: LiveActivityEvent
    /// The caller's timestamp (Unix seconds); nil: Pushgate stamps it.
    public var requested: Int64?
    public var priority: Int
    /// The content state sent (JSON), if any.
    public var contentState: String?
    public var now: Timestamp
    /// The channel it goes to or subscribes the devices to, if any.
    public var channel: String?

    public init(
        event: LiveActivityEvent, requested: Int64?, priority: Int, contentState: String?, now: Timestamp, channel: String? = nil
    ) {
        self.channel = channel
        self.event = event
        self.requested = requested
        self.priority = priority
        self.contentState = contentState
        self.now = now
    }
}

/// Where Live Activities and broadcast channels are kept: every registration store is one.
public protocol LiveActivityStore: Sendable {
    /// Stamps a send of `key`'s activity, in one compare-and-set: `requested` when it is newer
    /// than the newest stamp (else `.conflict`), or the later of now (seconds) and the newest
    /// stamp + 1. Several instances stamping one activity get strictly increasing stamps.
    func stamp(_ key: LiveActivityKey, _ send: LiveActivityStamping) async throws(StoreError) -> LiveActivityRecord
    func activity(_ key: LiveActivityKey) async throws(StoreError) -> LiveActivityRecord?
    /// `app`'s activities (one owner's, when given), the newest first, at most `limit`.
    func activities(app: AppID, owner: RegistrationOwner?, limit: Int) async throws(StoreError) -> [LiveActivityRecord]
    /// Removes those of `ids` that are update tokens of `key`'s activity (the page of its `end`
    /// just sent): the number removed.
    func retireTokens(of key: LiveActivityKey, ids: [RegistrationID]) async throws(StoreError) -> Int
    /// `app`'s broadcast channels, by name.
    func channels(app: AppID) async throws(StoreError) -> [APNSChannel]
    /// Stores a channel Apple created; `.conflict` when the name is taken, `.limitReached` when
    /// the app has `maximum` channels already.
    func addChannel(_ channel: APNSChannel, maximum: Int) async throws(StoreError)
    /// Removes a channel; false when there was none.
    func removeChannel(app: AppID, name: String) async throws(StoreError) -> Bool
}

extension LiveActivityStore {
    public func channel(app: AppID, name: String) async throws(StoreError) -> APNSChannel? {
        try await channels(app: app).first { $0.name == name }
    }
}

/// A broadcast channel (iOS 18) Pushgate created at Apple, under a name of the app's choosing.
public struct APNSChannel: Sendable, Hashable {
    public var app: AppID
    public var name: String
    /// Apple's id (base64), sent as `apns-channel-id`.
    public var channelID: String
    /// `message-storage-policy`: 0 no message stored, 1 the most recent one stored.
    public var storagePolicy: Int
    public var createdAt: Timestamp

    public init(app: AppID, name: String, channelID: String, storagePolicy: Int, createdAt: Timestamp) {
        self.app = app
        self.name = name
        self.channelID = channelID
        self.storagePolicy = storagePolicy
        self.createdAt = createdAt
    }
}

extension APNSChannel {
    /// The refusal of a second channel under one name.
    public static func nameTaken(_ name: String) -> StoreError { StoreError(.conflict, "a channel named '\(name)' exists already") }

    /// The refusal of a channel past the app's limit (checked before Apple is asked).
    public static func limitReached(_ maximum: Int) -> StoreError {
        StoreError(
            .limitReached,
            "the app has \(maximum) broadcast channels, the most allowed (apns.maxChannels; Apple's limit is 10,000 per app and environment); delete one first"
        )
    }
}

/// A broadcast's one target: the channel, by the name Pushgate keeps and Apple's id. Its handle
/// holds ``handlePrefix`` and the id, which no device token (hex) can be.
public struct APNSChannelRecipient: Sendable, Hashable {
    public var name: String
    public var channelID: String

    public init(name: String, channelID: String) {
        self.name = name
        self.channelID = channelID
    }

    public static let handlePrefix = "channel:"
    static let storedPrefix = "apns-channel:"
    static let descriptionPrefix = "channel "
    /// The registration id results report for a broadcast's one target.
    public static let targetID = try! RegistrationID("apns-channel")
    /// APNs' limit for a broadcast's payload.
    public static let maximumPayloadBytes = 5120

    public var target: DispatchTarget {
        DispatchTarget(
            registrationID: Self.targetID, handle: DeviceHandle(uncheckedPlatform: .apns, value: Self.handlePrefix + channelID),
            kind: .audience)
    }

    /// The channel id a target's handle holds, when it is a broadcast's.
    public static func channelID(of target: DispatchTarget) -> String? {
        guard target.kind == .audience, target.handle.platform == .apns, target.handle.value.hasPrefix(handlePrefix) else { return nil }
        return String(target.handle.value.dropFirst(handlePrefix.count))
    }
}
