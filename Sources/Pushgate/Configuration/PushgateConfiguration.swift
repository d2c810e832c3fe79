/// Everything a Pushgate instance is configured with: usually read from `config.json`.
///
/// The instance serves one or more apps ("hubs"), each with its own push-service credentials,
/// templates and registrations; a single-app setup names its app `default`.
public struct PushgateConfiguration: Sendable, Hashable {
    public var listener: ListenerConfiguration
    public var store: StoreConfiguration
    public var auth: AuthConfiguration
    public var console: ConsoleConfiguration
    public var limits: LimitsConfiguration
    public var outbox: OutboxConfiguration
    /// Who may read `/metrics`, and where it is served.
    public var metrics = MetricsConfiguration()
    /// OpenTelemetry traces. Default off.
    public var tracing = TracingConfiguration()
    /// Apps by name, in the order they were configured.
    public var apps: [AppConfiguration]

    public init(
        listener: ListenerConfiguration = .init(), store: StoreConfiguration = .init(), auth: AuthConfiguration = .init(),
        console: ConsoleConfiguration = .init(), limits: LimitsConfiguration = .init(), outbox: OutboxConfiguration = .init(),
        apps: [AppConfiguration]
    ) {
        self.limits = limits
        self.outbox = outbox
        self.listener = listener
        self.store = store
        self.auth = auth
        self.console = console
        self.apps = apps
    }

    /// The app requests go to when they do not name one: `default`, or the only app.
    public var defaultApp: AppConfiguration? {
        apps.first(where: { $0.id == .default }) ?? (apps.count == 1 ? apps.first : nil)
    }
}

/// `/metrics` (Prometheus's text format): on the gateway's listener by default, open to whoever
/// reaches it; protected by a bearer token, or served on a listener of its own (loopback unless
/// `host` says otherwise) and not on the gateway's.
public struct MetricsConfiguration: Sendable, Hashable {
    /// When set, `/metrics` answers only `Authorization: Bearer <token>` (401 otherwise).
    public var bearerToken: SecretSource?
    /// When set, `/metrics` is served on this port (0: any free port) and not on the gateway's listener.
    public var port: Int?
    /// The metrics listener's address. Default loopback.
    public var host = "127.0.0.1"

    public init(bearerToken: SecretSource? = nil, port: Int? = nil, host: String = "127.0.0.1") {
        self.bearerToken = bearerToken
        self.port = port
        self.host = host
    }
}

/// Where the gateway listens.
public struct ListenerConfiguration: Sendable, Hashable {
    /// Default `127.0.0.1`.
    public var host: String
    /// Default `8080`; `0` lets the OS choose.
    public var port: Int
    /// Largest request body accepted, in bytes. Default 64 KiB.
    public var maximumBodyBytes: Int
    /// A connection whose request head has not fully arrived this many seconds after the
    /// connection opened (or after the previous response) is closed. Default 10.
    public var headerTimeoutSeconds: Int
    /// A request body that stalls this long between two reads is cut off (the connection is
    /// closed). Default 30.
    public var bodyTimeoutSeconds: Int
    /// A whole request body must arrive within this long of its head. Default 60.
    public var bodyDeadlineSeconds: Int
    /// A keep-alive connection with no request for this long is closed. Default 60.
    public var idleTimeoutSeconds: Int
    /// Open connections at most. When full, a new connection displaces the oldest one that has
    /// not yet sent a complete request head (so a flood of slow clients cannot starve real
    /// ones); when every connection is busy with a request, the new one is closed. Default 4096.
    public var maximumConnections: Int
    /// On SIGTERM or SIGINT: stop accepting, let requests in flight finish for this long, then
    /// cancel the rest (they answer 503) and exit. Default 10.
    public var shutdownDeadlineSeconds: Int
    /// HTTPS: when set, the listener speaks TLS (HTTP/2 or HTTP/1.1 by ALPN) and nothing else, or,
    /// with ``ListenerTLS/port``, HTTPS is served on that port as well.
    public var tls: ListenerTLS?
    /// A hub request's Shared Access Signature may expire at most this far ahead (its `se`):
    /// a token that never expires is refused. Default 30 days.
    public var sasMaximumLifetimeSeconds: Int = 30 * 86_400
    /// The names clients reach the gateway by (`push.example.com`, without port). When given, a
    /// hub request whose `Host` is none of them is refused, and so a Shared Access Signature
    /// signed for another host (its `sr`) never covers a request. Empty (default): the request's
    /// own `Host` is what `sr` is compared with.
    public var hostnames: [String] = []
    /// The proxies and load balancers in front of the gateway, as addresses or networks. A request
    /// whose peer is one of them comes from the rightmost `X-Forwarded-For` address that is not
    /// (what login throttling counts by); from any other peer, `X-Forwarded-For` is ignored.
    /// Empty (default): the peer is the client.
    public var trustedProxies: [IPAddressRange] = []

