import Pushgate
import PushgateDispatch

/// The tutorial API's registrations, with its semantics: an id reserved per user, a user's own
/// registrations written and deleted by that user (an admin may touch any), the device no other
/// user's. It takes only the registration store, the app's handle rules as they are now (a reload
/// changes them) and the limits.
public struct Registrations: Sendable {
    let store: any RegistrationStore
    let appID: AppID
    let current: @Sendable () -> LoadedApp
    let limits: LimitsConfiguration
    let clock: any PushgateClock
    /// The app's providers, whose checks a handle passes before it is stored (``admit(_:for:)``).
    let dispatcher: Dispatcher

    package init(
        store: any RegistrationStore, app: AppID, current: @escaping @Sendable () -> LoadedApp, limits: LimitsConfiguration,
        clock: any PushgateClock, dispatcher: Dispatcher
    ) {
        self.store = store
        self.appID = app
        self.current = current
        self.limits = limits
        self.clock = clock
        self.dispatcher = dispatcher
    }

    /// The app's handle rules as they are now.
    var handles: HandlePolicy { current().configuration.handles }

    func now() -> Timestamp { clock.now }

    /// `POST /api/register?handle=H`: the id of the caller's own registration with handle H (the
    /// caller's other registrations of H are deleted), or a fresh id reserved for the caller.
    ///
    /// Another user's registration of H is neither disclosed nor deleted: the caller gets a fresh
    /// id, and its `PUT` with H is then refused with 409 while the other registration exists.
    public func reserveID(handle: String?, user: AuthenticatedUser) async throws(GatewayError) -> RegistrationID {
        if let handle, !handle.isEmpty {
            guard handle.utf8.count <= Self.maximumHandleQueryBytes else {
                throw .badRequest("handle is longer than \(Self.maximumHandleQueryBytes) bytes")
            }
            var own = try await ownRegistrationIDs(handle: handle, user: user)
            if own.isEmpty, handle.allSatisfy(\.isHexDigit) {
                own = try await ownRegistrationIDs(handle: handle.lowercased(), user: user)
            }
            if let first = own.first {
                for duplicate in own.dropFirst() {
                    _ = try await storeCall { () throws(StoreError) in try await store.delete(id: duplicate, app: appID) }
                }
                return first
            }
        }
        let owner = user.name
        let limit = limits.maximumReservationsPerUser
        let time = now()
        return try await storeCall { () throws(StoreError) in
            try await store.createRegistrationID(app: appID, owner: owner, maximumReserved: limit, now: time)
        }
    }

    /// No platform's handle is longer (WNS channel URIs are the longest, at most 2,048 bytes).
    package static let maximumHandleQueryBytes = 4096

    /// The registrations holding `handle`: as given; a browser's subscription (JSON) in
    /// canonical form; or, for an `https` URL, also every browser subscription of that endpoint
    /// (a browser re-subscribing keeps its endpoint and gets new keys).
    package func holders(of handle: String) async throws(GatewayError) -> [Registration] {
        let ids = try await self.ids(holding: handle)
        var holders: [Registration] = []
        for id in ids {
            if let registration = try await storeCall({ () throws(StoreError) in try await store.registration(id: id, app: appID) }) {
                holders.append(registration)
            }
        }
        return holders
    }

    /// Ids of the registrations holding `handle` (see ``holders(of:)``), in id order. An endpoint
    /// is compared in canonical form (the host in lower case, no `:443`), as it is stored.
    package func ids(holding handle: String) async throws(GatewayError) -> [RegistrationID] {
        var ids = try await storeCall { () throws(StoreError) in try await store.registrationIDs(handle: handle, app: appID) }
        let prefix: String? =
            if handle.prefix(8).lowercased() == "https://" {
                WebPushSubscription.handlePrefix(
                    endpoint: (try? handles.canonicalWebPushEndpoint(handle)) ?? handle)
            } else if handle.hasPrefix("{"),
                let canonical = (try? handles.validate(handle, for: .browser)) ?? (try? handles.validate(handle, for: .unifiedpush)),
                let subscription = WebPushSubscription(handleValue: canonical.value)
            {
                WebPushSubscription.handlePrefix(endpoint: subscription.endpoint)
            } else {
                nil
            }
        if let prefix {
            let more = try await storeCall { () throws(StoreError) in try await store.registrationIDs(handlePrefix: prefix, app: appID) }
            ids = Array(Set(ids + more)).sorted()
        }
        return ids
    }

