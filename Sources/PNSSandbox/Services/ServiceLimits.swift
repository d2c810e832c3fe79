/// Payload limits as each service documents them, kept here on purpose rather than taken from
/// the gateway's own constants (`Platform.maximumPayloadBytes`, `PayloadLimit`): a wrong constant
/// in the gateway then shows up as a disagreement with the sandbox instead of agreeing with
/// itself. Each constant names the service's document it comes from.
enum ServiceLimits {
    /// APNs: 4096 bytes for regular notifications (Apple, "Generating a remote notification").
    static let apnsPayloadBytes = 4096
    /// APNs: 5120 bytes for VoIP notifications (same page).
    static let apnsVoIPPayloadBytes = 5120
    /// APNs broadcast: 5120 bytes (Apple, "Sending broadcast push notification requests to APNs").
    static let apnsBroadcastPayloadBytes = 5120
    /// Legacy FCM HTTP: 4096 bytes for most messages (Firebase, "ErrorCode": MessageTooBig).
    static let gcmPayloadBytes = 4096
    /// WNS: 413 for a payload over 5000 bytes (Microsoft, "Push notification service request and
    /// response headers").
    static let wnsPayloadBytes = 5000
    /// Web Push: 4096 bytes of encrypted body, the smallest of the services' (Mozilla autopush's
    /// limit; RFC 8030 §7.2 asks push services to take at least 4096).
    static let webPushBodyBytes = 4096
}