    public init(
        host: String = "127.0.0.1", port: Int = 8080, maximumBodyBytes: Int = 65536, headerTimeoutSeconds: Int = 10,
        bodyTimeoutSeconds: Int = 30, bodyDeadlineSeconds: Int = 60, idleTimeoutSeconds: Int = 60, maximumConnections: Int = 4096,
        shutdownDeadlineSeconds: Int = 10
    ) {
        self.host = host
        self.port = port
        self.maximumBodyBytes = maximumBodyBytes
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.bodyDeadlineSeconds = bodyDeadlineSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maximumConnections = maximumConnections
        self.shutdownDeadlineSeconds = shutdownDeadlineSeconds
    }
}

/// The listener's certificate chain and private key (PEM), both secrets, and where HTTPS is
/// served.
public struct ListenerTLS: Sendable, Hashable {
    public var certificateChain: SecretSource
    public var privateKey: SecretSource
    /// HTTPS on this port besides plain HTTP on ``ListenerConfiguration/port`` (0: any free
    /// port). When nil, ``ListenerConfiguration/port`` speaks HTTPS and nothing else. Plain HTTP
    /// beside HTTPS is for a loopback listener, where Basic credentials never cross a network.
    public var port: Int?

    public init(certificateChain: SecretSource, privateKey: SecretSource, port: Int? = nil) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.port = port
    }
}

/// Per-user and per-request limits of the API.
public struct LimitsConfiguration: Sendable, Hashable {
    /// Registration ids a user may hold reserved (created by `POST /api/register` and not yet
    /// used by a `PUT`) at once. Default 100.
    public var maximumReservationsPerUser: Int
    /// Largest secure-push message stored for its recipient, in UTF-8 bytes. Default 16 KiB.
    public var maximumSecurePayloadBytes: Int
    /// Registration ids one hub key (rule) may hold reserved through `POST /{hub}/registrationIDs`
    /// at once, per hub: reservations expire after a day, so this bounds what the Listen key an
    /// app ships can make the store keep. Default 10,000.
    public var maximumHubReservationsPerKey: Int
    /// How fast one hub key (rule) may reserve registration ids, per hub: a token bucket that
    /// refills at this rate per second and holds ``hubReservationBurst``. Default 50/s, burst 500.
    public var hubReservationsPerSecond: Int
    public var hubReservationBurst: Int
    /// Registrations a user's own tag (`username:<user>`) may be on: a user (not an admin) adding
    /// one more is refused. Default 1,000.
    public var maximumRegistrationsPerUser: Int
    /// Scheduled notifications one sender (a user, or a hub key) may have waiting for their time.
    /// Default 1,000.
    public var maximumScheduledPerSender: Int

    public init(
        maximumReservationsPerUser: Int = 100, maximumSecurePayloadBytes: Int = 16384, maximumHubReservationsPerKey: Int = 10_000,
        maximumRegistrationsPerUser: Int = 1_000, maximumScheduledPerSender: Int = 1_000, hubReservationsPerSecond: Int = 50,
        hubReservationBurst: Int = 500
    ) {
        self.hubReservationsPerSecond = hubReservationsPerSecond
        self.hubReservationBurst = hubReservationBurst
        self.maximumReservationsPerUser = maximumReservationsPerUser
        self.maximumSecurePayloadBytes = maximumSecurePayloadBytes
        self.maximumHubReservationsPerKey = maximumHubReservationsPerKey
        self.maximumRegistrationsPerUser = maximumRegistrationsPerUser
        self.maximumScheduledPerSender = maximumScheduledPerSender
    }
}

