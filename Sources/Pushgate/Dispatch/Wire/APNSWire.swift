/// The APNs provider API on the wire: `POST /3/device/<token>` over HTTP/2.
public enum APNSWire {
    /// The request delivering `notification` to `deviceToken`.
    ///
    /// - Parameters:
    ///   - topic: the default `apns-topic` (a template's own `apns-topic` header wins).
    ///   - providerToken: the ES256 JWT for token auth; nil with certificate auth.
    public static func request(
        endpoint: String, deviceToken: String, notification: RenderedNotification, topic: String, providerToken: String?,
        apnsID: String? = nil
    ) -> PushHTTPRequest {
        request(
            endpoint: endpoint, deviceToken: deviceToken, notification: notification,
            headers: headers(notification: notification, topic: topic, providerToken: providerToken, apnsID: apnsID))
    }

    /// The request to one device with headers already built (a fan-out builds them once).
    public static func request(
        endpoint: String, deviceToken: String, notification: RenderedNotification, headers: [HTTPHeader]
    ) -> PushHTTPRequest {
        PushHTTPRequest(url: "\(endpoint)/3/device/\(deviceToken)", headers: headers, body: notification.body)
    }

    /// A broadcast to a channel (iOS 18): `POST /4/broadcasts/apps/<bundle id>` with the channel's
    /// id and no topic; `apns-expiration` is required (0 when the payload names none).
    public static func broadcastRequest(
        endpoint: String, bundleID: String, channelID: String, notification: RenderedNotification, providerToken: String?
    ) -> PushHTTPRequest {
        var headers: [HTTPHeader] = []
        if let providerToken { headers.append(HTTPHeader(name: "authorization", value: "bearer \(providerToken)")) }
        headers.append(HTTPHeader(name: "apns-channel-id", value: channelID))
        headers += notification.headers.filter { $0.name != "apns-topic" }
        if !notification.headers.contains(where: { $0.name == "apns-expiration" }) {
            headers.append(HTTPHeader(name: "apns-expiration", value: "0"))
        }
        headers.append(HTTPHeader(name: "content-type", value: "application/json"))
        return PushHTTPRequest(url: "\(endpoint)/4/broadcasts/apps/\(bundleID)", headers: headers, body: notification.body)
    }

    /// The request headers: the same for every device of a send with one provider token.
    public static func headers(
        notification: RenderedNotification, topic: String, providerToken: String?, apnsID: String? = nil
    ) -> [HTTPHeader] {
        var headers: [HTTPHeader] = []
        if let providerToken { headers.append(HTTPHeader(name: "authorization", value: "bearer \(providerToken)")) }
        if !notification.headers.contains(where: { $0.name == "apns-topic" }) {
            // The topic a push type needs: the bundle id with its suffix (`.push-type.widgets`, …).
            let pushType = notification.headers.first { $0.name == "apns-push-type" }.flatMap { APNSPushType(rawValue: $0.value) }
            headers.append(HTTPHeader(name: "apns-topic", value: pushType?.topic(bundleID: topic) ?? topic))
        }
        headers.append(contentsOf: notification.headers)
        if let apnsID { headers.append(HTTPHeader(name: "apns-id", value: apnsID)) }
        headers.append(HTTPHeader(name: "content-type", value: "application/json"))
        return headers
    }

    /// What APNs' answer means (Apple's status and `reason` table).
    public static func classify(_ response: PushHTTPResponse, now: Double) -> DeliveryVerdict {
        let apnsID = response.header("apns-id")
        let reason = response.json?["reason"]?.stringValue
        var verdict = DeliveryVerdict(outcome: .unknownError, statusCode: response.status, reason: reason, serviceMessageID: apnsID)
        if let unique = response.header("apns-unique-id") { verdict.diagnostics = [HTTPHeader(name: "apns-unique-id", value: unique)] }
        let retryAfter = parseRetryAfter(response.header("retry-after"), now: now)
        switch (response.status, reason) {
        case (200, _):
            verdict.outcome = .success
        case (410, _):
            verdict.outcome = .expiredChannel
            verdict.handleChange = .remove
            if case .number(let timestamp)? = response.json?["timestamp"]?.kind {
                verdict.reason = "\(reason ?? "Unregistered") (since \(timestamp) ms)"
            }
        case (400, "BadDeviceToken"), (400, "MissingDeviceToken"):
            verdict.outcome = .badChannel
        case (400, "DeviceTokenNotForTopic"):
            verdict.outcome = .wrongChannel
        case (400, "ChannelNotRegistered"), (400, "BadChannelId"), (400, "MissingChannelId"):
            // A broadcast's channel Apple does not know (deleted, or the other environment).
            verdict.outcome = .badChannel
        case (400, "IdleTimeout"):
            verdict.outcome = .pnsUnavailable
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        case (400, _):
            verdict.outcome = .invalidNotificationFormat
        case (403, "ExpiredProviderToken"):
            // Stale (or the clocks disagree): a newly signed token is the documented cure.
            verdict.outcome = .invalidCredentials
            verdict.retry = .refreshCredentials
        case (403, _):
            // InvalidProviderToken (a key id, team id or key APNs does not know), BadCertificate,
            // BadCertificateEnvironment, MissingProviderToken, Forbidden: configuration errors a
            // retry cannot mend (a refresh would resend the same token for 20 minutes).
            verdict.outcome = .invalidCredentials
        case (404, _), (405, _):
            verdict.outcome = .pnsInterfaceError
        case (413, _):
            verdict.outcome = .invalidNotificationSize
        case (429, "TooManyProviderTokenUpdates"):
            // The token changed too often on this connection, which stays unusable for it (Apple's
            // engineers: the rule is per connection); the same token on a new connection is fine.
            verdict.outcome = .throttled
            verdict.retry = .newConnection
        case (429, _):
            verdict.outcome = .throttled
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        case (500, _):
            verdict.outcome = .pnsServerError
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        case (503, _):
            verdict.outcome = .pnsUnavailable
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        default:
            verdict.outcome = response.status >= 500 ? .pnsUnavailable : .pnsInterfaceError
            if response.status >= 500 { verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter) }
        }
        return verdict
    }
}