    /// Ids of `user`'s registrations holding `handle`.
    package func ownRegistrationIDs(handle: String, user: AuthenticatedUser) async throws(GatewayError) -> [RegistrationID] {
        try await holders(of: handle).filter { $0.owner.isUser(user.name) }.map(\.id)
    }

    /// The body of `PUT /api/register/{id}`: `{"Platform", "Handle", "Tags"}` (any key case), and
    /// for an APNs Live Activity token `Kind` (`pushToStart` with `AttributesType`, `liveActivity`
    /// with `Activity`, the activity's name).
    public struct DeviceRegistration: Sendable, Hashable {
        public var platform: String
        public var handle: String
        public var tags: [String]
        public var kind: String?
        public var attributesType: String?
        public var activity: String?

        /// Tags one registration may carry (Notification Hubs allows 60).
        public static let maximumTags = 60

        public init(platform: String, handle: String, tags: [String]) {
            self.platform = platform
            self.handle = handle
            self.tags = tags
        }

        /// Parses the JSON body; errors name the offending field.
        public init(json bytes: [UInt8]) throws(GatewayError) {
            let root: JSONValue
            do { root = try JSONParser.parse(bytes) } catch { throw .badRequest("body: \(error.description)") }
            guard let members = root.objectMembers else { throw .badRequest("body must be a JSON object with Platform, Handle and Tags") }
            func field(_ name: String) -> JSONValue? { members.first(where: { $0.key.lowercased() == name })?.value }
            guard let platform = field("platform")?.stringValue else {
                throw .badRequest("\"Platform\" is required (\(Platform.alternatives))")
            }
            // A browser's subscription may come as the object `PushSubscription.toJSON()` gives.
            guard let value = field("handle"), let handle = DeviceHandle.text(fromJSON: value) else {
                throw .badRequest("\"Handle\" is required (the device token, channel URI or browser subscription)")
            }
            var tags: [String] = []
            if let value = field("tags"), value.kind != .null {
                guard let elements = value.arrayElements else { throw .badRequest("\"Tags\" must be an array of strings") }
                guard elements.count <= Self.maximumTags else {
                    throw .badRequest("\"Tags\" has \(elements.count) tags; a registration carries at most \(Self.maximumTags)")
                }
                for (index, element) in elements.enumerated() {
                    guard let tag = element.stringValue else { throw .badRequest("\"Tags\"[\(index)] must be a string") }
                    tags.append(tag)
                }
            }
            self.init(platform: platform, handle: handle, tags: tags)
            for name in ["kind", "attributestype", "activity"] {
                guard let value = field(name), value.kind != .null else { continue }
                guard let text = value.stringValue else {
                    throw .badRequest("\"\(name == "attributestype" ? "AttributesType" : name.capitalized)\" must be a string")
                }
                switch name {
                case "kind": kind = text
                case "attributestype": attributesType = text
                default: activity = text
                }
            }
        }
    }