/// The outbox: durable sends, delivered in leased pages by a background service.
public struct OutboxConfiguration: Sendable, Hashable {
    /// Whether sends go through the outbox. Off, a send lives only in its request (no
    /// asynchronous or scheduled sends, nothing resumes after a crash). Default on.
    public var enabled: Bool = true
    /// How long a lease on a notification or a page lasts without renewal (renewed every third
    /// of it while its holder works): how soon another instance, or the next start, takes over
    /// the work of one that died. Default 30 s.
    public var leaseSeconds: Int = 30
    /// Targets per claimed page. Default 500.
    public var pageSize: Int = 500
    /// Notifications the background service delivers at once. Default 4.
    public var concurrentNotifications: Int = 4
    /// Finished notifications and their outcomes are deleted after this. Default 7 days.
    public var retentionSeconds: Int = 7 * 86400
    /// How far ahead `deliverAt` may be. Default 30 days.
    public var maximumScheduleAheadSeconds: Int = 30 * 86400
    /// How far in the past `deliverAt` may be (clock skew); it is then sent at once. Default 60 s.
    public var scheduleSkewSeconds: Int = 60
    /// How long a send's `Idempotency-Key` is held: a repeat within it is answered the first
    /// notification (`idempotencyWindowSeconds`; a day). A notification pruned sooner
    /// (`retentionSeconds`) takes its key with it.
    public var idempotencyWindowSeconds: Int = 86400
    /// Targets a push service throttled past what the in-place retry waits (FCM `QUOTA_EXCEEDED`
    /// and 429s ask for a minute or more) are sent again later, as pages of their own, this many
    /// times at most before `Throttled` is final. Default 5 (0: never).
    public var throttledRetries: Int = 5
    /// The first such retry's delay, doubled for each next (Firebase: exponential backoff from at
    /// least a minute); a longer `Retry-After` wins. Default 60 s.
    public var throttledBackoffSeconds: Int = 60

    public init() {}
}

/// The web console (`/console`): a static page over the same authenticated API.
public struct ConsoleConfiguration: Sendable, Hashable {
    /// Whether the gateway serves the console. Default on (it adds no capability beyond the API).
    public var enabled: Bool
    /// The control API of a push-service sandbox (`http://127.0.0.1:…`). When set, the console can
    /// create sandbox devices and show what each received; never set it in production.
    public var sandboxControl: String?

    public init(enabled: Bool = true, sandboxControl: String? = nil) {
        self.enabled = enabled
        self.sandboxControl = sandboxControl
    }
}

/// Where registrations live.
public struct StoreConfiguration: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// An SQLite database file (relative to the configuration file). The default.
        case sqlite(path: String)
        /// A PostgreSQL database, which several gateway instances can share.
        case postgres(PostgresSettings)
    }

    public var kind: Kind

    public init(kind: Kind = .sqlite(path: "pushgate.sqlite")) { self.kind = kind }
}

/// Who may call the API.
public struct AuthConfiguration: Sendable, Hashable {
    /// Users with their password hashes (never plain passwords).
    public var users: [UserCredential]
    /// Users that may manage every registration, not only their own.
    public var admins: [String]
    /// The tutorials' test rule: any user whose password equals the user name is accepted. For demos
    /// only; off by default and loudly logged when on.
    public var demoPasswordEqualsName: Bool

    public init(users: [UserCredential] = [], admins: [String] = [], demoPasswordEqualsName: Bool = false) {
        self.users = users
        self.admins = admins
        self.demoPasswordEqualsName = demoPasswordEqualsName
    }
}

/// A user name and a salted, slow password hash (`pbkdf2-sha256$<iterations>$<salt>$<hash>`).
public struct UserCredential: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var passwordHash: String

    public init(name: String, passwordHash: String) {
        self.name = name
        self.passwordHash = passwordHash
    }

    public var description: String { "user \(name)" }
}

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

