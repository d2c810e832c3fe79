import Foundation
import Pushgate

/// The opaque continuation token of a registration listing: the last id answered, marked and
/// base64url-encoded, so that only tokens the hub issued are taken back.
package enum ContinuationToken {
    package static func token(after id: RegistrationID) -> String {
        Data(("nh1." + id.rawValue).utf8).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    /// The id a token continues after; nil for anything the hub did not issue.
    package static func registrationID(_ token: String) -> RegistrationID? {
        guard token.count <= 200 else { return nil }
        var base64 = token.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8), text.hasPrefix("nh1.") else {
            return nil
        }
        return try? RegistrationID(String(text.dropFirst(4)))
    }
}
