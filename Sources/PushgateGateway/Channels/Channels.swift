import Logging
import Pushgate
import PushgateDispatch
import Synchronization

/// An app's APNs broadcast channels (iOS 18): created at Apple under a name of the app's choosing
/// and kept in the store, listed beside what Apple lists, shown with Apple's answer, deleted at
/// Apple and in the store. Needs APNs token authentication (``Access``).
///
/// The app's limit (`apns.maxChannels`) is checked before Apple is asked; the store checks it
/// again when it keeps the channel, and a channel it refuses then is deleted at Apple again.
public final class Channels: Sendable {
    /// How Apple's management API is reached: the settings of a client, or why there are none.
    /// The composition root sets it from `services.apns` (``connect(_:)``).
    public enum Access: Sendable {
        case apple(APNSChannelClient.Settings)
        /// Channel management is not possible, and the reason says which setting to change.
        case unavailable(String)
    }

    /// One channel as the APIs show it.
    public struct Channel: Sendable, Hashable, Encodable {
        /// Its name in Pushgate; absent for a channel Pushgate did not create.
        public var name: String?
        /// Apple's id (base64), sent as `apns-channel-id`.
        public var channelId: String
        /// 0 no message stored, 1 the most recent one; absent where only Apple's list names it.
        public var storagePolicy: Int?
        public var createdAt: Double?
        /// Created by Pushgate (kept in its store); false: not Pushgate's.
        public var managed: Bool
        /// Apple knows it (lists it, or answered its read).
        public var atApple: Bool
        /// The `apns-request-id` of its creation (in a create's answer).
        public var requestId: String?
        /// What is unusual about it.
        public var note: String?
    }

    /// What a delete did.
    public struct Deletion: Sendable, Hashable, Encodable {
        public var name: String
        public var channelId: String
        /// Deleted at Apple now; false when Apple no longer knew it (`ChannelNotRegistered`).
        public var deletedAtApple: Bool
        public var note: String?
    }

    /// The longest channel name.
    public static let maximumNameLength = 64

    let store: any LiveActivityStore
    let app: @Sendable () -> LoadedApp
    let clock: any PushgateClock
    let logger: Logger
    private let access = Mutex(Access.unavailable("channel management is not connected: the gateway was built without APNs credentials"))

    package init(store: any LiveActivityStore, app: @escaping @Sendable () -> LoadedApp, clock: any PushgateClock, logger: Logger) {
        self.store = store
        self.app = app
        self.clock = clock
        self.logger = logger
    }

    /// Sets how Apple is reached (at start and at each reload).
    public func connect(_ access: Access) { self.access.withLock { $0 = access } }

    private var appID: AppID { app().id }

    /// Creates a channel at Apple and keeps it under `name`.
    public func create(name: String, storagePolicy: Int) async throws(GatewayError) -> Channel {
        try Self.check(name: name)
        guard storagePolicy == 0 || storagePolicy == 1 else {
            throw .badRequest("storagePolicy must be 0 (no message stored) or 1 (the most recent message stored), not \(storagePolicy)")
        }
        let (appID, maximum) = (self.appID, app().configuration.services.apns?.maximumChannels ?? 0)
        let settings = try settings()
        // Refused before the wire: a name taken, or the app's limit reached.
        let stored = try await storeCall { () throws(StoreError) in try await store.channels(app: appID) }
        if stored.contains(where: { $0.name == name }) { throw Gateway.storeFailure(APNSChannel.nameTaken(name)) }
        if stored.count >= maximum { throw Gateway.storeFailure(APNSChannel.limitReached(maximum)) }

        let created = try await withClient(settings) { client throws(APNSChannelError) in
            try await client.create(storagePolicy: storagePolicy)
        }
        let channel = APNSChannel(
            app: appID, name: name, channelID: created.channelID, storagePolicy: storagePolicy, createdAt: clock.now)
        let kept: StoreError?
        do {
            try await store.addChannel(channel, maximum: maximum)
            kept = nil
        } catch {
            kept = error
        }
        if let refusal = kept {
            // Another create won the name or the last place meanwhile: Apple's channel is not ours to keep.
            await undo(created.channelID, settings: settings, name: name)
            throw Gateway.storeFailure(refusal)
        }
        logger.info("broadcast channel created", metadata: ["channel": "\(name)", "apns-channel-id": "\(created.channelID)"])
        var answer = Self.channel(channel, atApple: true)
        answer.requestId = created.requestID
        return answer
    }

