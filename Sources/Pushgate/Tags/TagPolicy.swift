/// The rules for tags a client supplies, for every way a registration is written (the tutorial
/// API's `PUT /api/register/{id}`, the hub API's registrations and installations): one place.
///
/// - At most ``Tag/maximumPerRegistration`` tags, each a valid ``Tag``.
/// - `$InstallationId:{…}` and `$UserId:{…}` are never supplied: the gateway sets them from an
///   installation, and whoever could set one would receive that installation's or user's
///   notifications.
/// - `username:<name>` binds a registration to an authenticated user: a user may give only their
///   own (an administrator any), a hub's device key (Listen) none, a hub's backend key (Send or
///   Manage) any.
///
/// ```swift
/// let tags = try TagPolicy.check(["news", "username:bob"], writer: .user(name: "bob", isAdmin: false))
/// ```
public enum TagPolicy {
    /// Who supplies the tags.
    public enum Writer: Sendable, Hashable {
        /// A user authenticated by the tutorial API.
        case user(name: String, isAdmin: Bool)
        /// A hub key with only the Listen right: what every copy of an app carries.
        case hubDevice
        /// A hub key with the Send or Manage right: the app's backend.
        case hubBackend
    }

    /// The tags in `texts`, checked for `writer`; the error names the first offending tag by index.
    public static func check(_ texts: [String], writer: Writer) throws(TagPolicyError) -> [Tag] {
        guard texts.count <= Tag.maximumPerRegistration else { throw TagPolicyError(index: nil, problem: .tooMany(texts.count)) }
        var tags: [Tag] = []
        tags.reserveCapacity(texts.count)
        for (index, text) in texts.enumerated() {
            if text.hasPrefix("$") {
                throw TagPolicyError(index: index, problem: .reserved(TagPolicyError.excerpt(text)))
            }
            let tag: Tag
            do { tag = try Tag(text) } catch { throw TagPolicyError(index: index, problem: .invalid(error)) }
            if let problem = usernameProblem(text, writer: writer) { throw TagPolicyError(index: index, problem: problem) }
            tags.append(tag)
        }
        return tags
    }

    private static func usernameProblem(_ text: String, writer: Writer) -> TagPolicyError.Problem? {
        guard text.utf8.count >= 9, text.prefix(9).lowercased() == "username:" else { return nil }
        // A user's tag is `username:<name>` exactly; `Username:…` would be another tag that looks like one.
        if writer != .hubBackend, !text.hasPrefix("username:") { return .miscasedUsername(TagPolicyError.excerpt(text)) }
        switch writer {
        case .hubBackend:
            return nil
        case .user(let name, let isAdmin):
            return isAdmin || text == "username:\(name)" ? nil : .anotherUsers(TagPolicyError.excerpt(text), own: name)
        case .hubDevice:
            return .deviceClaimsUser(TagPolicyError.excerpt(text))
        }
    }
}

/// Supplied tags break ``TagPolicy``: either malformed (``isForbidden`` false) or not the
/// writer's to give (``isForbidden`` true).
public struct TagPolicyError: PushgateInputError, Hashable {
    enum Problem: Hashable {
        case tooMany(Int)
        case invalid(TagError)
        case reserved(String)
        case anotherUsers(String, own: String)
        case deviceClaimsUser(String)
        case miscasedUsername(String)
    }

    /// The position of the offending tag in the list, when one tag is at fault.
    public let index: Int?
    let problem: Problem

    /// Whether the tag is well formed but not the writer's to give (an HTTP API answers 403).
    public var isForbidden: Bool {
        switch problem {
        case .anotherUsers, .deviceClaimsUser: return true
        case .tooMany, .invalid, .reserved, .miscasedUsername: return false
        }
    }

    /// At most 40 characters of a tag, for a message.
    static func excerpt(_ text: String) -> String { text.count > 40 ? String(text.prefix(40)) + "…" : text }

    public var description: String {
        switch problem {
        case .tooMany(let count):
            return TagError.tooMany(count).description
        case .invalid(let error):
            return error.description
        case .reserved(let tag):
            return "tag '\(tag)' is reserved: $InstallationId and $UserId tags are set from an installation, not given"
        case .anotherUsers(let tag, let own):
            return "tag '\(tag)' belongs to another user; the server adds username:\(own)"
        case .miscasedUsername(let tag):
            return "tag '\(tag)' spells the username: prefix in another case; a user's tag is username:<name>, in lower case"
        case .deviceClaimsUser(let tag):
            return
                "tag '\(tag)' is a user's (username:…); a Listen key may not claim it (a user's devices are registered by that user)"
        }
    }
}
