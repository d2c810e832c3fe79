/// One of an app's broadcast channels (APNs channel management, iOS 18).
public struct SandboxChannel: Sendable, Hashable {
    /// `apns-channel-id`: base64 of 16 random bytes.
    public let id: String
    /// The bundle id the channel belongs to.
    public let app: String
    /// 0: no message stored; 1: the most recent message stored.
    public let messageStoragePolicy: Int
}
