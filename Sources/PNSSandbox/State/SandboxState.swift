import Foundation
import Pushgate
import Synchronization

/// Everything the sandbox remembers: devices and their inboxes, scripted faults, issued access
/// tokens and provider-token verdicts. One lock; every operation is short and never suspends, so
/// the services' hot path takes it without an actor hop (a broadcast makes 5–6 state calls per
/// request). The public methods stay `async` so that callers' `await` keeps compiling unchanged.
public final class SandboxState: Sendable {
    /// Counts of answers per service and status.
    struct AnswerKey: Hashable {
        var service: String
        var status: Int
    }

    private struct Storage {
        var devices: [String: SandboxDevice] = [:]
        var deviceByHandle: [String: String] = [:]
        /// What each device received, oldest first, at most `inboxLimit` per device (nil: all).
        var inboxes: [String: [ReceivedNotification]] = [:]
        /// How many notifications each device received, kept or not.
        var receivedCounts: [String: Int] = [:]
        var faults: [SandboxFault] = []
        var nextDeviceNumber = 1
        /// APNs provider tokens already judged: the verdict (nil = accepted) and the token's `iat`.
        var providerTokens: [String: (verdict: String?, issuedAt: Double?)] = [:]
        /// APNs signing keys trusted besides the credentials' own (a rotation), public keys by id.
        var apnsKeys: [String: String] = [:]
        /// Provider tokens that verified, by the key id that signed them.
        var apnsTokensByKey: [String: Int] = [:]
        /// The `iat` of the newest accepted provider token per key id and connection.
        var newestProviderTokenIssuedAt: [ProviderTokenScope: Double] = [:]
        var accessTokens: [String: Double] = [:]
        var answered: [AnswerKey: Int] = [:]
        /// FCM topic subscriptions: the topics of each registration token (Instance ID API).
        var topicsByToken: [String: Set<String>] = [:]
        /// Web Push: each subscription's secrets, by endpoint.
        var webPushKeys: [String: SandboxWebPushKeys] = [:]
    }

    struct ProviderTokenScope: Hashable {
        var keyID: String
        var connection: UInt64
    }

    private let storage = Mutex(Storage())
    /// Scripted faults outstanding: the hot path skips the fault lookup when there are none.
    private let pendingFaults = Atomic<Int>(0)

    let clock: any PushgateClock
    /// Notifications kept per device: nil keeps every one (the default), 0 keeps none (counts only,
    /// `GET /stats/inboxes` still works), N keeps the newest N.
    let inboxLimit: Int?

    /// Whether a delivered notification is stored (services skip building it otherwise).
    var keepsInboxes: Bool { inboxLimit != 0 }

    /// Live Activities, their tokens and the apps' broadcast channels.
    public let liveActivities: SandboxLiveActivities

    init(clock: any PushgateClock, inboxLimit: Int? = nil, channelLimit: Int = 10_000) {
        self.clock = clock
        self.inboxLimit = inboxLimit
        liveActivities = SandboxLiveActivities(clock: clock, channelLimit: channelLimit)
    }

    // MARK: Devices

    /// Registers a device with `handle` on `platform`.
    func addDevice(platform: Platform, handle: String, belongsToAnotherApp: Bool = false) -> SandboxDevice {
        storage.withLock { state in
            let id = "\(platform.rawValue)-\(state.nextDeviceNumber)"
            state.nextDeviceNumber += 1
            let device = SandboxDevice(
                id: id, platform: platform, handle: handle, status: .active, goneAtMilliseconds: nil, canonicalHandle: nil,
                belongsToAnotherApp: belongsToAnotherApp)
            state.devices[id] = device
            state.deviceByHandle[handle] = id
            return device
        }
    }

    /// Registers a browser (or a UnifiedPush app): its handle is the subscription JSON; the Web
    /// Push service finds it by its endpoint and decrypts with `keys`.
    func addWebPushDevice(platform: Platform = .browser, handle: String, endpoint: String, keys: SandboxWebPushKeys) -> SandboxDevice {
        let device = addDevice(platform: platform, handle: handle)
        storage.withLock { state in
            state.deviceByHandle[endpoint] = device.id
            state.webPushKeys[endpoint] = keys
        }
        return device
    }

    func webPushSubscription(endpoint: String) -> SandboxWebPushKeys? { storage.withLock { $0.webPushKeys[endpoint] } }

    public func device(id: String) async -> SandboxDevice? { storage.withLock { $0.devices[id] } }

    public func device(handle: String) async -> SandboxDevice? { lookUp(handle: handle) }

