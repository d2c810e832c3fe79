import Pushgate

/// How a ``PushSandbox`` runs. Ports default to 0: the operating system picks free ones.
public struct SandboxConfiguration: Sendable {
    /// The address every listener binds to. Default `127.0.0.1`.
    public var host: String
    public var apnsPort: Int
    /// FCM v1, legacy GCM and Google's OAuth token endpoint share one listener, as on Google's side.
    public var googlePort: Int
    /// WNS channels and its OAuth token endpoint.
    public var wnsPort: Int
    /// The Web Push service (browsers' subscription endpoints).
    public var webPushPort: Int
    /// Huawei Push Kit: its OAuth token endpoint and the send API share one listener (Huawei has a
    /// host for each).
    public var hmsPort: Int
    /// The control API (plain HTTP on loopback): devices, inboxes, faults.
    public var controlPort: Int
    /// The app's bundle id (APNs topic).
    public var apnsTopic: String
    /// The FCM project id.
    public var fcmProjectID: String
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` on APNs connections. Default 1000 (the real value varies
    /// with load and is UNCONFIRMED).
    public var apnsMaximumConcurrentStreams: Int
    /// Where the sandbox reads the time.
    public var clock: any PushgateClock
    /// Notifications each device's inbox keeps: nil (the default) keeps every one; 0 keeps none
    /// (deliveries are still counted: `GET /stats/inboxes`); N keeps the newest N. A 1,000,000-device
    /// broadcast stores about 1 KB per notification when every one is kept.
    public var inboxLimit: Int?
    /// Broadcast channels one app may have; creating one more is 400 `CannotCreateChannelConfig`.
    /// Default 10,000 (APNs' limit per app and environment, from secondary sources).
    public var apnsChannelLimit: Int

    public init(
        host: String = "127.0.0.1", apnsPort: Int = 0, googlePort: Int = 0, wnsPort: Int = 0, webPushPort: Int = 0, hmsPort: Int = 0,
        controlPort: Int = 0,
        apnsTopic: String = "com.example.pushgate", fcmProjectID: String = "pushgate-sandbox",
        apnsMaximumConcurrentStreams: Int = 1000, clock: any PushgateClock = SystemClock(), inboxLimit: Int? = nil,
        apnsChannelLimit: Int = 10_000
    ) {
        self.host = host
        self.apnsPort = apnsPort
        self.googlePort = googlePort
        self.wnsPort = wnsPort
        self.webPushPort = webPushPort
        self.hmsPort = hmsPort
        self.controlPort = controlPort
        self.apnsTopic = apnsTopic
        self.fcmProjectID = fcmProjectID
        self.apnsMaximumConcurrentStreams = apnsMaximumConcurrentStreams
        self.clock = clock
        self.inboxLimit = inboxLimit
        self.apnsChannelLimit = apnsChannelLimit
    }
}

/// Where the sandbox's services listen.
public struct SandboxEndpoints: Sendable, Hashable, Codable {
    /// APNs base URL (`https://127.0.0.1:<port>`); requests go to `/3/device/<token>`.
    public let apns: String
    /// FCM base URL; requests go to `/v1/projects/<project>/messages:send`.
    public let fcm: String
    /// Legacy GCM send URL (`…/fcm/send`).
    public let gcm: String
    /// Google's OAuth token endpoint (the service account's `token_uri`).
    public let googleToken: String
    /// WNS OAuth token endpoint (`…/accesstoken.srf`).
    public let wnsToken: String
    /// The host and port channel URIs point at (`127.0.0.1:PORT`): a gateway allow-lists exactly this.
    public let wnsChannelHost: String
    /// WNS base URL channel URIs start with.
    public let wns: String
    /// Microsoft Entra ID's token endpoint of the sandbox's tenant (`…/{tenant}/oauth2/v2.0/token`),
    /// on the WNS listener.
    public let entraToken: String
    /// The Web Push service's origin (`https://127.0.0.1:PORT`); subscriptions' endpoints are
    /// `…/wpush/<token>`.
    public let webPush: String
    /// The host and port subscription endpoints point at: a gateway allow-lists exactly this.
    public let webPushHost: String
    /// Huawei Push Kit's send base URL; requests go to `/v1/<appId>/messages:send`.
    public let hms: String
    /// Huawei's OAuth 2.0 token endpoint (`…/oauth2/v3/token`), on the same listener.
    public let hmsToken: String
    /// The control API base URL (plain HTTP).
    public let control: String
}