    /// `PUT /api/register/{id}`: creates or updates the registration, adding `username:<user>`.
    public func upsert(id text: String, _ input: DeviceRegistration, user: AuthenticatedUser) async throws(GatewayError) {
        let id = try Self.registrationID(text)
        guard let platform = Platform(rawValue: input.platform.lowercased()) else {
            throw .badRequest("Platform '\(input.platform.prefix(40))' is not supported; use \(Platform.alternatives)")
        }
        let handle = try await admit(input.handle, for: platform)
        let kind: RegistrationKind
        do { kind = try RegistrationKind(apiName: input.kind, attributesType: input.attributesType, activity: input.activity) } catch {
            throw .badRequest(error.description)
        }
        guard kind.admits(platform) else { throw .badRequest("Kind \(kind.apiName) is an APNs Live Activity token: Platform must be apns") }
        var tags: [Tag]
        do { tags = try TagPolicy.check(input.tags, writer: .user(name: user.name, isAdmin: user.isAdmin)) } catch {
            let field = error.index.map { "\"Tags\"[\($0)]" } ?? "\"Tags\""
            throw error.isForbidden ? .forbidden("\(field): \(error.description)") : .badRequest("\(field): \(error.description)")
        }
        do { tags.append(try Tag.username(user.name)) } catch { throw .badRequest("user name cannot be a tag: \(error.description)") }
        let registration: Registration
        do {
            // An update token dies with its activity: at most 8 h of activity and 4 h on the Lock
            // Screen after its end.
            let expiry = kind.activityName == nil ? nil : now().adding(seconds: LiveActivityMessage.maximumLifetimeSeconds)
            registration = try Registration(app: appID, id: id, handle: handle, tags: tags, expiresAt: expiry, owner: user.name, kind: kind)
        } catch {
            throw .badRequest(error.description)
        }
        // The id must be unused or the user's, and the device no other user's (an admin may take
        // either): checked by the store in the write's own transaction, one trip.
        let writer =
            user.isAdmin
            ? nil
            : WriterGuard(
                owner: user.name, handle: handle.value,
                handlePrefixes: platform.isWebPush
                    ? WebPushSubscription(handleValue: handle.value).map { [WebPushSubscription.handlePrefix(endpoint: $0.endpoint)] } ?? []
                    : [],
                maximumRegistrations: limits.maximumRegistrationsPerUser)
        let time = now()
        try await storeCall { () throws(StoreError) in try await store.upsert(registration, now: time, writer: writer) }
    }

    /// The one check a registration's handle passes before it is stored: the app's handle rules
    /// as they are now (``HandlePolicy``), then its platform provider's own (a UnifiedPush
    /// endpoint's discovery answer, made once per host and kept: ``HandleAdmitting``). Errors
    /// name the field (`Handle: …`) and, for UnifiedPush, the endpoint's host and why.
    package func admit(_ text: String, for platform: Platform) async throws(GatewayError) -> DeviceHandle {
        let handle: DeviceHandle
        do { handle = try handles.validate(text, for: platform) } catch {
            throw .badRequest("Handle: \(error.description)")
        }
        if let problem = await dispatcher.admissionProblem(handle) { throw .badRequest("Handle: \(problem)") }
        return handle
    }

    /// `DELETE /api/register/{id}`: only the owner or an admin.
    public func delete(id text: String, user: AuthenticatedUser) async throws(GatewayError) {
        let id = try Self.registrationID(text)
        let existing = try await storeCall { () throws(StoreError) in try await store.registration(id: id, app: appID) }
        guard let existing else { throw .notFound("registration \(id) not found") }
        guard existing.owner.isUser(user.name) || user.isAdmin else { throw .forbidden("registration \(id) belongs to another user") }
        _ = try await storeCall { () throws(StoreError) in try await store.delete(id: id, app: appID) }
    }

    /// `GET /api/registrations`: the user's own registrations (an admin's: everyone's), optionally
    /// only those matching a tag expression, ordered by id, at most `limit`.
    public func list(user: AuthenticatedUser, tagExpression: String?, limit: Int) async throws(GatewayError) -> [Registration] {
        var expression: TagExpression?
        if let text = tagExpression, !text.isEmpty {
            do { expression = try TagExpression(parsing: text) } catch { throw .badRequest("tags: \(error.description)") }
        }
        guard (1...1000).contains(limit) else { throw .badRequest("limit must be between 1 and 1000, not \(limit)") }
        if !user.isAdmin {
            let own: TagExpression
            do { own = .tag(try Tag.username(user.name)) } catch { return [] }
            expression = expression.map { .and(own, $0) } ?? own
        }
        var found: [Registration] = []
        do {
            for try await batch in store.registrations(
                matching: expression, platforms: .all, app: appID, batchSize: min(limit, 500), now: now())
            {
                found += batch.filter { user.isAdmin || $0.owner.isUser(user.name) }
                if found.count >= limit { break }
            }
        } catch {
            throw GatewayError(.unavailable, "the registration store is unavailable")
        }
        return Array(found.prefix(limit))
    }

    package static func registrationID(_ text: String) throws(GatewayError) -> RegistrationID {
        do { return try RegistrationID(text) } catch { throw .badRequest(error.description) }
    }
}

extension Gateway {
    /// The body of `PUT /api/register/{id}` (``Registrations/DeviceRegistration``).
    public typealias DeviceRegistration = Registrations.DeviceRegistration
}
