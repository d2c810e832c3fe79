import Pushgate

/// A scripted misbehaviour: for the next `count` matching requests, answer differently.
public struct SandboxFault: Sendable, Hashable, Codable {
    /// Which endpoint the fault applies to.
    public enum Service: String, Sendable, Hashable, Codable, CaseIterable {
        case apns, fcm, gcm, wns
        /// The Web Push service.
        case browser
        /// The FCM OAuth token endpoint.
        case fcmToken
        /// The WNS OAuth token endpoint.
        case wnsToken
        /// APNs broadcast channel management (`/1/apps/<bundleId>/…`); the handle is the
        /// request's `apns-channel-id`, or the bundle id when it names none (create, list).
        case apnsChannels
        /// APNs broadcast sends (`/4/broadcasts/apps/<bundleId>`); the handle is the
        /// `apns-channel-id`.
        case apnsBroadcast
        /// Huawei Push Kit sends (`/v1/<appId>/messages:send`); the handle is a push token: the
        /// fault answers a request whose `message.token` list names it.
        case hms
        /// Huawei's OAuth token endpoint (app-wide: no handle).
        case hmsToken
        /// The UnifiedPush distributor (`/up/<token>`); the handle is the subscription (JSON).
        case unifiedpush
    }

    public enum Action: Sendable, Hashable, Codable {
        /// Answer with this status; `reason` is the service's reason / error code (APNs `reason`,
        /// FCM `errorCode`, GCM `error`, WNS `X-WNS-Error-Description`, Push Kit `code` such as
        /// `81000001`), with `Retry-After` when given.
        case respond(status: Int, reason: String?, retryAfterSeconds: Int?)
        /// Answer normally after this many milliseconds.
        case delay(milliseconds: Int)
        /// Close the connection without answering.
        case dropConnection
        /// HTTP/2: refuse the request with GOAWAY carrying `{"reason": reason}` and close the
        /// connection (the client retries on a new one). HTTP/1.1: answer 503 and close.
        case goAway(reason: String)
        /// Answer as usual (a message is delivered), the body followed by `bytes` spaces: a
        /// service whose answer is longer than a client should read. (Spaces keep a JSON body
        /// JSON.) Over legacy GCM, a fault for the whole request (no handle) only.
        case padBody(bytes: Int)
    }

    public var service: Service
    /// Only requests to this handle (device token, registration token, channel URI, APNs
    /// broadcast channel id, Push Kit token); nil for all.
    public var handle: String?
    public var action: Action
    /// How many requests the fault applies to.
    public var count: Int

    public init(service: Service, handle: String? = nil, action: Action, count: Int = 1) {
        self.service = service
        self.handle = handle
        self.action = action
        self.count = count
    }
}

extension SandboxFault.Action {
    /// The answer a fault makes, or nil to answer normally (after a delay, or with `padding` set
    /// for the answer to be padded): `respond` is the service's own error answer (its status, its
    /// reason, its `Retry-After`); the other actions are every service's. A GOAWAY comes with
    /// `goingAway`, the service's 503.
    func answer(
        padding: inout Int, goingAway: SandboxHTTPResponse = .text(503, "Service Unavailable"),
        respond: (_ status: Int, _ reason: String?, _ retryAfter: Int?) -> SandboxHTTPResponse
    ) async -> SandboxHTTPResponse? {
        switch self {
        case .respond(let status, let reason, let retryAfter):
            return respond(status, reason, retryAfter)
        case .delay(let milliseconds):
            try? await Task.sleep(for: .milliseconds(milliseconds))
            return nil
        case .dropConnection:
            return .dropConnection
        case .goAway(let reason):
            var response = goingAway
            response.action = .goAway(#"{"reason":"\#(reason)"}"#)
            return response
        case .padBody(let bytes):
            padding = bytes
            return nil
        }
    }
}
