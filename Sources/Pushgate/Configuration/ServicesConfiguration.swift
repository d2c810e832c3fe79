/// The push services an app delivers through; a missing one means that platform is not configured.
public struct ServicesConfiguration: Sendable, Hashable {
    public var apns: APNSConfiguration?
    public var fcm: FCMConfiguration?
    public var gcm: GCMConfiguration?
    public var wns: WNSConfiguration?
    public var browser: WebPushConfiguration?
    public var hms: HMSConfiguration?
    public var unifiedpush: UnifiedPushConfiguration?

    public init(
        apns: APNSConfiguration? = nil, fcm: FCMConfiguration? = nil, gcm: GCMConfiguration? = nil, wns: WNSConfiguration? = nil,
        browser: WebPushConfiguration? = nil, hms: HMSConfiguration? = nil, unifiedpush: UnifiedPushConfiguration? = nil
    ) {
        self.hms = hms
        self.unifiedpush = unifiedpush
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
            case .hms: hms != nil
            case .unifiedpush: unifiedpush != nil
            }
        }
    }
}

/// Huawei Push Kit (server API v1): the app's id and secret for OAuth 2.0 client credentials.
public struct HMSConfiguration: Sendable, Hashable {
    public static let productionEndpoint = "https://push-api.cloud.huawei.com"
    public static let productionTokenEndpoint = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    /// The send API's base (`POST <endpoint>/v1/<appId>/messages:send`).
    public var endpoint: String
    /// The OAuth 2.0 token endpoint.
    public var tokenEndpoint: String
    /// The AppGallery Connect app id (the OAuth client id, and the send path's app id).
    public var appID: String
    public var appSecret: SecretSource
    /// Tokens in one request (Push Kit: at most 1,000).
    public var maximumTokensPerRequest: Int
    public var caFile: String?

    public init(
        endpoint: String = productionEndpoint, tokenEndpoint: String = productionTokenEndpoint, appID: String, appSecret: SecretSource,
        maximumTokensPerRequest: Int = 1000, caFile: String? = nil
    ) {
        self.endpoint = endpoint
        self.tokenEndpoint = tokenEndpoint
        self.appID = appID
        self.appSecret = appSecret
        self.maximumTokensPerRequest = maximumTokensPerRequest
        self.caFile = caFile
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

    /// Broadcast channels (iOS 18) are managed on a host of their own, per environment.
    public static let productionChannelsEndpoint = "https://api-manage-broadcast.push.apple.com:2196"
    public static let developmentChannelsEndpoint = "https://api-manage-broadcast.sandbox.push.apple.com:2195"

    /// Where channels are created, read, listed and deleted (`apns.channelsEndpoint`); by
    /// default the management host of ``endpoint``'s environment.
    public var channelsEndpoint: String
    /// Where broadcasts are sent (`POST /4/broadcasts/apps/{bundle id}`; `apns.broadcastEndpoint`):
    /// by default ``endpoint``, as Apple's prose and its command-line article say; Apple's samples
    /// show `api-broadcast[.sandbox].push.apple.com` instead, hence configurable.
    public var broadcastEndpoint: String
    /// The most channels Pushgate creates for the app (`apns.maxChannels`; default 10,000, the
    /// figure secondary sources give for Apple's limit per app and environment).
    public var maximumChannels: Int

    public init(endpoint: String = productionEndpoint, topic: String, authentication: Authentication, caFile: String? = nil) {
        self.endpoint = endpoint
        self.topic = topic
        self.authentication = authentication
        self.caFile = caFile
        channelsEndpoint = endpoint == Self.developmentEndpoint ? Self.developmentChannelsEndpoint : Self.productionChannelsEndpoint
        broadcastEndpoint = endpoint
        maximumChannels = 10_000
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

/// UnifiedPush: Web Push to the distributors' endpoints that `handles.unifiedPushHosts` allows,
/// with the app's VAPID key for subscriptions that ask for it.
public struct UnifiedPushConfiguration: Sendable, Hashable {
    /// What a distributor's 507 (ntfy: no active subscriber for the endpoint) does to a
    /// registration: ``keep`` it (`ChannelDisconnected`, not retried in the round), or ``prune``
    /// it as gone (`ExpiredChannel`).
    public enum NoActiveSubscriber: String, Sendable, Hashable, CaseIterable {
        case keep
        case prune
    }

    /// The VAPID key pair and contact (RFC 8292), as `services.browser` gives them; nil: every
    /// message goes unsigned, and a subscription with `"vapid": true` is answered
    /// `InvalidCredentials`.
    public var vapid: WebPushConfiguration?
    public var caFile: String?
    /// How long the discovery request at registration (`GET <endpoint>`) may take. Default 2 s.
    public var discoveryTimeoutSeconds: Double
    /// How long a host's good discovery answer is trusted. Default one hour.
    public var discoveryCacheSeconds: Int
    /// How long a host's failed discovery is remembered (a registration meanwhile is refused at
    /// once). Default 30 s.
    public var discoveryFailureCacheSeconds: Int
    /// What a 507 does. Default ``NoActiveSubscriber/keep``.
    public var noActiveSubscriber: NoActiveSubscriber
    /// How long one send request may take, connecting included. Default 10 s: a distributor
    /// answers at once, and an endpoint that hangs (its host is the user's choice) holds the
    /// send's page no longer than this per attempt.
    public var sendTimeoutSeconds: Double

    public init(
        vapid: WebPushConfiguration? = nil, caFile: String? = nil, discoveryTimeoutSeconds: Double = 2, discoveryCacheSeconds: Int = 3600,
        discoveryFailureCacheSeconds: Int = 30, noActiveSubscriber: NoActiveSubscriber = .keep, sendTimeoutSeconds: Double = 10
    ) {
        self.vapid = vapid
        self.caFile = caFile
        self.discoveryTimeoutSeconds = discoveryTimeoutSeconds
        self.discoveryCacheSeconds = discoveryCacheSeconds
        self.discoveryFailureCacheSeconds = discoveryFailureCacheSeconds
        self.noActiveSubscriber = noActiveSubscriber
        self.sendTimeoutSeconds = sendTimeoutSeconds
    }
}
