/// APNs' push types (`apns-push-type`) and the topic each needs (Apple's table, `protocols.md`
/// §8.3): the bundle id, or the bundle id with a suffix. The topic is set from the app's bundle
/// id (`apns.topic`) for a payload that names its push type and no topic; a template naming a
/// push type that its app's authentication cannot send is refused when the configuration loads.
///
/// `mdm` is not among them: its topic is the UID of an MDM certificate, not derived from a bundle
/// id, and mobile device management is not what Pushgate sends.
public enum APNSPushType: String, Sendable, Hashable, CaseIterable {
    case alert, background, location, voip, complication, fileprovider
    case liveActivity = "liveactivity"
    case pushToTalk = "pushtotalk"
    case widgets, controls

    /// What the bundle id is suffixed with in `apns-topic`.
    public var topicSuffix: String {
        switch self {
        case .alert, .background: ""
        case .location: ".location-query"
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .liveActivity: ".push-type.liveactivity"
        case .pushToTalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The `apns-topic` for an app whose bundle id is `bundleID`.
    public func topic(bundleID: String) -> String { bundleID + topicSuffix }

    /// Whether Apple accepts it with provider-token (JWT) authentication only.
    public var needsTokenAuthentication: Bool { self == .liveActivity || self == .location }

    /// The push type a topic's suffix stands for, when `topic` is `bundleID` with a known suffix.
    public static func named(byTopic topic: String, bundleID: String) -> APNSPushType? {
        guard topic.hasPrefix(bundleID) else { return nil }
        let suffix = topic.dropFirst(bundleID.count)
        return allCases.first { $0.topicSuffix == suffix }
    }

    /// Why a payload with push type `pushType` and topic `topic` (nil: set for it) cannot go to an
    /// app with bundle id `bundleID` and, when `tokenAuthentication` is false, a certificate; nil
    /// when it can. `mdm` and unknown types are named as such.
    public static func problem(pushType text: String, topic: String?, bundleID: String, tokenAuthentication: Bool) -> String? {
        guard let type = APNSPushType(rawValue: text) else {
            if text == "mdm" { return "apns-push-type mdm is not supported: its topic is an MDM certificate's UID" }
            return "apns-push-type '\(text)' is not one of APNs' push types (\(allCases.map(\.rawValue).joined(separator: ", ")))"
        }
        if type.needsTokenAuthentication && !tokenAuthentication {
            return
                "apns-push-type \(type.rawValue) needs token authentication (apns.keyId, apns.teamId, apns.privateKey); the app uses a certificate"
        }
        if let topic, topic != type.topic(bundleID: bundleID) {
            return "apns-topic '\(topic)' does not fit apns-push-type \(type.rawValue): APNs expects '\(type.topic(bundleID: bundleID))'"
        }
        return nil
    }
}
