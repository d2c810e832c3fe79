import Pushgate

/// The Live Activities an app's users and its hub have started: what the store keeps of each
/// (its newest stamp, event and content state, its sends at priority 10) and the devices that
/// follow it (its update tokens, masked). Sends go through ``Sends`` like every send.
public struct LiveActivities: Sendable {
    let store: any GatewayStore
    let appID: AppID
    let clock: any PushgateClock

    /// One activity as the APIs and the console show it.
    public struct Activity: Sendable, Hashable, Encodable {
        public var name: String
        public var owner: String
        public var stamp: Int64
        public var event: String
        public var sends: Int
        /// Sends at priority 10 (each spends the device's budget).
        public var immediateSends: Int
        /// The newest content state sent, as JSON text.
        public var contentState: String?
        public var startedAt: Double
        public var updatedAt: Double
        public var endedAt: Double?
        /// The broadcast channel its devices listen to, if any.
        public var channel: String?
        /// Its update tokens (the devices following it), masked; absent in lists.
        public var devices: [String]?
    }

    static func activity(_ record: LiveActivityRecord, devices: [String]?) -> Activity {
        Activity(
            name: record.key.name.rawValue, owner: record.key.owner.exportText, stamp: record.stamp, event: record.event.rawValue,
            sends: record.sends, immediateSends: record.immediateSends, contentState: record.contentState,
            startedAt: record.startedAt.secondsSinceEpoch, updatedAt: record.updatedAt.secondsSinceEpoch,
            endedAt: record.endedAt?.secondsSinceEpoch, channel: record.channel, devices: devices)
    }

    /// The activities of `owner` (every owner's when nil: an admin, a hub key), newest first.
    public func list(owner: RegistrationOwner?, limit: Int) async throws(GatewayError) -> [Activity] {
        guard (1...1000).contains(limit) else { throw .badRequest("limit must be between 1 and 1000, not \(limit)") }
        let records = try await storeCall { () throws(StoreError) in try await store.activities(app: appID, owner: owner, limit: limit) }
        return records.map { Self.activity($0, devices: nil) }
    }

    /// One activity with the devices following it.
    public func show(owner: RegistrationOwner, name text: String) async throws(GatewayError) -> Activity {
        let name: ActivityName
        do { name = try ActivityName(text) } catch { throw .badRequest(error.description) }
        let key = LiveActivityKey(app: appID, owner: owner, name: name)
        guard let record = try await storeCall({ () throws(StoreError) in try await store.activity(key) }) else {
            throw .notFound("no Live Activity '\(name)' of \(owner.exportText)")
        }
        var devices: [String] = []
        do {
            for try await page in store.deliveryTargets(
                selecting: key.updateTokens, platforms: PlatformSelection([.apns]), app: appID, pageSize: 100, now: clock.now)
            {
                devices += page.map(\.reported)
                if devices.count >= 1000 { break }
            }
        } catch {
            throw GatewayError(.unavailable, "the registration store is unavailable")
        }
        return Self.activity(record, devices: devices)
    }
}