/// The push services an app delivers through; a missing one means that platform is not configured.
public struct ServicesConfiguration: Sendable, Hashable {
    public var apns: APNSConfiguration?
    public var fcm: FCMConfiguration?
    public var gcm: GCMConfiguration?
    public var wns: WNSConfiguration?
    public var browser: WebPushConfiguration?

    public init(
        apns: APNSConfiguration? = nil, fcm: FCMConfiguration? = nil, gcm: GCMConfiguration? = nil, wns: WNSConfiguration? = nil,
        browser: WebPushConfiguration? = nil
    ) {
        self.apns = apns
        self.fcm = fcm
        self.gcm = gcm
        self.wns = wns
        self.browser = browser
    }

    /// How `gcm` registrations are reached: through FCM v1 whenever the app has a service account
    /// (unless `services.gcm.delivery` says `legacy`), through the legacy API with a server key
    /// otherwise; nil when neither is configured.
    public var gcmDelivery: GCMConfiguration.Delivery? {
        if let gcm, gcm.delivery == .legacy { return .legacy }
        return fcm != nil ? .fcmV1 : nil
    }

    /// The platforms with a configured service.
    public var configuredPlatforms: [Platform] {
        Platform.allCases.filter {
            switch $0 {
            case .apns: apns != nil
            case .fcm: fcm != nil
            case .gcm: gcmDelivery != nil
            case .wns: wns != nil
            case .browser: browser != nil
            }
        }
    }
}

/// APNs: endpoint, topic, and token or certificate authentication.
public struct APNSConfiguration: Sendable, Hashable {
    public enum Authentication: Sendable, Hashable {
        /// Provider-token (JWT, ES256) authentication with a `.p8` key.
        case token(keyID: String, teamID: String, privateKey: SecretSource)
        /// TLS client-certificate authentication (PEM certificate and key).
        case certificate(certificate: SecretSource, privateKey: SecretSource)
    }

    public static let productionEndpoint = "https://api.push.apple.com"
    public static let developmentEndpoint = "https://api.sandbox.push.apple.com"

    public var endpoint: String
    /// The default `apns-topic` (the app's bundle id).
    public var topic: String
    public var authentication: Authentication
    /// A CA bundle to trust instead of the system's (for the sandbox).
    public var caFile: String?

    public init(endpoint: String = productionEndpoint, topic: String, authentication: Authentication, caFile: String? = nil) {
        self.endpoint = endpoint
        self.topic = topic
        self.authentication = authentication
        self.caFile = caFile
    }
}

/// FCM HTTP v1: a service account (its JSON names the project and the OAuth token endpoint).
public struct FCMConfiguration: Sendable, Hashable {
    public static let productionEndpoint = "https://fcm.googleapis.com"

    public var endpoint: String
    public var serviceAccount: SecretSource
    public var caFile: String?

    public init(endpoint: String = productionEndpoint, serviceAccount: SecretSource, caFile: String? = nil) {
        self.endpoint = endpoint
        self.serviceAccount = serviceAccount
        self.caFile = caFile
    }
}

/// Legacy GCM: how `gcm` registrations are reached. Google shut the legacy HTTP API down in 2024;
/// by default (`delivery: "fcmV1"`) their messages go through FCM HTTP v1 with the app's service
/// account, translated (the registration tokens are the same). `delivery: "legacy"` keeps the
/// legacy endpoint with a server key, for the sandbox and for anyone who still has it.
public struct GCMConfiguration: Sendable, Hashable {
    public static let productionEndpoint = "https://fcm.googleapis.com/fcm/send"

    public enum Delivery: String, Sendable, Hashable, CaseIterable {
        case fcmV1
        case legacy
    }

    public var delivery: Delivery
    /// The legacy endpoint and server key (`delivery: "legacy"`).
    public var endpoint: String
    public var serverKey: SecretSource?
    public var caFile: String?

    public init(
        endpoint: String = productionEndpoint, serverKey: SecretSource?, caFile: String? = nil, delivery: Delivery = .legacy
    ) {
        self.endpoint = endpoint
        self.serverKey = serverKey
        self.caFile = caFile
        self.delivery = delivery
    }
}

