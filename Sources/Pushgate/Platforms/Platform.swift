/// A push notification service Pushgate delivers to.
///
/// The raw values are the names used in the `pns` parameter, in registrations and in
/// `config.json`.
public enum Platform: String, CaseIterable, Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// Apple Push Notification service (HTTP/2 provider API).
    case apns
    /// Firebase Cloud Messaging HTTP v1 API.
    case fcm
    /// The legacy GCM/FCM HTTP API (`/fcm/send` with a server key).
    case gcm
    /// Windows Push Notification Services.
    case wns
    /// Web Push (RFC 8030) to browsers: the subscription's endpoint at its push service (Mozilla,
    /// FCM, Apple, WNS for Edge), payloads encrypted for the subscription (RFC 8291) and signed
    /// for with VAPID (RFC 8292).
    case browser
    /// Huawei Push Kit (server API v1): Android devices with HMS Core (no Google services), up to
    /// 1,000 tokens in one request of one payload.
    case hms
    /// UnifiedPush (de-Googled Android): Web Push to the endpoint of the distributor the user
    /// chose (ntfy, NextPush, Sunup, self-hosted), on a host `handles.unifiedPushHosts` allows;
    /// VAPID when the subscription asks for it.
    case unifiedpush

    public var description: String { rawValue }

    /// Every platform's name, for messages and help: `apns, fcm, gcm, wns, browser, hms, unifiedpush` (from the cases,
    /// so that a new platform is named everywhere at once).
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")
    /// The same, the last one joined by `or`: `apns, fcm, gcm, wns, browser, hms or unifiedpush`.
    public static let alternatives = allCases.dropLast().map(\.rawValue).joined(separator: ", ") + " or " + allCases.last!.rawValue

    /// The human name of the service, for tables and logs.
    public var serviceName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .gcm: "GCM"
        case .wns: "WNS"
        case .browser: "Web Push"
        case .hms: "Huawei"
        case .unifiedpush: "UnifiedPush"
        }
    }

    /// The platform name Notification Hubs uses in `NotificationOutcome` results
    /// (`ApplicationPlatform`) and in `ServiceBusNotification-Format`.
    public var notificationHubsName: String {
        switch self {
        case .apns: "apple"
        case .fcm: "fcmV1"
        case .gcm: "gcm"
        case .wns: "windows"
        case .browser: "browser"
        // Notification Hubs has no Huawei platform (it has Baidu and Xiaomi): Pushgate's name.
        case .hms: "huawei"
        // Nor UnifiedPush: Pushgate's name.
        case .unifiedpush: "unifiedpush"
        }
    }

    /// The largest payload the service accepts, in bytes (APNs regular notifications; see
    /// ``PayloadLimit`` for push-type specific limits).
    public var maximumPayloadBytes: Int {
        switch self {
        case .apns: 4096
        case .fcm, .gcm: 4096
        case .wns: 5000
        // The services take 4,096 bytes of encrypted body: the 86-byte aes128gcm header, the
        // padding delimiter and the 16-byte tag leave 3,993 bytes of payload.
        case .browser, .unifiedpush: WebPushLimits.maximumPayloadBytes
        // Push Kit: the request's body, tokens aside, is at most 4,096 bytes; its envelope
        // (`{"validate_only":false,"message":…,"token":[]}`) takes 44 of them.
        case .hms: 4096 - 44
        }
    }

    /// Whether the platform is delivered as Web Push (RFC 8030, 8291): a subscription's endpoint,
    /// its keys, an encrypted body (browsers and UnifiedPush distributors).
    public var isWebPush: Bool { self == .browser || self == .unifiedpush }

    public static func < (lhs: Platform, rhs: Platform) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
