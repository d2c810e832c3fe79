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
    /// Outcome webhooks' gateway-wide settings (receiver allow-list, retries, batches).
    public var webhooks = WebhooksConfiguration()
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
    /// at once, per hub: reservations expire after ``hubReservationLifetimeSeconds``, so this
    /// bounds what the Listen key an app ships can make the store keep. Default 10,000.
    public var maximumHubReservationsPerKey: Int
    /// How long an id reserved through `POST /{hub}/registrationIDs` stays reserved unused, in
    /// seconds (the tutorial API's last a day). Default 3,600.
    public var hubReservationLifetimeSeconds: Int = 3600
    /// How fast one client address may reserve registration ids with one hub key (rule), per hub:
    /// a token bucket that refills at this rate per second and holds ``hubReservationBurst``.
    /// Default 50/s, burst 500. Kept in each instance's memory.
    public var hubReservationsPerSecond: Int
    public var hubReservationBurst: Int
    /// How many registrations and installations one client address may create with a hub's
    /// Listen key (a key without Send or Manage) a minute: a token bucket holding
    /// ``hubDeviceCreationBurst``. A device registers once and then updates. Default 6 a minute,
    /// burst 10. Kept in each instance's memory.
    public var hubDeviceCreationsPerMinute: Int = 6
    public var hubDeviceCreationBurst: Int = 10
    /// Active devices (registrations; an installation counts one per template) a hub may have:
    /// creating one more through the hub API is refused with 403, as Notification Hubs refuses
    /// past its tier's quota. Default 10,000,000 (its Standard tier's).
    public var maximumHubDevices: Int = 10_000_000
    /// Registrations a user's own tag (`username:<user>`) may be on: a user (not an admin) adding
    /// one more is refused. Default 1,000.
    public var maximumRegistrationsPerUser: Int
    /// Scheduled notifications one sender (a user, or a hub key) may have waiting for their time.
    /// Default 1,000.
    public var maximumScheduledPerSender: Int
    /// Notifications and secure messages one user of the tutorial API may have stored in a day
    /// (each send stores its notification for 7 days, a secure one its message for a day): past it a
    /// send is refused with 429 until the day's window moves on. Hub keys (backends) are not
    /// limited by it. Default 10,000. Kept in each instance's memory.
    public var maximumStoredPerUserPerDay: Int = 10_000

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