    /// The store's channels (by name), then those Apple lists that Pushgate did not create.
    public func list() async throws(GatewayError) -> [Channel] {
        let appID = self.appID
        let settings = try settings()
        let stored = try await storeCall { () throws(StoreError) in try await store.channels(app: appID) }
        let listed = try await withClient(settings) { client throws(APNSChannelError) in try await client.list() }
        let atApple = Set(listed)
        var channels = stored.sorted { $0.name < $1.name }.map { Self.channel($0, atApple: atApple.contains($0.channelID)) }
        let ours = Set(stored.map(\.channelID))
        for id in listed where !ours.contains(id) {
            channels.append(
                Channel(
                    channelId: id, managed: false, atApple: true,
                    note: "not Pushgate's: created at Apple by other software (or removed from Pushgate's store)"))
        }
        return channels
    }

    /// One channel, with what Apple answers for it now.
    public func show(name: String) async throws(GatewayError) -> Channel {
        let settings = try settings()
        let channel = try await stored(name)
        let read: Result<Int, APNSChannelError> = await withClientResult(settings) { client throws(APNSChannelError) in
            try await client.read(channel.channelID)
        }
        switch read {
        case .success(let policy):
            var answer = Self.channel(channel, atApple: true)
            answer.storagePolicy = policy
            return answer
        case .failure(let error) where error.isChannelNotRegistered:
            return Self.channel(channel, atApple: false)
        case .failure(let error):
            throw Self.failure(error)
        }
    }

    /// Deletes a channel at Apple and in the store. When Apple no longer knows it
    /// (`ChannelNotRegistered`), it is still removed here, and the answer says so.
    public func delete(name: String) async throws(GatewayError) -> Deletion {
        let settings = try settings()
        let channel = try await stored(name)
        let deleted: Result<Void, APNSChannelError> = await withClientResult(settings) { client throws(APNSChannelError) in
            try await client.delete(channel.channelID)
        }
        var deletion = Deletion(name: name, channelId: channel.channelID, deletedAtApple: true)
        switch deleted {
        case .success: break
        case .failure(let error) where error.isChannelNotRegistered:
            deletion.deletedAtApple = false
            deletion.note = "Apple no longer knew the channel (ChannelNotRegistered); removed from Pushgate"
        case .failure(let error):
            throw Self.failure(error)
        }
        let appID = self.appID
        _ = try await storeCall { () throws(StoreError) in try await store.removeChannel(app: appID, name: name) }
        logger.info(
            "broadcast channel deleted",
            metadata: ["channel": "\(name)", "apns-channel-id": "\(channel.channelID)", "at-apple": "\(deletion.deletedAtApple)"])
        return deletion
    }

    /// Whether `name` is a channel name: 1 to 64 ASCII letters, digits, `-`, `_` and `.`.
    public static func check(name: String) throws(GatewayError) {
        let valid =
            !name.isEmpty && name.utf8.count <= maximumNameLength
            && name.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                    || byte == 0x5F || byte == 0x2E
            }
        guard valid else {
            throw .badRequest(
                "channel name '\(name.prefix(70))' must be 1 to \(maximumNameLength) ASCII letters, digits, '-', '_' or '.'")
        }
    }

    private func stored(_ name: String) async throws(GatewayError) -> APNSChannel {
        try Self.check(name: name)
        let appID = self.appID
        guard let channel = try await storeCall({ () throws(StoreError) in try await store.channel(app: appID, name: name) }) else {
            throw .notFound("no broadcast channel named '\(name)'")
        }
        return channel
    }

    private func settings() throws(GatewayError) -> APNSChannelClient.Settings {
        switch access.withLock({ $0 }) {
        case .apple(let settings): return settings
        case .unavailable(let reason): throw GatewayError(.misconfigured, reason)
        }
    }

    static func channel(_ channel: APNSChannel, atApple: Bool) -> Channel {
        Channel(
            name: channel.name, channelId: channel.channelID, storagePolicy: channel.storagePolicy,
            createdAt: channel.createdAt.secondsSinceEpoch, managed: true, atApple: atApple,
            note: atApple ? nil : "Apple no longer knows it (deleted at Apple, or created in the other environment); delete it here")
    }
}
