import Foundation
import Pushgate
import PushgateLocal
import Testing

extension LocalGateway {
    /// Registers `token` as `user`'s Live Activity token, `kind` being the body's `Kind` and its
    /// attributes type or activity (`"Kind":"pushToStart","AttributesType":"…"`), as the app does.
    func registerActivityToken(_ token: String, user: String, kind: String) async throws {
        let id = try #require(try JSONParser.parse(try await call("POST", "/api/register", user: user).body).stringValue)
        let put = try await call("PUT", "/api/register/\(id)", user: user, body: #"{"Platform":"apns","Handle":"\#(token)",\#(kind)}"#)
        #expect(put.status == 200, "\(put.bodyText)")
    }
}
