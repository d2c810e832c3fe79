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

    public var description: String { rawValue }

    /// The human name of the service, for tables and logs.
    public var serviceName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .gcm: "GCM"
        case .wns: "WNS"
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
        }
    }

    /// The largest payload the service accepts, in bytes (APNs regular notifications; see
    /// ``PayloadLimit`` for push-type specific limits).
    public var maximumPayloadBytes: Int {
        switch self {
        case .apns: 4096
        case .fcm, .gcm: 4096
        case .wns: 5000
        }
    }

    public static func < (lhs: Platform, rhs: Platform) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
