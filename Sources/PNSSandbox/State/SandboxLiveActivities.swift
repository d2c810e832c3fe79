import Foundation
import Pushgate
import Synchronization

/// The ActivityKit side of the sandbox's APNs devices: push-to-start and update tokens, the
/// activities they reach, and the apps' broadcast channels with the activities listening to them.
/// One lock and short operations that never suspend, as ``SandboxState``.
///
/// ```swift
/// let token = sandbox.state.liveActivities.issuePushToStartToken(deviceID: phone.id, attributesType: "DeliveryAttributes")
/// // … a gateway sends a `start` to `token` …
/// let shown = sandbox.state.liveActivities.activities(deviceID: phone.id)
/// ```
public final class SandboxLiveActivities: Sendable {
    /// A Live Activity token the sandbox issued, and what it reaches.
    struct Token: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            /// `Activity<T>.pushToStartTokenUpdates`: starts activities of one attributes type.
            case pushToStart(attributesType: String)
            /// `activity.pushTokenUpdates`: updates and ends one activity.
            case update(activityID: String)
        }

        var deviceID: String
        var kind: Kind
        /// When the token died (replaced, or its activity over), in milliseconds since the epoch:
        /// APNs' 410 `timestamp`. Nil while it is alive.
        var goneAtMilliseconds: Int64?
    }

    private struct PushToStartKey: Hashable {
        var deviceID: String
        var attributesType: String
    }

    private struct Storage {
        var tokens: [String: Token] = [:]
        /// The live push-to-start token per device and attributes type (ActivityKit has one).
        var pushToStartTokens: [PushToStartKey: String] = [:]
        var activities: [String: SandboxActivity] = [:]
        var activityIDsByDevice: [String: [String]] = [:]
        var channels: [String: SandboxChannel] = [:]
        /// Each app's channels, in the order they were created.
        var channelIDsByApp: [String: [String]] = [:]
        /// The activities listening to each channel.
        var listeners: [String: [String]] = [:]
        var nextActivityNumber = 1
    }

    private let storage = Mutex(Storage())
    let clock: any PushgateClock
    /// Channels one app may have (``SandboxConfiguration/apnsChannelLimit``).
    let channelLimit: Int

    init(clock: any PushgateClock, channelLimit: Int) {
        self.clock = clock
        self.channelLimit = channelLimit
    }

    private var now: Double { clock.now.secondsSinceEpoch }

    // MARK: Tokens

    /// Issues the device's push-to-start token for `attributesType`, as
    /// `Activity<T>.pushToStartTokenUpdates` hands one to the app. ActivityKit keeps one per
    /// attributes type and rotates it (protocols.md §7: "keep the latest"), so the token this
    /// replaces is dead from now on: APNs answers it 410 `Unregistered`.
    public func issuePushToStartToken(deviceID: String, attributesType: String) -> String {
        let token = SandboxCredentials.randomHex(64)
        let nowMilliseconds = Int64(now * 1000)
        storage.withLock { state in
            let key = PushToStartKey(deviceID: deviceID, attributesType: attributesType)
            if let previous = state.pushToStartTokens[key] { state.tokens[previous]?.goneAtMilliseconds = nowMilliseconds }
            state.pushToStartTokens[key] = token
            state.tokens[token] = Token(deviceID: deviceID, kind: .pushToStart(attributesType: attributesType))
        }
        return token
    }

    /// The token (lower-case hex), dead when replaced or when its activity is over.
    func lookUp(token: String) -> Token? {
        let now = self.now
        return storage.withLock { state in
            guard var found = state.tokens[token] else { return nil }
            if case .update(let id) = found.kind, let end = state.activities[id]?.endTime(at: now) {
                found.goneAtMilliseconds = Int64(end * 1000)
            }
            return found
        }
    }

    // MARK: Activities

    /// Starts an activity on `deviceID` from a `start` sent to a push-to-start token. With
    /// `input-push-token: 1` ActivityKit issues the activity an update token; with
    /// `input-push-channel` it listens to that channel.
    func start(deviceID: String, payload: LiveActivityPayload) -> SandboxActivity {
        let now = self.now
        return storage.withLock { state in
            let id = "activity-\(state.nextActivityNumber)"
            state.nextActivityNumber += 1
            var activity = SandboxActivity(
                id: id, deviceID: deviceID, name: payload.attributes?["activityName"]?.stringValue ?? id,
                attributesType: payload.attributesType, attributes: payload.attributes, channel: payload.inputPushChannel,
                contentState: payload.contentState, timestamp: payload.timestamp, alert: payload.alert, staleDate: payload.staleDate,
                startedAt: now)
            if payload.inputPushToken {
                let token = SandboxCredentials.randomHex(64)
                activity.updateToken = token
                state.tokens[token] = Token(deviceID: deviceID, kind: .update(activityID: id))
            }
            if let channel = payload.inputPushChannel { state.listeners[channel, default: []].append(id) }
            state.activities[id] = activity
            state.activityIDsByDevice[deviceID, default: []].append(id)
            return activity
        }
    }

    /// Hands a payload the device received to one of its activities; whether it was applied
    /// (``SandboxActivity``'s rules), nil for no such activity.
    @discardableResult
    func receive(_ payload: LiveActivityPayload, activityID: String) -> Bool? {
        let now = self.now
        return storage.withLock { state in state.activities[activityID]?.receive(payload, at: now) }
    }

    /// The device's activities, oldest first (ended and dismissed ones included).
    public func activities(deviceID: String) -> [SandboxActivity] {
        storage.withLock { state in (state.activityIDsByDevice[deviceID] ?? []).compactMap { state.activities[$0] } }
    }

    /// The activity an update token reaches.
    public func activity(updateToken: String) -> SandboxActivity? {
        storage.withLock { state in
            guard case .update(let id) = state.tokens[updateToken.lowercased()]?.kind else { return nil }
            return state.activities[id]
        }
    }

    /// What an activity shows at the sandbox's current time.
    public func state(of activity: SandboxActivity) -> SandboxActivity.State { activity.state(at: now) }

    // MARK: Channels

    /// Creates a channel for `app`; nil when the app has ``channelLimit`` channels already.
    func createChannel(app: String, messageStoragePolicy: Int) -> SandboxChannel? {
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let channel = SandboxChannel(id: Data(bytes).base64EncodedString(), app: app, messageStoragePolicy: messageStoragePolicy)
        return storage.withLock { state in
            guard state.channelIDsByApp[app, default: []].count < channelLimit else { return nil }
            state.channels[channel.id] = channel
            state.channelIDsByApp[app, default: []].append(channel.id)
            return channel
        }
    }

    /// The channel `id` of `app` (nil when unknown, deleted, or another app's).
    public func channel(id: String, app: String) -> SandboxChannel? {
        storage.withLock { state in state.channels[id].flatMap { $0.app == app ? $0 : nil } }
    }

    /// The channels of `app`, oldest first.
    public func channelIDs(app: String) -> [String] { storage.withLock { $0.channelIDsByApp[app] ?? [] } }

    /// Deletes a channel of `app`; false when there was none. Activities listening to it get no
    /// more broadcasts.
    @discardableResult
    func deleteChannel(id: String, app: String) -> Bool {
        storage.withLock { state in
            guard state.channels[id]?.app == app else { return false }
            state.channels[id] = nil
            state.channelIDsByApp[app]?.removeAll { $0 == id }
            return true
        }
    }

    /// Makes the device listen to `channelID` (as an app that started an activity locally and
    /// subscribed it): the device's running activity on the channel, else a new one named `name`.
    /// Returns it, and whether it is new.
    public func subscribe(deviceID: String, channelID: String, name: String?) -> (activity: SandboxActivity, created: Bool) {
        let now = self.now
        return storage.withLock { state in
            for id in state.activityIDsByDevice[deviceID] ?? [] {
                if let running = state.activities[id], running.channel == channelID, running.endTime(at: now) == nil {
                    return (running, false)
                }
            }
            let id = "activity-\(state.nextActivityNumber)"
            state.nextActivityNumber += 1
            let activity = SandboxActivity(
                id: id, deviceID: deviceID, name: name ?? id, attributesType: nil, attributes: nil, channel: channelID, timestamp: 0,
                startedAt: now)
            state.activities[id] = activity
            state.activityIDsByDevice[deviceID, default: []].append(id)
            state.listeners[channelID, default: []].append(id)
            return (activity, true)
        }
    }

    /// The devices with a running activity on `channelID`.
    func listeningDevices(channelID: String) -> Set<String> {
        let now = self.now
        return storage.withLock { state in
            Set(
                (state.listeners[channelID] ?? []).compactMap { id in
                    state.activities[id].flatMap { $0.endTime(at: now) == nil ? $0.deviceID : nil }
                })
        }
    }

    /// Hands a broadcast to every running activity on `channelID` of the devices in `deviceIDs`
    /// (those that can receive). Returns, per activity reached, its device and whether the
    /// payload was applied.
    func broadcast(_ payload: LiveActivityPayload, channelID: String, deviceIDs: Set<String>) -> [(deviceID: String, applied: Bool)] {
        let now = self.now
        return storage.withLock { state in
            (state.listeners[channelID] ?? []).compactMap { id -> (deviceID: String, applied: Bool)? in
                guard let activity = state.activities[id], deviceIDs.contains(activity.deviceID), activity.endTime(at: now) == nil,
                    let applied = state.activities[id]?.receive(payload, at: now)
                else { return nil }
                return (activity.deviceID, applied)
            }
        }
    }
}