    /// The hot path's lookup (no suspension).
    func lookUp(handle: String) -> SandboxDevice? {
        storage.withLock { state in state.deviceByHandle[handle].flatMap { state.devices[$0] } }
    }

    /// The hot path's lookup by id (no suspension).
    func lookUp(id: String) -> SandboxDevice? { storage.withLock { $0.devices[id] } }

    public func allDevices() async -> [SandboxDevice] { storage.withLock { Array($0.devices.values) }.sorted { $0.id < $1.id } }

    /// Marks a device uninstalled (or expired): the service answers "gone" from now on.
    @discardableResult
    public func setStatus(_ status: SandboxDevice.Status, deviceID: String) async -> SandboxDevice? {
        let now = Int64(clock.now.secondsSinceEpoch * 1000)
        return storage.withLock { state in
            guard var device = state.devices[deviceID] else { return nil }
            device.status = status
            device.goneAtMilliseconds = status == .active ? nil : now
            state.devices[deviceID] = device
            return device
        }
    }

    /// Legacy GCM: answers future sends to this device with a canonical `registration_id`.
    @discardableResult
    public func setCanonicalHandle(_ canonical: String?, deviceID: String) async -> SandboxDevice? {
        storage.withLock { state in
            guard var device = state.devices[deviceID] else { return nil }
            device.canonicalHandle = canonical
            state.devices[deviceID] = device
            if let canonical { state.deviceByHandle[canonical] = deviceID }
            return device
        }
    }

    /// What the device received (the newest `inboxLimit` when set), oldest first.
    public func inbox(deviceID: String) async -> [ReceivedNotification] { storage.withLock { $0.inboxes[deviceID] ?? [] } }

    /// Subscribes (or, with `subscribe` false, unsubscribes) FCM registration tokens to `topic`;
    /// per token nil, or the Instance ID API's error (`NOT_FOUND` for a token it does not know,
    /// `TOO_MANY_TOPICS` past Firebase's 2,000 topics per app instance).
    public func changeSubscriptions(tokens: [String], topic: String, subscribe: Bool) -> [String?] {
        storage.withLock { state in
            tokens.map { token -> String? in
                guard let id = state.deviceByHandle[token], let device = state.devices[id], device.platform == .fcm else {
                    return "NOT_FOUND"
                }
                if subscribe {
                    var topics = state.topicsByToken[token, default: []]
                    guard topics.contains(topic) || topics.count < SandboxAssumptions.fcmMaximumTopicsPerInstance else {
                        return "TOO_MANY_TOPICS"
                    }
                    topics.insert(topic)
                    state.topicsByToken[token] = topics
                } else {
                    state.topicsByToken[token]?.remove(topic)
                }
                return nil
            }
        }
    }

    /// The active FCM devices whose topics satisfy `matches` (a topic send's audience).
    func fcmSubscribers(where matches: (Set<String>) -> Bool) -> [SandboxDevice] {
        storage.withLock { state in
            state.topicsByToken.compactMap { token, topics in
                guard matches(topics), let id = state.deviceByHandle[token], let device = state.devices[id], device.platform == .fcm,
                    device.status == .active, !device.belongsToAnotherApp
                else { return nil }
                return device
            }.sorted { $0.id < $1.id }
        }
    }

    /// Every notification received on `platform` (kept in an inbox or not).
    public func receivedCount(platform: Platform? = nil) async -> Int {
        storage.withLock { state in
            state.receivedCounts.reduce(0) { total, entry in
                total + (platform == nil || state.devices[entry.key]?.platform == platform ? entry.value : 0)
            }
        }
    }

    /// How many devices received how many notifications: `{"1": 99998, "2": 2}` (keys are counts),
    /// and the total under `"total"`. Counts every delivery, whatever the inbox limit.
    public func inboxHistogram() async -> [String: Int] {
        storage.withLock { state in
            var histogram: [String: Int] = ["total": 0]
            for count in state.receivedCounts.values where count > 0 {
                histogram[String(count), default: 0] += 1
                histogram["total", default: 0] += count
            }
            return histogram
        }
    }

    /// Counts a delivery to `deviceID`, and keeps `notification` (built only when
    /// ``keepsInboxes``) within the inbox limit.
    func deliver(deviceID: String, _ notification: ReceivedNotification?) {
        let limit = inboxLimit
        storage.withLock { state in
            state.receivedCounts[deviceID, default: 0] += 1
            guard let notification, limit != 0 else { return }
            state.inboxes[deviceID, default: []].append(notification)
            if let limit, let count = state.inboxes[deviceID]?.count, count > limit {
                state.inboxes[deviceID]?.removeFirst(count - limit)
            }
        }
    }

