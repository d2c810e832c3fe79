/// One app installation registered to receive pushes: where to reach it, which tags select it,
/// and optionally its own template.
public struct Registration: Sendable, Hashable {
    public var app: AppID
    public var id: RegistrationID
    public var handle: DeviceHandle
    /// Tags in sorted order, unique, at most ``Tag/maximumPerRegistration``.
    public private(set) var tags: [Tag]
    /// A template this registration renders with instead of the app's template for its platform.
    public var template: RegistrationTemplate?
    /// When the registration stops being used; nil means never.
    public var expiresAt: Timestamp?
    /// Who owns the registration: the authenticated user that wrote it, or the hub.
    public var owner: RegistrationOwner
    /// What the handle is for: a device (every ordinary send), or a Live Activity token.
    public var kind: RegistrationKind

    public var platform: Platform { handle.platform }

    public init(
        app: AppID = .default, id: RegistrationID, handle: DeviceHandle, tags: [Tag],
        template: RegistrationTemplate? = nil, expiresAt: Timestamp? = nil, owner: RegistrationOwner, kind: RegistrationKind = .device
    ) throws(TagError) {
        self.kind = kind
        self.app = app
        self.id = id
        self.handle = handle
        self.tags = []
        self.template = template
        self.expiresAt = expiresAt
        self.owner = owner
        try setTags(tags)
    }

    /// A registration of user `owner`.
    public init(
        app: AppID = .default, id: RegistrationID, handle: DeviceHandle, tags: [Tag],
        template: RegistrationTemplate? = nil, expiresAt: Timestamp? = nil, owner: String, kind: RegistrationKind = .device
    ) throws(TagError) {
        try self.init(
            app: app, id: id, handle: handle, tags: tags, template: template, expiresAt: expiresAt, owner: .user(owner), kind: kind)
    }

    /// Replaces the tags (deduplicated and sorted), enforcing the per-registration limit.
    public mutating func setTags(_ newTags: some Sequence<Tag>) throws(TagError) {
        var unique = Array(newTags)
        // Already sorted and unique (a stored registration's, an export's): nothing to sort.
        if !zip(unique, unique.dropFirst()).allSatisfy({ $0 < $1 }) { unique = Array(Set(unique)).sorted() }
        if unique.count > Tag.maximumPerRegistration { throw TagError.tooMany(unique.count) }
        tags = unique
    }

    /// Whether the registration is past its expiry at `now`.
    public func isExpired(at now: Timestamp) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= now
    }
}

/// A per-registration template: its body text and headers, compiled by the gateway when stored.
public struct RegistrationTemplate: Sendable, Hashable, Codable {
    public var name: String?
    public var body: String
    public var headers: [String: String]

    public init(name: String? = nil, body: String, headers: [String: String] = [:]) {
        self.name = name
        self.body = body
        self.headers = headers
    }
}

/// Seconds since the Unix epoch (UTC). Time is always injected into the domain; nothing here reads
/// the clock.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var secondsSinceEpoch: Double

    public init(secondsSinceEpoch: Double) { self.secondsSinceEpoch = secondsSinceEpoch }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.secondsSinceEpoch < rhs.secondsSinceEpoch }

    public func adding(seconds: Double) -> Timestamp { Timestamp(secondsSinceEpoch: secondsSinceEpoch + seconds) }

    public var description: String { String(secondsSinceEpoch) }

    public init(from decoder: any Decoder) throws {
        secondsSinceEpoch = try decoder.singleValueContainer().decode(Double.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(secondsSinceEpoch)
    }
}
