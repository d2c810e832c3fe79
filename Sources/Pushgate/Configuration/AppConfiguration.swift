/// One app: its push-service credentials, device-handle rules and templates.
public struct AppConfiguration: Sendable, Hashable {
    public var id: AppID
    public var services: ServicesConfiguration
    public var handles: HandlePolicy
    /// Template sets by purpose: `notify` (the tutorial message) and `secure` (secure push), plus
    /// any the operator adds.
    public var templates: [String: TemplateSetConfiguration]
    /// The hub's shared access rules (Notification Hubs' authorization rules): who may call the
    /// hub API `/{hub}/…`, with which rights. None: the hub API answers 401 to every request.
    public var accessRules: [SharedAccessRule]
    /// Where the app's outcome webhooks go (`webhooks.receivers`); none by default.
    public var webhooks: [WebhookReceiverConfiguration] = []

    public init(
        id: AppID, services: ServicesConfiguration = .init(), handles: HandlePolicy = .init(),
        templates: [String: TemplateSetConfiguration] = [:], accessRules: [SharedAccessRule] = []
    ) {
        self.id = id
        self.services = services
        self.handles = handles
        self.templates = templates
        self.accessRules = accessRules
    }
}

/// What a shared access rule allows, as Notification Hubs names it.
public enum AccessRight: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Create and update registrations and installations (a device's key).
    case listen = "Listen"
    /// Send notifications.
    case send = "Send"
    /// Everything: read and list registrations, telemetry, scheduled sends.
    case manage = "Manage"

    public static func < (lhs: AccessRight, rhs: AccessRight) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// A named key with rights on one hub: a client signs requests with it (Shared Access Signature).
public struct SharedAccessRule: Sendable, Hashable, CustomStringConvertible {
    /// The key name (`SharedAccessKeyName`), for example `DefaultFullSharedAccessSignature`.
    public var name: String
    /// The key (`SharedAccessKey`): a secret.
    public var key: SecretSource
    public var rights: Set<AccessRight>

    /// Notification Hubs' two default rules.
    public static let defaultListenName = "DefaultListenSharedAccessSignature"
    public static let defaultFullName = "DefaultFullSharedAccessSignature"

    public init(name: String, key: SecretSource, rights: Set<AccessRight>) {
        self.name = name
        self.key = key
        self.rights = rights
    }

    /// Whether `text` is a valid rule name: 1 to 256 letters, digits, `-`, `.` or `_`.
    public static func isValidName(_ text: String) -> Bool {
        (1...256).contains(text.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }
    }

    /// Never shows the key.
    public var description: String { "rule \(name) (\(rights.sorted().map(\.rawValue).joined(separator: ", ")))" }
}
