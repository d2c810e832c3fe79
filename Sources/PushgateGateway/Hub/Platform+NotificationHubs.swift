import Pushgate

/// How Notification Hubs names a platform in each place it names one: one exhaustive table, so
/// that a new platform is named everywhere at once (the compiler asks for its row). The send's
/// `ServiceBusNotification-Format` and the results' `ApplicationPlatform` are
/// ``Platform/notificationHubsName`` (``HubFormat``).
package struct NotificationHubsNames: Sendable, Hashable {
    /// An installation's `platform` (`apns`, `fcmv1`, …).
    package var installation: String
    /// A registration description's type, less `RegistrationDescription` / `TemplateRegistrationDescription`
    /// (`Apple`, `FcmV1`, …).
    package var registrationDescription: String
    /// The element holding a registration description's handle (`DeviceToken`, …).
    package var handleElement: String
    /// Whether a template's body is written as the send's native body, `{"message": {…}}` (FCM
    /// v1 and Huawei), and stored as the message inside it (``HubTemplates``).
    package var templateWrapsMessage = false
}

extension Platform {
    package var notificationHubs: NotificationHubsNames {
        switch self {
        case .apns: NotificationHubsNames(installation: "apns", registrationDescription: "Apple", handleElement: "DeviceToken")
        case .gcm: NotificationHubsNames(installation: "gcm", registrationDescription: "Gcm", handleElement: "GcmRegistrationId")
        case .fcm:
            NotificationHubsNames(
                installation: "fcmv1", registrationDescription: "FcmV1", handleElement: "FcmV1RegistrationId",
                templateWrapsMessage: true)
        case .wns: NotificationHubsNames(installation: "wns", registrationDescription: "Windows", handleElement: "ChannelUri")
        case .browser: NotificationHubsNames(installation: "browser", registrationDescription: "Browser", handleElement: "Endpoint")
        // Not a Notification Hubs platform: Pushgate's extension, named in the same pattern.
        case .hms:
            NotificationHubsNames(
                installation: "huawei", registrationDescription: "Huawei", handleElement: "HuaweiToken",
                templateWrapsMessage: true)
        // Not reachable through the hub API (``hubPlatforms``): named for completeness.
        case .unifiedpush:
            NotificationHubsNames(installation: "unifiedpush", registrationDescription: "UnifiedPush", handleElement: "Endpoint")
        }
    }

    /// The platforms the hub API registers and sends natively: all but UnifiedPush, whose
    /// endpoints are checked at registration (the tutorial API's `PUT /api/register/{id}`) by a
    /// discovery request the hub's registrations and installations do not make.
    package static let hubPlatforms = allCases.filter { $0 != .unifiedpush }
}
