/// What happened to one notification at one device, named as Notification Hubs names it
/// (telemetry `Outcome` names). Extensible: unknown names from elsewhere are kept as they are.
public struct Outcome: Sendable, Hashable, Comparable, RawRepresentable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// The push service accepted the notification.
    public static let success = Outcome(rawValue: "Success")
    /// The handle is no longer valid (APNs 410, FCM UNREGISTERED, WNS 410); the registration is removed.
    public static let expiredChannel = Outcome(rawValue: "ExpiredChannel")
    /// The handle is malformed or unknown to the service (APNs BadDeviceToken, WNS 404).
    public static let badChannel = Outcome(rawValue: "BadChannel")
    /// The handle belongs to another app or sender (APNs DeviceTokenNotForTopic, FCM SENDER_ID_MISMATCH).
    public static let wrongChannel = Outcome(rawValue: "WrongChannel")
    /// The service refused our credentials for this channel (WNS 403).
    public static let wrongToken = Outcome(rawValue: "WrongToken")
    /// The service refused our access token (WNS 401 after refresh).
    public static let invalidToken = Outcome(rawValue: "InvalidToken")
    /// The service is rate limiting (APNs 429, FCM QUOTA_EXCEEDED, WNS 406).
    public static let throttled = Outcome(rawValue: "Throttled")
    /// The device channel is throttled (WNS `X-WNS-Status: channelthrottled`).
    public static let channelThrottled = Outcome(rawValue: "ChannelThrottled")
    /// The device is disconnected and the notification was dropped (WNS `X-WNS-Status: dropped`
    /// with `X-WNS-DeviceConnectionStatus: disconnected`).
    public static let channelDisconnected = Outcome(rawValue: "ChannelDisconnected")
    /// The service dropped the notification (WNS `X-WNS-Status: dropped`).
    public static let dropped = Outcome(rawValue: "Dropped")
    /// The payload is over the service's limit.
    public static let invalidNotificationSize = Outcome(rawValue: "InvalidNotificationSize")
    /// The service rejected the payload or headers.
    public static let invalidNotificationFormat = Outcome(rawValue: "InvalidNotificationFormat")
    /// The gateway's credentials for the service are missing, wrong or expired.
    public static let invalidCredentials = Outcome(rawValue: "InvalidCredentials")
    /// The service could not be reached (DNS, connect, TLS, reset, timeout).
    public static let pnsUnreachable = Outcome(rawValue: "PnsUnreachable")
    /// The service answered that it is unavailable (5xx, shutdown).
    public static let pnsUnavailable = Outcome(rawValue: "PnsUnavailable")
    /// The service failed internally (500).
    public static let pnsServerError = Outcome(rawValue: "PnsServerError")
    /// The service answered something the gateway does not understand.
    public static let pnsInterfaceError = Outcome(rawValue: "PnsInterfaceError")
    /// The gateway could not obtain an access token from the service's token endpoint.
    public static let tokenProviderUnreachable = Outcome(rawValue: "TokenProviderUnreachable")
    /// Another registration of the same send holds the same handle: one push per device.
    public static let skipped = Outcome(rawValue: "Skipped")
    /// The gateway gave up (deadline passed, shut down with the send in flight). Notification
    /// Hubs' name; `Abandoned` is a notification state, not an outcome.
    public static let abandoned = Outcome(rawValue: "AbandonedNotificationMessages")
    /// The send was cancelled before this target was attempted.
    public static let cancelled = Outcome(rawValue: "Cancelled")
    /// A newer message of the same Live Activity was stamped before this one's page was sent: it
    /// was not sent (the device would keep the newer one anyway).
    public static let superseded = Outcome(rawValue: "Superseded")
    /// Anything else.
    public static let unknownError = Outcome(rawValue: "UnknownError")

    /// Every outcome name the gateway produces.
    public static let known: [Outcome] = [
        .success, .expiredChannel, .badChannel, .wrongChannel, .wrongToken, .invalidToken, .throttled, .channelThrottled,
        .channelDisconnected, .dropped, .invalidNotificationSize, .invalidNotificationFormat, .invalidCredentials,
        .pnsUnreachable, .pnsUnavailable, .pnsServerError, .pnsInterfaceError, .tokenProviderUnreachable, .skipped,
        .abandoned, .cancelled, .superseded, .unknownError,
    ]

    public var isSuccess: Bool { self == .success }

    /// A sentence for people, as Notification Hubs writes in `NotificationOutcome` results.
    public var explanation: String {
        switch self {
        case .success: "The Notification was successfully sent to the Push Notification System"
        case .expiredChannel: "The device handle has expired or the app was uninstalled; the registration was removed"
        case .badChannel: "The device handle is not valid for this push service"
        case .wrongChannel: "The device handle belongs to another app or sender"
        case .wrongToken: "The push service refused the gateway's credentials for this channel"
        case .invalidToken: "The push service refused the gateway's access token"
        case .throttled: "The push service is throttling notifications"
        case .channelThrottled: "The device channel is throttled"
        case .channelDisconnected: "The device is disconnected; the push service dropped the notification"
        case .dropped: "The push service dropped the notification"
        case .invalidNotificationSize: "The payload is larger than the push service accepts"
        case .invalidNotificationFormat: "The push service rejected the payload or its headers"
        case .invalidCredentials: "The gateway's credentials for the push service are missing or invalid"
        case .pnsUnreachable: "The push service could not be reached"
        case .pnsUnavailable: "The push service is unavailable"
        case .pnsServerError: "The push service failed internally"
        case .pnsInterfaceError: "The push service answered in an unexpected way"
        case .tokenProviderUnreachable: "The push service's token endpoint could not be reached"
        case .skipped: "Another registration holds the same handle; the device got the notification once"
        case .abandoned: "The gateway gave up on the notification"
        case .cancelled: "The send was cancelled before the notification was sent"
        case .superseded: "A newer message of the same Live Activity was stamped before this one was sent; this one was not sent"
        default: "The notification failed"
        }
    }

    public var description: String { rawValue }

    public static func < (lhs: Outcome, rhs: Outcome) -> Bool {
        // Success first, then by name.
        if lhs.isSuccess != rhs.isSuccess { return lhs.isSuccess }
        return lhs.rawValue < rhs.rawValue
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
