/// A secure-push payload: stored by the gateway, fetched by its recipient with the id the push
/// notification carried (only the id travels through the push services).
public struct SecureMessage: Sendable, Hashable {
    public var id: String
    public var app: AppID
    /// The user allowed to read it.
    public var recipient: String
    public var sender: String
    public var payload: String
    public var createdAt: Timestamp
    public var expiresAt: Timestamp
    /// Whether it was fetched before.
    public var read: Bool

    public init(
        id: String, app: AppID, recipient: String, sender: String, payload: String, createdAt: Timestamp, expiresAt: Timestamp,
        read: Bool = false
    ) {
        self.id = id
        self.app = app
        self.recipient = recipient
        self.sender = sender
        self.payload = payload
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.read = read
    }
}

/// Where secure-push payloads live until their recipients fetch them.
public protocol SecureMessageStore: Sendable {
    /// Stores `message` durably (the call returns once it is written).
    func storeSecureMessage(_ message: SecureMessage) async throws(StoreError)
    /// The message `id` if `recipient` may read it and it has not expired (nil otherwise, so a
    /// stranger learns nothing); marks it read.
    func readSecureMessage(id: String, app: AppID, recipient: String, now: Timestamp) async throws(StoreError) -> SecureMessage?
}

extension InMemoryRegistrationStore: SecureMessageStore {}
