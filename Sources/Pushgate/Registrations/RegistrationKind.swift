/// What a registration's handle is for. Every ordinary send reaches devices only; an APNs Live
/// Activity token is a kind of its own, reached only by the sends of its activity
/// (`docs/live-activities.md`):
/// - a *push-to-start* token (iOS 17.2+), one per device and activity attributes type, reached by
///   a `start` to the tags it carries;
/// - an *update* token, one per running activity and device, registered under the activity's
///   name and reached by that activity's `update` and `end`.
///
/// Stored as one text column beside the platform (``stored``): empty for a device.
public enum RegistrationKind: Sendable, Hashable, CustomStringConvertible {
    case device
    case pushToStart(attributesType: ActivityAttributesType)
    case liveActivity(name: ActivityName)

    /// As the stores keep it: `""`, `start:<attributes type>` or `activity:<name>`.
    public var stored: String {
        switch self {
        case .device: ""
        case .pushToStart(let type): "start:" + type.rawValue
        case .liveActivity(let name): "activity:" + name.rawValue
        }
    }

    /// From a stored text; nil for text no version wrote.
    public init?(stored text: String) {
        if text.isEmpty {
            self = .device
        } else if text.hasPrefix("start:"), let type = try? ActivityAttributesType(String(text.dropFirst(6))) {
            self = .pushToStart(attributesType: type)
        } else if text.hasPrefix("activity:"), let name = try? ActivityName(String(text.dropFirst(9))) {
            self = .liveActivity(name: name)
        } else {
            return nil
        }
    }

    /// The platform whose handles the kind holds: a Live Activity token is an APNs token.
    public func admits(_ platform: Platform) -> Bool { self == .device || platform == .apns }

    /// The activity's name, for an update token.
    public var activityName: ActivityName? {
        if case .liveActivity(let name) = self { return name }
        return nil
    }

    /// How the APIs name the kind (`Kind` of the tutorial API, `kind` of the hub API's extension).
    public var apiName: String {
        switch self {
        case .device: "device"
        case .pushToStart: "pushToStart"
        case .liveActivity: "liveActivity"
        }
    }

    public var description: String {
        switch self {
        case .device: "device"
        case .pushToStart(let type): "push-to-start token of \(type.rawValue)"
        case .liveActivity(let name): "update token of activity \(name.rawValue)"
        }
    }

    /// The kind an API names, with its attributes type or activity name (`Kind`, `AttributesType`,
    /// `Activity` of the tutorial API's body; `kind`, `attributesType`, `activity` of the hub's).
    public init(apiName: String?, attributesType: String?, activity: String?) throws(RegistrationKindError) {
        switch apiName?.lowercased() {
        case nil, "device":
            guard attributesType == nil, activity == nil else { throw .unexpected(attributesType == nil ? "Activity" : "AttributesType") }
            self = .device
        case "pushtostart":
            guard let attributesType else { throw .missing("AttributesType", kind: "pushToStart") }
            guard activity == nil else { throw .unexpected("Activity") }
            do { self = .pushToStart(attributesType: try ActivityAttributesType(attributesType)) } catch { throw .invalid(error) }
        case "liveactivity":
            guard let activity else { throw .missing("Activity", kind: "liveActivity") }
            guard attributesType == nil else { throw .unexpected("AttributesType") }
            do { self = .liveActivity(name: try ActivityName(activity)) } catch { throw .invalid(error) }
        case let other?:
            throw .unknown(String(other.prefix(40)))
        }
    }
}

/// A registration's kind, as an API gave it, is not acceptable.
public enum RegistrationKindError: PushgateInputError, Hashable {
    case unknown(String)
    case missing(String, kind: String)
    case unexpected(String)
    case invalid(ActivityNameError)

    public var description: String {
        switch self {
        case .unknown(let text): "Kind '\(text)' is not known; use device, pushToStart or liveActivity"
        case .missing(let field, let kind): "\"\(field)\" is required with Kind \(kind)"
        case .unexpected(let field): "\"\(field)\" is given, but belongs to another Kind"
        case .invalid(let error): error.description
        }
    }
}

/// The name an app gives a Live Activity (`order-4711`): what its update tokens are registered
/// under and its sends address. 1 to 128 characters of letters, digits and `- _ . :`; scoped to
/// its app and its owner, so that two users' `order-4711` are two activities.
public struct ActivityName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public static let maximumLength = 128

    public init(_ text: String) throws(ActivityNameError) {
        try Self.check(text, field: "activity name", maximum: Self.maximumLength, extra: "-_.:")
        rawValue = text
    }

    static func check(_ text: String, field: String, maximum: Int, extra: String) throws(ActivityNameError) {
        guard !text.isEmpty else { throw ActivityNameError(field: field, problem: "is empty") }
        guard text.utf8.count <= maximum else {
            throw ActivityNameError(field: field, problem: "is \(text.utf8.count) bytes long; at most \(maximum)")
        }
        if let (offset, bad) = text.enumerated().first(where: {
            !($0.element.isASCII && ($0.element.isLetter || $0.element.isNumber || extra.contains($0.element)))
        }) {
            throw ActivityNameError(
                field: field,
                problem:
                    "has an invalid character \(quoted(bad)) at position \(offset + 1); expected letters, digits and \(extra.map { String($0) }.joined(separator: " "))"
            )
        }
    }

    public static func < (lhs: ActivityName, rhs: ActivityName) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}

/// An ActivityKit attributes type's name (`DeliveryAttributes`, the Swift type the app declares):
/// 1 to 128 characters of letters, digits and `_ .`.
public struct ActivityAttributesType: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(_ text: String) throws(ActivityNameError) {
        try ActivityName.check(text, field: "attributes type", maximum: 128, extra: "_.")
        rawValue = text
    }

    public var description: String { rawValue }
}

/// An activity name or attributes type is malformed; names which and what is wrong.
public struct ActivityNameError: PushgateInputError, Hashable {
    public let field: String
    public let problem: String
    public var description: String { "\(field) \(problem)" }
}

/// Which registrations a walk of the store reaches: devices (every ordinary send), or the tokens
/// of one Live Activity kind, optionally of one owner only (an activity's update tokens are its
/// owner's). A tag expression may narrow either.
public struct RegistrationSelector: Sendable, Hashable {
    /// nil: every kind (a listing or an export; never a send).
    public var kind: RegistrationKind?
    /// Only this owner's registrations (nil: anyone's).
    public var owner: RegistrationOwner?
    public var expression: TagExpression?

    public init(kind: RegistrationKind?, owner: RegistrationOwner? = nil, expression: TagExpression? = nil) {
        self.kind = kind
        self.owner = owner
        self.expression = expression
    }

    /// The devices whose tags satisfy `expression` (every device when nil).
    public static func devices(_ expression: TagExpression?) -> RegistrationSelector {
        RegistrationSelector(kind: .device, expression: expression)
    }

    /// The registrations of every kind whose tags satisfy `expression`: a listing, never a send.
    public static func anyKind(_ expression: TagExpression?) -> RegistrationSelector {
        RegistrationSelector(kind: nil, expression: expression)
    }

    /// Whether the walk reaches `registration` (its platform and expiry aside).
    public func admits(_ registration: Registration) -> Bool {
        (kind == nil || registration.kind == kind) && (owner == nil || registration.owner == owner)
            && (expression?.matches(registration.tags) ?? true)
    }
}
