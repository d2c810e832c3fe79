import Pushgate

/// Who makes a request of the core: a user the tutorial API authenticated, or a hub rule.
public struct AuthenticatedUser: Sendable, Hashable {
    public let name: String
    public let isAdmin: Bool

    public init(name: String, isAdmin: Bool) {
        self.name = name
        self.isAdmin = isAdmin
    }
}

extension AuthenticatedUser {
    /// Whether this user may see which devices a send to `audience` (a notification's audience
    /// text, ``Audience/description``) reached: their registration ids, handles and tags. An
    /// admin may, and so may a user whose own user tag is the whole audience (their own devices).
    /// Anyone else sees per platform and per outcome what the send did, not whose devices it
    /// reached: knowing another account's registration ids, tags or handles is nobody's business
    /// but that account's and the admins'.
    public func mayInspectDevices(ofAudience audience: String) -> Bool {
        if isAdmin || Audience.namesNoRegistrations(audience) { return true }
        // A Live Activity's own tokens: its owner's.
        if let owner = Audience.tokenOwner(ofDescription: audience) { return owner == name }
        guard let own = try? Tag.username(name) else { return false }
        return audience == own.rawValue
    }

    /// Whether this user may see `registration` in full (its id, handle and tags).
    public func mayInspect(_ registration: Registration) -> Bool { isAdmin || registration.owner.isUser(name) }
}
