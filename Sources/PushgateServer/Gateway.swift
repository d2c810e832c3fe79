import Foundation
import Pushgate
import PushgateConfig
import PushgateDispatch
import Synchronization

/// The app backend of the Notification Hubs tutorials, independent of HTTP: registrations with the
/// tutorial's semantics, and sends rendered per platform, dispatched, and reported as one result.
public final class Gateway: Sendable {
    public let app: LoadedApp
    public let store: any RegistrationStore & SecureMessageStore
    /// How long a secure-push payload can be fetched, in seconds. Default one day.
    public let secureMessageLifetime: Double
    public let dispatcher: Dispatcher
    private let now: @Sendable () -> Timestamp

    public init(
        app: LoadedApp, store: any RegistrationStore & SecureMessageStore, dispatcher: Dispatcher, secureMessageLifetime: Double = 86400,
        now: @escaping @Sendable () -> Timestamp = { Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970) }
    ) {
        self.app = app
        self.store = store
        self.secureMessageLifetime = secureMessageLifetime
        self.dispatcher = dispatcher
        self.now = now
    }

    var appID: AppID { app.id }

    // MARK: Registrations

    /// `POST /api/register?handle=H`: the id of an existing registration with handle H (other
    /// registrations of H are deleted), or a fresh id.
    public func createRegistrationID(handle: String?, user: AuthenticatedUser) async throws(GatewayError) -> RegistrationID {
        do {
            if let handle, !handle.isEmpty {
                var ids = try await store.registrationIDs(handle: handle, app: appID)
                if ids.isEmpty, handle.allSatisfy(\.isHexDigit) {
                    ids = try await store.registrationIDs(handle: handle.lowercased(), app: appID)
                }
                if let first = ids.first {
                    for duplicate in ids.dropFirst() { _ = try await store.delete(id: duplicate, app: appID) }
                    return first
                }
            }
            return try await store.createRegistrationID(app: appID, now: now())
        } catch {
            throw Self.storeFailure(error)
        }
    }

    /// The body of `PUT /api/register/{id}`: `{"Platform", "Handle", "Tags"}` (any key case).
    public struct DeviceRegistration: Sendable, Hashable {
        public var platform: String
        public var handle: String
        public var tags: [String]

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
                throw .badRequest("\"Platform\" is required (apns, fcm, gcm or wns)")
            }
            guard let handle = field("handle")?.stringValue else {
                throw .badRequest("\"Handle\" is required (the device token or channel URI)")
            }
            var tags: [String] = []
            if let value = field("tags"), value.kind != .null {
                guard let elements = value.arrayElements else { throw .badRequest("\"Tags\" must be an array of strings") }
                for (index, element) in elements.enumerated() {
                    guard let tag = element.stringValue else { throw .badRequest("\"Tags\"[\(index)] must be a string") }
                    tags.append(tag)
                }
            }
            self.init(platform: platform, handle: handle, tags: tags)
        }
    }

    /// `PUT /api/register/{id}`: creates or updates the registration, adding `username:<user>`.
    public func upsertRegistration(id text: String, _ input: DeviceRegistration, user: AuthenticatedUser) async throws(GatewayError) {
        let id: RegistrationID
        do { id = try RegistrationID(text) } catch { throw .badRequest(error.description) }
        guard let platform = Platform(rawValue: input.platform.lowercased()) else {
            throw .badRequest("Platform '\(input.platform)' is not supported; use apns, fcm, gcm or wns")
        }
        let handle: DeviceHandle
        do { handle = try app.configuration.handles.validate(input.handle, for: platform) } catch { throw .badRequest(error.description) }
        var tags: [Tag] = []
        for text in input.tags {
            do { tags.append(try Tag(text)) } catch { throw .badRequest(error.description) }
            if text.hasPrefix("username:"), text != "username:\(user.name)", !user.isAdmin {
                throw .forbidden("tag '\(text)' belongs to another user; the server adds username:\(user.name)")
            }
        }
        do { tags.append(try Tag.username(user.name)) } catch { throw .badRequest("user name cannot be a tag: \(error.description)") }
        let registration: Registration
        do {
            registration = try Registration(app: appID, id: id, handle: handle, tags: tags, owner: user.name)
        } catch {
            throw .badRequest(error.description)
        }
        do {
            if let existing = try await store.registration(id: id, app: appID), existing.owner != user.name, !user.isAdmin {
                throw GatewayError.forbidden("registration \(id) belongs to another user")
            }
            try await store.upsert(registration, now: now())
        } catch {
            throw Self.failure(error)
        }
    }

    /// `DELETE /api/register/{id}`: only the owner or an admin.
    public func deleteRegistration(id text: String, user: AuthenticatedUser) async throws(GatewayError) {
        let id: RegistrationID
        do { id = try RegistrationID(text) } catch { throw .badRequest(error.description) }
        do {
            guard let existing = try await store.registration(id: id, app: appID) else {
                throw GatewayError.notFound("registration \(id) not found")
            }
            guard existing.owner == user.name || user.isAdmin else {
                throw GatewayError.forbidden("registration \(id) belongs to another user")
            }
            _ = try await store.delete(id: id, app: appID)
        } catch {
            throw Self.failure(error)
        }
    }

    /// `GET /api/registrations`: the user's own registrations (an admin's: everyone's), optionally
    /// only those matching a tag expression, ordered by id, at most `limit`.
    public func registrations(user: AuthenticatedUser, tagExpression: String?, limit: Int) async throws(GatewayError) -> [Registration] {
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
                found += batch.filter { user.isAdmin || $0.owner == user.name }
                if found.count >= limit { break }
            }
        } catch {
            throw GatewayError(503, "the registration store is unavailable")
        }
        return Array(found.prefix(limit))
    }

    /// A refusal stays itself; a store error becomes its answer; anything else is a 500.
    static func failure(_ error: any Error) -> GatewayError {
        switch error {
        case let error as GatewayError: error
        case let error as StoreError: storeFailure(error)
        default: GatewayError(500, "store failure")
        }
    }

    static func storeFailure(_ error: StoreError) -> GatewayError {
        switch error.kind {
        case .gone: GatewayError.gone(error.message)
        case .storage: GatewayError(503, "the registration store is unavailable")
        }
    }

    // MARK: Sends

    /// What a send request asks for.
    public struct SendRequest: Sendable {
        public var pns: String?
        public var toTag: String?
        /// A tag expression instead of `to_tag` (`tags=` query parameter).
        public var tagExpression: String?
        /// The body: a JSON string (the message) or a JSON object of properties with `message`.
        public var body: [UInt8]

        public init(pns: String?, toTag: String?, tagExpression: String? = nil, body: [UInt8]) {
            self.pns = pns
            self.toTag = toTag
            self.tagExpression = tagExpression
            self.body = body
        }
    }

    /// The result and the HTTP status it deserves (200 processed, 404 no target, 503 nothing reachable).
    public struct SendOutcome: Sendable {
        public var result: NotificationResult
        public var status: Int
        /// For secure sends: the id the recipient redeems with `GET /api/notifications/{id}`.
        public var secureID: String?
    }

    /// Secure push: stores the message for the recipient (`to_tag`) and pushes only its id with the
    /// `secure` templates (`secureId` property).
    public func sendSecure(_ request: SendRequest, user: AuthenticatedUser) async throws(GatewayError) -> SendOutcome {
        try await deliver(try await prepareSecure(request, user: user))
    }

    /// Validates a secure send, stores its message, and renders the id-only payloads.
    public func prepareSecure(_ request: SendRequest, user: AuthenticatedUser) async throws(GatewayError) -> PreparedSend {
        guard let recipient = request.toTag, !recipient.isEmpty else {
            throw .badRequest("to_tag is required for secure push (the one user who may read the message)")
        }
        let properties = try Self.properties(from: request.body)
        let id = UUID().uuidString.lowercased()
        let body = Array(#"{"message":"","secureId":"\#(id)"}"#.utf8)
        // Validate and render before storing, so that a refused send leaves nothing behind.
        var prepared = try prepare(
            SendRequest(pns: request.pns, toTag: recipient, tagExpression: nil, body: body), user: user, purpose: "secure")
        let created = now()
        let message = SecureMessage(
            id: id, app: appID, recipient: recipient, sender: user.name, payload: properties["message"] ?? "", createdAt: created,
            expiresAt: created.adding(seconds: secureMessageLifetime))
        do { try await store.storeSecureMessage(message) } catch { throw Self.storeFailure(error) }
        prepared.secureID = id
        return prepared
    }

    /// `GET /api/notifications/{id}`: the payload, only for its recipient and before it expires.
    public func readSecure(id: String, user: AuthenticatedUser) async throws(GatewayError) -> SecureMessage {
        let message: SecureMessage?
        do { message = try await store.readSecureMessage(id: id, app: appID, recipient: user.name, now: now()) } catch {
            throw Self.storeFailure(error)
        }
        guard let message else { throw .notFound("no notification \(id) for \(user.name)") }
        return message
    }

    /// A validated send: payloads rendered once per platform, ready to dispatch.
    public struct PreparedSend: Sendable {
        var selection: PlatformSelection
        var expression: TagExpression
        var payloads: [Platform: RenderedNotification]
        /// Set for secure sends.
        var secureID: String?
    }

    /// `POST /api/notifications?pns=…&to_tag=…`.
    public func send(_ request: SendRequest, user: AuthenticatedUser, purpose: String = "notify") async throws(GatewayError) -> SendOutcome
    {
        try await deliver(try prepare(request, user: user, purpose: purpose))
    }

    /// Validates a send and renders its payloads; throws the error the caller deserves before
    /// anything is sent.
    public func prepare(_ request: SendRequest, user: AuthenticatedUser, purpose: String = "notify") throws(GatewayError) -> PreparedSend {
        guard let pns = request.pns, !pns.isEmpty else {
            throw .badRequest("pns is required: apns, fcm, gcm, wns, all or a comma-separated list")
        }
        let selection: PlatformSelection
        do { selection = try PlatformSelection(parsing: pns) } catch { throw .badRequest(error.description) }
        let expression: TagExpression
        if let text = request.tagExpression, !text.isEmpty {
            do { expression = try TagExpression(parsing: text) } catch { throw .badRequest(error.description) }
        } else if let toTag = request.toTag, !toTag.isEmpty {
            do { expression = .tag(try Tag.username(toTag)) } catch { throw .badRequest("to_tag: \(error.description)") }
        } else {
            throw .badRequest("to_tag is required (the recipient's user name), or tags= with a tag expression")
        }
        var properties = try Self.properties(from: request.body)
        properties["user"] = user.name

        guard let templates = app.templates[purpose] else { throw GatewayError(500, "no \(purpose) templates are configured") }
        var payloads: [Platform: RenderedNotification] = [:]
        for platform in selection.platforms {
            guard let template = templates[platform] else { continue }
            do {
                payloads[platform] = try template.render(properties)
            } catch {
                throw GatewayError(error.httpStatusCode, "\(platform): \(error.description)")
            }
        }
        return PreparedSend(selection: selection, expression: expression, payloads: payloads)
    }

    /// Dispatches a prepared send to every matching registration, applies what the services said
    /// about handles, and reports. `progress` is called after each batch of targets.
    public func deliver(
        _ prepared: PreparedSend, progress: (@Sendable (DispatchProgress) -> Void)? = nil
    ) async throws(GatewayError)
        -> SendOutcome
    {
        let notificationID = UUID().uuidString.lowercased()
        let sendTime = now()
        let stream = store.registrations(
            matching: prepared.expression, platforms: prepared.selection, app: appID, batchSize: 500, now: sendTime)
        let storeFailed = StoreFailureFlag()
        let targets = AsyncStream<[DispatchTarget]> { continuation in
            let task = Task {
                do {
                    for try await batch in stream {
                        continuation.yield(batch.map { DispatchTarget(registrationID: $0.id, handle: $0.handle) })
                    }
                } catch {
                    storeFailed.set()
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
        let summary = await dispatcher.dispatch(
            notificationID: notificationID, selection: prepared.selection, payloads: prepared.payloads, targets: targets,
            progress: progress)
        if storeFailed.isSet { throw GatewayError(503, "the registration store is unavailable") }
        if !summary.handleUpdates.isEmpty {
            let changes = summary.handleUpdates.map {
                StoredHandleChange(registrationID: $0.target.registrationID, change: $0.change, outcome: $0.outcome, reason: $0.reason)
            }
            try? await store.apply(changes, app: appID, now: now())
        }
        let status: Int
        switch summary.result.state {
        case .noTargetFound: status = 404
        case .abandoned: status = 503
        default: status = 200
        }
        return SendOutcome(result: summary.result, status: status, secureID: prepared.secureID)
    }

    /// The template properties from a send body: a JSON string is the message; a JSON object gives
    /// properties (string, number or boolean values) and must contain `message`.
    static func properties(from body: [UInt8]) throws(GatewayError) -> TemplateProperties {
        let value: JSONValue
        do { value = try JSONParser.parse(body) } catch { throw .badRequest("body: \(error.description)") }
        switch value.kind {
        case .string(let message):
            return ["message": message]
        case .object(let members):
            var properties = TemplateProperties()
            for member in members {
                guard member.key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }), !member.key.isEmpty else {
                    throw .badRequest("property name '\(member.key)' must be letters, digits and _")
                }
                switch member.value.kind {
                case .string(let text): properties[member.key] = text
                case .number(let text): properties[member.key] = text
                case .bool(let flag): properties[member.key] = flag ? "true" : "false"
                default: throw .badRequest("property '\(member.key)' must be a string, number or boolean")
                }
            }
            guard properties["message"] != nil else { throw .badRequest("the body object must contain \"message\"") }
            return properties
        default:
            throw .badRequest("body must be a JSON string (the message) or an object of properties")
        }
    }
}

/// Set once from a streaming task when the store fails mid-send.
final class StoreFailureFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
