import Pushgate

/// An app installation the sandbox knows: the handle a gateway registers, and what happened to it.
public struct SandboxDevice: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable {
        case active
        /// The app was uninstalled: APNs 410 `Unregistered`, FCM `UNREGISTERED`, GCM `NotRegistered`, WNS 410.
        case uninstalled
        /// The handle expired: APNs 410 `ExpiredToken`, WNS 410.
        case expired
    }

    /// A short id for the control API.
    public let id: String
    public let platform: Platform
    /// The device token (APNs), registration token (FCM, GCM) or channel URI (WNS).
    public let handle: String
    public var status: Status
    /// When the service learned the handle is gone (milliseconds since the epoch; APNs `timestamp`).
    public var goneAtMilliseconds: Int64?
    /// Legacy GCM: the canonical registration id the service returns for this handle.
    public var canonicalHandle: String?
    /// Set for devices of another sender or project (GCM `MismatchSenderId`, FCM `SENDER_ID_MISMATCH`,
    /// APNs `DeviceTokenNotForTopic`).
    public var belongsToAnotherApp: Bool
}

/// One notification a device received, as the service accepted it.
public struct ReceivedNotification: Sendable, Hashable, Codable {
    public let platform: Platform
    public let deviceID: String
    /// The service's id for the message (`apns-id`, FCM `name`, GCM `message_id`, `X-WNS-Msg-ID`).
    public let messageID: String
    /// Request headers that describe the notification (`apns-*`, `X-WNS-*`, content type).
    public let headers: [HTTPHeader]
    /// The payload as delivered (APNs JSON, FCM/GCM message JSON, WNS XML or raw bytes as text).
    public let payload: String
    /// Seconds since the epoch, by the sandbox clock.
    public let receivedAt: Double

    public func header(_ name: String) -> String? {
        headers.first(where: { $0.name.lowercased() == name.lowercased() })?.value
    }
}
