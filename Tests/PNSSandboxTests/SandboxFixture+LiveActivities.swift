import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl

/// Requests for Live Activities, broadcast channels and broadcasts, and the control API's Live
/// Activity routes.
extension SandboxFixture {
    var liveActivityTopic: String { sandbox.credentials.apnsTopic + ".push-type.liveactivity" }

    /// A `liveactivity` push of `{"aps": aps}` to `token`, priority 10.
    func liveActivityRequest(token: String, jwt: String, aps: String, headers: [(String, String)] = []) -> CurlRequest {
        apnsRequest(
            token: token, jwt: jwt, payload: #"{"aps":\#(aps)}"#,
            headers: [("apns-push-type", "liveactivity"), ("apns-topic", liveActivityTopic), ("apns-priority", "10")] + headers)
    }

    /// Runs `body` with an HTTP/1.1 client for the control API, and always shuts it down.
    func withControl(_ body: (CurlHTTPClient) async throws -> Void) async throws {
        let control = try client(.http1)
        do {
            try await body(control)
        } catch {
            await control.shutdown()
            throw error
        }
        await control.shutdown()
    }

    /// A control API call (plain HTTP/1.1: `client` must be an HTTP/1.1 client).
    func control(_ client: CurlHTTPClient, _ method: String, _ path: String, _ body: String = "") async throws -> CurlResponse {
        try await client.execute(
            CurlRequest(
                method: method, url: sandbox.endpoints.control + path, headers: [("content-type", "application/json")],
                body: Array(body.utf8)))
    }

    /// The device's push-to-start token for `attributesType`, from the control API.
    func pushToStartToken(
        _ control: CurlHTTPClient, deviceID: String, attributesType: String = "DeliveryAttributes"
    ) async throws
        -> String
    {
        let response = try await self.control(
            control, "POST", "/devices/\(deviceID)/pushtostart", #"{"attributesType":"\#(attributesType)"}"#)
        guard response.status == 201, let token = response.json?["token"]?.stringValue else {
            throw CurlError.unexpected("pushtostart answered \(response.status) \(response.bodyText)")
        }
        return token
    }

    /// The device's activities as the control API shows them.
    func activities(_ control: CurlHTTPClient, deviceID: String) async throws -> [JSONValue] {
        try await self.control(control, "GET", "/devices/\(deviceID)/activities").json?["activities"]?.arrayElements ?? []
    }

    /// A channel management request (`/1/apps/<app>/<resource>`).
    func channelRequest(
        _ method: String, _ resource: String = "channels", app: String? = nil, jwt: String, channelID: String? = nil,
        headers: [(String, String)] = [], body: String = ""
    ) -> CurlRequest {
        var all: [(name: String, value: String)] = [("authorization", "bearer \(jwt)")]
        if let channelID { all.append(("apns-channel-id", channelID)) }
        all += headers.map { (name: $0.0, value: $0.1) }
        return CurlRequest(
            method: method, url: "\(sandbox.endpoints.apns)/1/apps/\(app ?? sandbox.credentials.apnsTopic)/\(resource)", headers: all,
            body: Array(body.utf8))
    }

    /// Creates a channel with `policy` and returns its id.
    func createChannel(_ client: CurlHTTPClient, jwt: String, policy: Int = 1) async throws -> String {
        let response = try await client.execute(
            channelRequest("POST", jwt: jwt, body: #"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"#))
        guard response.status == 201, let id = response.header("apns-channel-id") else {
            throw CurlError.unexpected("channel creation answered \(response.status) \(response.bodyText)")
        }
        return id
    }

    /// A broadcast of `{"aps": aps}` on `channelID`, with the required headers (`liveactivity`,
    /// expiration 0, priority 10) unless `headers` replaces them.
    func broadcastRequest(channelID: String?, jwt: String, aps: String, headers: [(String, String)] = []) -> CurlRequest {
        var all: [(name: String, value: String)] = [
            ("authorization", "bearer \(jwt)"), ("apns-push-type", "liveactivity"), ("apns-expiration", "0"), ("apns-priority", "10"),
        ]
        if let channelID { all.append(("apns-channel-id", channelID)) }
        for (name, value) in headers {
            all.removeAll { $0.name == name }
            all.append((name, value))
        }
        return CurlRequest(
            url: "\(sandbox.endpoints.apns)/4/broadcasts/apps/\(sandbox.credentials.apnsTopic)", headers: all,
            body: Array(#"{"aps":\#(aps)}"#.utf8))
    }
}

extension JSONValue {
    /// The value as compact JSON text (numbers as written).
    var text: String { String(decoding: serialized(), as: UTF8.self) }
}
