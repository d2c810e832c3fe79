import Foundation
import JWTKit
import Pushgate

/// Google's side: the OAuth token endpoint (`POST /token`, RS256 JWT-bearer assertion), FCM HTTP v1
/// (`POST /v1/projects/{project}/messages:send`) and the legacy HTTP API (`POST /fcm/send`).
struct GoogleService: SandboxHTTPResponder {
    let state: SandboxState
    let credentials: SandboxCredentials
    let keys: JWTKeyCollection
    /// The token endpoint's own URL (the assertion's required `aud`).
    let tokenURI: String

    static let scopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform",
    ]

    init(state: SandboxState, credentials: SandboxCredentials, tokenURI: String) async throws {
        self.state = state
        self.credentials = credentials
        self.tokenURI = tokenURI
        keys = JWTKeyCollection()
        await keys.add(rsa: try Insecure.RSA.PublicKey(pem: credentials.fcmPublicKeyPEM), digestAlgorithm: .sha256)
    }

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let path = request.path
        // Set by a fault that pads the answer.
        var padding = 0
        if path == "/token" {
            let response = await token(request, padding: &padding).padded(padding)
            state.count("fcm-token", status: response.status)
            return response
        }
        if path == "/fcm/send" {
            // Over the listener's 1 MiB: the legacy API's own words for an oversize message.
            let response = request.bodyTooLarge ? .text(400, "MessageTooBig") : await legacySend(request, padding: &padding).padded(padding)
            state.count("gcm", status: response.status)
            return response
        }
        if path == "/iid/v1:batchAdd" || path == "/iid/v1:batchRemove" {
            let response = topicSubscription(request, subscribe: path.hasSuffix("batchAdd"))
            state.count("fcm-iid", status: response.status)
            return response
        }
        if path.hasPrefix("/v1/projects/"), path.hasSuffix("/messages:send") {
            let response =
                request.bodyTooLarge
                ? rpcError(400, "INVALID_ARGUMENT", SandboxAssumptions.fcmMessageTooBigMessage, errorCode: "INVALID_ARGUMENT")
                : await send(request, padding: &padding).padded(padding)
            state.count("fcm", status: response.status)
            return response
        }
        return .text(404, "Not Found")
    }

    /// Applies a transport-level fault (a whole-request answer), or returns nil to answer normally
    /// (after a delay, or with `padding` set for the answer to be padded).
    static func apply(_ action: SandboxFault.Action, padding: inout Int) async -> SandboxHTTPResponse? {
        await action.answer(padding: &padding) { status, reason, retryAfter in
            .text(
                status, reason ?? "Injected fault", headers: retryAfter.map { [HTTPHeader(name: "Retry-After", value: String($0))] } ?? [])
        }
    }

    /// Puts an accepted message in the device's inbox.
    func deliver(_ request: SandboxHTTPRequest, platform: Platform, to device: SandboxDevice, messageID: String) {
        state.deliver(
            deviceID: device.id,
            state.keepsInboxes
                ? ReceivedNotification(
                    platform: platform, deviceID: device.id, messageID: messageID,
                    headers: request.headers.filter { SandboxHTTPRequest.sameName($0.name, "content-type") },
                    payload: String(decoding: request.body, as: UTF8.self), receivedAt: state.clock.now.secondsSinceEpoch) : nil)
    }

    static func messageNumber() -> UInt64 { UInt64.random(in: 1_000_000_000_000_000...9_999_999_999_999_999) }
}
