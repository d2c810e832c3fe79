import Foundation
import PNSSandbox
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

    /// A new sandbox phone of `user`'s with a push-to-start token of `DeliveryAttributes`
    /// registered, as the app registers the one ActivityKit gives it.
    func phoneReadyToStart(user: String) async throws -> SandboxDevice {
        let phone = await sandbox.createDevice(.apns)
        try await registerActivityToken(
            sandbox.state.liveActivities.issuePushToStartToken(deviceID: phone.id, attributesType: "DeliveryAttributes"), user: user,
            kind: #""Kind":"pushToStart","AttributesType":"DeliveryAttributes""#)
        return phone
    }
}