/// WNS: OAuth client credentials, either the classic package credentials (package SID and
/// secret at `login.live.com`) or, as Windows App SDK apps require, a Microsoft Entra ID
/// application (`tenantId`, its client id and secret at the tenant's v2.0 token endpoint, scope
/// `https://wns.windows.com/.default`).
public struct WNSConfiguration: Sendable, Hashable {
    public static let productionTokenEndpoint = "https://login.live.com/accesstoken.srf"
    /// The classic scope, and Entra ID's for WNS.
    public static let classicScope = "notify.windows.com"
    public static let entraScope = "https://wns.windows.com/.default"

    /// The Entra ID token endpoint of a tenant (a GUID or a domain name).
    public static func entraTokenEndpoint(tenantID: String, authority: String = "https://login.microsoftonline.com") -> String {
        "\(authority)/\(tenantID)/oauth2/v2.0/token"
    }

    /// The Entra ID tenant, when the credentials are an Entra ID application; nil for classic.
    public var tenantID: String?

    public var tokenEndpoint: String
    /// The package SID (`ms-app://…`) or app id.
    public var clientID: String
    public var clientSecret: SecretSource
    /// OAuth scope; `notify.windows.com` for classic WNS.
    public var scope: String
    public var caFile: String?

    /// With a `tenantID` and no explicit endpoint or scope, Entra ID's for that tenant.
    public init(
        tokenEndpoint: String? = nil, clientID: String, clientSecret: SecretSource, scope: String? = nil, caFile: String? = nil,
        tenantID: String? = nil
    ) {
        self.tenantID = tenantID
        self.tokenEndpoint = tokenEndpoint ?? tenantID.map { Self.entraTokenEndpoint(tenantID: $0) } ?? Self.productionTokenEndpoint
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scope = scope ?? (tenantID == nil ? Self.classicScope : Self.entraScope)
        self.caFile = caFile
    }
}

/// Web Push: the app's VAPID key pair (RFC 8292) and the contact the push services may write to.
public struct WebPushConfiguration: Sendable, Hashable {
    /// `mailto:` or `https:` contact, the VAPID token's `sub`.
    public var subject: String
    /// The application server key: the public key, an uncompressed P-256 point in base64url (what
    /// a web page passes to `pushManager.subscribe` as `applicationServerKey`).
    public var vapidPublicKey: String
    /// The private key: the 32-byte P-256 scalar in base64url, or PEM.
    public var vapidPrivateKey: SecretSource
    public var caFile: String?

    public init(subject: String, vapidPublicKey: String, vapidPrivateKey: SecretSource, caFile: String? = nil) {
        self.subject = subject
        self.vapidPublicKey = vapidPublicKey
        self.vapidPrivateKey = vapidPrivateKey
        self.caFile = caFile
    }
}

/// A template per platform for one purpose.
public struct TemplateSetConfiguration: Sendable, Hashable {
    public var templates: [Platform: TemplateConfiguration]

    public init(_ templates: [Platform: TemplateConfiguration] = [:]) { self.templates = templates }
}

/// One template: where its body comes from, its syntax, and its headers.
public struct TemplateConfiguration: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        /// A file in `templates/` (relative to the configuration file).
        case file(String)
        /// The body written in the configuration.
        case inline(String)
    }

    public var source: Source
    /// The body syntax; inferred from the file extension or the platform when nil.
    public var format: Template.Format?
    public var headers: [HTTPHeader]
    /// JSON path of this template in the configuration, for error messages.
    public var path: String

    public init(source: Source, format: Template.Format? = nil, headers: [HTTPHeader] = [], path: String = "") {
        self.source = source
        self.format = format
        self.headers = headers
        self.path = path
    }

    /// The format to compile `body` with: explicit, else by file extension, else as every template
    /// is (``Template/Format/resolved(for:headers:body:)``).
    public func resolvedFormat(for platform: Platform, body: String) -> Template.Format {
        if let format { return format }
        if case .file(let path) = source {
            let lowered = path.lowercased()
            if lowered.hasSuffix(".json") { return .json }
            if lowered.hasSuffix(".xml") { return .xml }
            if lowered.hasSuffix(".txt") || lowered.hasSuffix(".raw") { return .raw }
        }
        return .resolved(for: platform, headers: headers.map { ($0.name, $0.value) }, body: body)
    }
}
