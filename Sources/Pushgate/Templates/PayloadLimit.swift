/// Each push service's payload size limit, checked on every rendered payload before it is sent.
public enum PayloadLimit {
    /// APNs VoIP notifications may be larger than regular ones.
    public static let apnsVoIPBytes = 5120
    /// FCM messages to a topic or condition: Firebase's error-code reference gives 2048 bytes.
    public static let fcmTopicBytes = 2048

    /// The limit in bytes for `platform`; `apnsPushType` selects the VoIP limit on APNs.
    public static func maximumBytes(for platform: Platform, apnsPushType: String? = nil) -> Int {
        if platform == .apns, apnsPushType == "voip" { return apnsVoIPBytes }
        return platform.maximumPayloadBytes
    }

    /// Throws when `size` exceeds the limit for `platform`.
    public static func check(size: Int, platform: Platform, apnsPushType: String? = nil) throws(PayloadSizeError) {
        let limit = maximumBytes(for: platform, apnsPushType: apnsPushType)
        if size > limit { throw PayloadSizeError(platform: platform, size: size, limit: limit) }
    }
}

/// A rendered payload is larger than its push service accepts.
public struct PayloadSizeError: PushgateInputError, Hashable {
    public let platform: Platform
    public let size: Int
    public let limit: Int

    public var isOverLimit: Bool { true }

    public var description: String {
        "\(platform.serviceName) payload is \(size) bytes; the limit is \(limit) bytes"
    }
}
