/// Who a registration belongs to: a user of the tutorial API (the authenticated user who wrote
/// it), or the hub (written through the Notification Hubs API with one of the hub's keys). A kind,
/// not a name: no user name can stand for the hub, whatever it is (and names beginning with `$`,
/// reserved for the gateway's own tags and owners, are refused when the configuration loads).
///
/// Stored as a kind column beside the name (the name empty for the hub); an export line writes the
/// hub as ``exportName`` (`$hub`), which no user name can be.
public enum RegistrationOwner: Sendable, Hashable, CustomStringConvertible {
    case user(String)
    case hub

    /// How an export line (and the command line's listing) names the hub.
    public static let exportName = "$hub"

    /// The user's name; nil for the hub.
    public var userName: String? {
        if case .user(let name) = self { return name }
        return nil
    }

    /// Whether the registration is `name`'s (never true for the hub's).
    public func isUser(_ name: String) -> Bool { userName == name }

    /// As an export line and a listing write it: the user's name, or `$hub`.
    public var exportText: String { userName ?? Self.exportName }

    /// Read from an export line's `owner`: `$hub` is the hub; any other name beginning with `$` is
    /// refused (nil), as user names are.
    public init?(exportText text: String) {
        if text == Self.exportName {
            self = .hub
        } else if text.isEmpty || text.hasPrefix("$") {
            return nil
        } else {
            self = .user(text)
        }
    }

    /// As the stores keep it: the kind (0 a user, 1 the hub) and the user's name (empty for the hub).
    public var stored: (kind: Int, name: String) {
        switch self {
        case .user(let name): (0, name)
        case .hub: (1, "")
        }
    }

    /// From a stored kind and name.
    public init(storedKind kind: Int, name: String) { self = kind == 1 ? .hub : .user(name) }

    public var description: String { exportText }

    /// Who holds an id reserved through the hub API with key `rule` (`POST /{hub}/registrationIDs`),
    /// as the store keeps a reservation's holder: no user name begins with `$`.
    public static func hubKeyReservation(rule: String) -> String { "$hub:" + rule }

    /// Whether a reservation's holder is a hub key (``hubKeyReservation(rule:)``).
    public static func isHubKeyReservation(_ holder: String) -> Bool { holder.hasPrefix("$hub:") }
}
