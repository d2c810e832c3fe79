import Pushgate

/// Registration templates as Notification Hubs writes them (its FCM v1 bodies, and Pushgate's
/// Huawei ones, wrapped in `{"message": …}`, the platform's native send body). Compiling them is the domain's (``RegistrationTemplate/compiled(for:cache:)``);
/// which payload each target of a page gets, the outbox's (`PagePayloads`).
public enum HubTemplates {
    /// A template body as a hub client wrote it, as the gateway stores it for `platform`: the
    /// message unwrapped where the platform's templates wrap it
    /// (``NotificationHubsNames/templateWrapsMessage``), else as it is.
    package static func stored(_ body: String, for platform: Platform) -> String {
        platform.notificationHubs.templateWrapsMessage ? unwrappedFCMTemplate(body) : body
    }

    /// A stored template body as a hub client reads it back: the inverse of ``stored(_:for:)``.
    package static func written(_ body: String, for platform: Platform) -> String {
        platform.notificationHubs.templateWrapsMessage ? wrappedFCMTemplate(body) : body
    }

    /// An FCM v1 template body as Notification Hubs takes it, `{"message": {…}}`, unwrapped to the
    /// message the gateway's FCM templates are (the gateway sets the token). Any other body is
    /// returned as it is, for the template compiler to judge.
    package static func unwrappedFCMTemplate(_ body: String) -> String {
        guard let root = try? JSONParser.parse(Array(body.utf8)), let members = root.objectMembers, members.count == 1,
            members[0].key == "message", members[0].value.objectMembers != nil
        else { return body }
        return String(decoding: members[0].value.serialized(), as: UTF8.self)
    }

    /// A stored FCM v1 template as Notification Hubs writes it back, `{"message": {…}}`: the
    /// inverse of ``unwrappedFCMTemplate(_:)``. A body already in that shape, or one that is not
    /// a JSON object, is returned as it is.
    package static func wrappedFCMTemplate(_ body: String) -> String {
        if let root = try? JSONParser.parse(Array(body.utf8)) {
            guard let members = root.objectMembers else { return body }
            if members.count == 1, members[0].key == "message", members[0].value.objectMembers != nil { return body }
            return #"{"message":"# + body + "}"
        }
        // A template with expressions is not JSON; only one that is not yet wrapped gets wrapped.
        let text = body.drop(while: \.isWhitespace)
        guard text.first == "{" else { return body }
        let afterBrace = text.dropFirst().drop(while: \.isWhitespace)
        if afterBrace.hasPrefix(#""message""#), afterBrace.dropFirst(9).drop(while: \.isWhitespace).first == ":" { return body }
        return #"{"message":"# + body + "}"
    }
}