    // MARK: Faults

    public func addFault(_ fault: SandboxFault) async {
        guard fault.count > 0 else { return }
        storage.withLock {
            $0.faults.append(fault)
            pendingFaults.add(1, ordering: .releasing)
        }
    }

    /// Uses left of the scripted faults: each request a fault answers takes one, on arrival.
    public func remainingFaultUses() async -> Int { storage.withLock { $0.faults.reduce(0) { $0 + $1.count } } }

    public func clearFaults() async {
        storage.withLock { state in
            pendingFaults.subtract(state.faults.count, ordering: .releasing)
            state.faults.removeAll()
        }
    }

    /// Takes one use of the first fault matching `service` and `handle` (no lock when none is scripted).
    func takeFault(service: SandboxFault.Service, handle: String?) -> SandboxFault.Action? {
        guard pendingFaults.load(ordering: .acquiring) > 0 else { return nil }
        return storage.withLock { state -> SandboxFault.Action? in
            guard
                let index = state.faults.firstIndex(where: { fault in
                    fault.service == service && (fault.handle == nil || fault.handle == handle)
                })
            else { return nil }
            let action = state.faults[index].action
            state.faults[index].count -= 1
            if state.faults[index].count <= 0 {
                state.faults.remove(at: index)
                pendingFaults.subtract(1, ordering: .releasing)
            }
            return action
        }
    }

    // MARK: Tokens

    /// The cached verdict on a provider token (outer nil: never judged) and its `iat`.
    func providerToken(_ token: String) -> (verdict: String?, issuedAt: Double?)? { storage.withLock { $0.providerTokens[token] } }

    /// Trusts another APNs signing key of the team (Apple allows two at once, for rotation).
    func trustAPNSKey(id: String, publicKeyPEM: String) { storage.withLock { $0.apnsKeys[id] = publicKeyPEM } }

    func trustedAPNSKey(id: String) -> String? { storage.withLock { $0.apnsKeys[id] } }

    func recordAPNSToken(keyID: String) { storage.withLock { $0.apnsTokensByKey[keyID, default: 0] += 1 } }

    /// How many distinct provider tokens signed with `keyID` verified.
    public func apnsTokens(keyID: String) -> Int { storage.withLock { $0.apnsTokensByKey[keyID] ?? 0 } }

    func recordProviderToken(_ token: String, verdict: String?, issuedAt: Double?) {
        storage.withLock { $0.providerTokens[token] = (verdict, issuedAt) }
    }

    /// Accepts a valid provider token issued at `issuedAt` for `keyID` on `connection`, unless the
    /// connection used an older token and this one comes sooner than `minimumInterval` after it
    /// (APNs `TooManyProviderTokenUpdates`). Tokens of the same age or older are accepted.
    func acceptProviderToken(keyID: String, connection: UInt64, issuedAt: Double, minimumInterval: Double) -> Bool {
        let key = ProviderTokenScope(keyID: keyID, connection: connection)
        return storage.withLock { state in
            if let previous = state.newestProviderTokenIssuedAt[key], issuedAt > previous, issuedAt - previous < minimumInterval {
                return false
            }
            state.newestProviderTokenIssuedAt[key] = max(issuedAt, state.newestProviderTokenIssuedAt[key] ?? issuedAt)
            return true
        }
    }

    func issueAccessToken(prefix: String, lifetime: Double) -> String {
        let token = prefix + SandboxCredentials.randomToken(64)
        let expiry = clock.now.secondsSinceEpoch + lifetime
        storage.withLock { $0.accessTokens[token] = expiry }
        return token
    }

    /// Whether `token` was issued here and has not expired.
    func isAccessTokenValid(_ token: String) -> Bool {
        guard let expiry = storage.withLock({ $0.accessTokens[token] }) else { return false }
        return clock.now.secondsSinceEpoch < expiry
    }

    /// Forgets every access token (forces the gateway to refresh).
    public func revokeAccessTokens() async { storage.withLock { $0.accessTokens.removeAll() } }

    func count(_ service: String, status: Int) {
        storage.withLock { $0.answered[AnswerKey(service: service, status: status), default: 0] += 1 }
    }

    /// Requests answered so far, by `"<service> <status>"`.
    public func answeredCounts() async -> [String: Int] {
        storage.withLock { state in
            Dictionary(uniqueKeysWithValues: state.answered.map { ("\($0.key.service) \($0.key.status)", $0.value) })
        }
    }
}
