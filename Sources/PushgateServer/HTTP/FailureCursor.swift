import Foundation
import Pushgate

/// The `failedAfter` cursor of a notification's failed targets: opaque to clients (`f1.` and the
/// last listed target's key in base64url), so that the paging contract does not rest on what a
/// target is. Only a reader who may see the listed devices gets one (``AuthenticatedUser/mayInspectDevices(ofAudience:)``).
enum FailureCursor {
    private static let prefix = "f1."

    static func token(after key: String) -> String { prefix + Base64URL.encode(Array(key.utf8)) }

    /// The key a cursor continues after; nil for anything this gateway did not give.
    static func registrationID(_ token: String) -> String? {
        guard token.hasPrefix(prefix), let bytes = Base64URL.decode(String(token.dropFirst(prefix.count))),
            let key = String(bytes: bytes, encoding: .utf8), (try? RegistrationID(key)) != nil
        else { return nil }
        return key
    }
}
