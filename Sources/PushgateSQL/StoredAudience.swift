import Pushgate

/// The audience columns of a stored notification, read back the same way by every SQL store: the
/// FCM recipient when there is one, else the tag expression's text.
package enum StoredAudience {
    package static func decode(text: String, recipient: String?) throws(StoreError) -> Audience {
        guard let audience = Audience.stored(text: text, recipient: recipient) else {
            throw StoreError(.storage, recipient == nil ? "a stored audience is corrupt" : "a stored recipient is corrupt")
        }
        return audience
    }
}
