/// Who makes a request of the core: a user the tutorial API authenticated, or a hub rule.
public struct AuthenticatedUser: Sendable, Hashable {
    public let name: String
    public let isAdmin: Bool

    public init(name: String, isAdmin: Bool) {
        self.name = name
        self.isAdmin = isAdmin
    }
}
