/// Web Push on the wire (RFC 8030): `POST <endpoint>` of the encrypted payload with `TTL`,
/// `Urgency` and `Topic`, `Content-Encoding: aes128gcm` (RFC 8291) and VAPID authorization
/// (RFC 8292).
public enum WebPushWire {
    /// The `TTL` when the template and the send set none: four weeks, the longest the services
    /// keep a message (RFC 8030 requires the header).
    public static let defaultTimeToLiveSeconds = 2_419_200

    /// `Authorization: vapid t=<JWT>, k=<application server key>`.
    public static func authorization(token: String, publicKey: String) -> String { "vapid t=\(token), k=\(publicKey)" }

    /// The request delivering an encrypted body to a subscription's endpoint; without
    /// `authorization` (a UnifiedPush subscription that asks for no VAPID), no `Authorization`.
    public static func request(
        endpoint: String, encryptedBody: [UInt8], notification: RenderedNotification, authorization: String?
    )
        -> PushHTTPRequest
    {
        var headers = [
            HTTPHeader(name: "Content-Encoding", value: "aes128gcm"),
            HTTPHeader(name: "Content-Type", value: "application/octet-stream"),
        ]
        if let authorization { headers.insert(HTTPHeader(name: "Authorization", value: authorization), at: 0) }
        if HTTPHeader.value(of: "TTL", in: notification.headers) == nil {
            headers.append(HTTPHeader(name: "TTL", value: String(defaultTimeToLiveSeconds)))
        }
        headers.append(contentsOf: notification.headers)
        return PushHTTPRequest(url: endpoint, headers: headers, body: encryptedBody)
    }

    /// What a push service's answer means (Mozilla autopush, FCM, Apple, WNS for Edge).
    public static func classify(_ response: PushHTTPResponse, now: Double) -> DeliveryVerdict {
        let text = String(decoding: response.body.prefix(2048), as: UTF8.self)
        let reason = Self.reason(text)
        var verdict = DeliveryVerdict(
            outcome: .unknownError, statusCode: response.status, reason: reason, serviceMessageID: response.header("Location"))
        let retryAfter = parseRetryAfter(response.header("Retry-After"), now: now)
        if [400, 401, 403].contains(response.status), Self.isKeyMismatch(text) {
            // The subscription was made with another application server key: no token of this
            // key will do for it. The browser's subscription is not gone: nothing is pruned.
            verdict.outcome = .badChannel
            return verdict
        }
        if verdict.classifyRFC8030(status: response.status, retryAfter: retryAfter) { return verdict }
        switch response.status {
        case 200, 201, 202: verdict.outcome = .success
        case 400: verdict.outcome = Self.isBadSubscription(text) ? .badChannel : .invalidNotificationFormat
        case 401:
            // A token the service does not take: signed afresh once, then reported.
            verdict.outcome = .invalidCredentials
            verdict.retry = .refreshCredentials
        case 403: verdict.outcome = .invalidCredentials
        default:
            verdict.classifyOther(status: response.status, retryAfter: retryAfter, serverErrors: [500, 502, 504])
        }
        return verdict
    }

    /// The service's words for a refusal: autopush's `message` (with its `errno`), Apple's
    /// `reason`, FCM's `error.message`, or the start of a text body.
    static func reason(_ text: String) -> String? {
        guard !text.isEmpty else { return nil }
        if let json = try? JSONParser.parse(text) {
            if let message = json["message"]?.stringValue {
                if case .number(let errno)? = json["errno"]?.kind { return "\(message) (errno \(errno))" }
                return message
            }
            if let reason = json["reason"]?.stringValue { return reason }
            if let message = json["error"]?["message"]?.stringValue { return message }
        }
        return String(text.prefix(200))
    }

    /// Whether the service says the subscription belongs to another VAPID key (Apple's
    /// `VapidPkHashMismatch`, autopush's "VAPID public key mismatch", FCM's "credentials … do not
    /// correspond").
    static func isKeyMismatch(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.contains("vapidpkhashmismatch") || lowered.contains("public key mismatch") || lowered.contains("do not correspond")
    }

    /// Whether a 400 says the subscription itself is wrong (autopush errno 102 "invalid token" or
    /// 106 "invalid subscription"; Apple's `BadDeviceToken`; FCM's `UnauthorizedRegistration` or
    /// an invalid registration) rather than the message.
    static func isBadSubscription(_ text: String) -> Bool {
        if let json = try? JSONParser.parse(text), case .number(let errno)? = json["errno"]?.kind, ["102", "106"].contains(errno) {
            return true
        }
        let lowered = text.lowercased()
        return ["baddevicetoken", "unauthorizedregistration", "invalidregistration", "invalid token", "invalid subscription"]
            .contains { lowered.contains($0) }
    }
}
