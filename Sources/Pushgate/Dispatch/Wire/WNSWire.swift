/// WNS on the wire: `POST <channel URI>` over HTTP/1.1 with a bearer token and `X-WNS-*` headers.
public enum WNSWire {
    public static func request(channelURI: String, notification: RenderedNotification, accessToken: String) -> PushHTTPRequest {
        PushHTTPRequest(
            url: channelURI,
            headers: [
                HTTPHeader(name: "Authorization", value: "Bearer \(accessToken)"),
                HTTPHeader(name: "Content-Type", value: notification.contentType),
            ] + notification.headers,
            body: notification.body)
    }

    /// What WNS's answer means (status, `X-WNS-Status`, `X-WNS-Error-Description`).
    public static func classify(_ response: PushHTTPResponse, now: Double) -> DeliveryVerdict {
        let status = response.header("X-WNS-Status") ?? response.header("X-WNS-NotificationStatus")
        let description = response.header("X-WNS-Error-Description")
        var verdict = DeliveryVerdict(
            outcome: .unknownError, statusCode: response.status, reason: description ?? status,
            serviceMessageID: response.header("X-WNS-Msg-ID"))
        let retryAfter = parseRetryAfter(response.header("Retry-After"), now: now)
        switch response.status {
        case 200:
            switch status?.lowercased() {
            case "dropped": verdict.outcome = .dropped
            case "channelthrottled": verdict.outcome = .channelThrottled
            default: verdict.outcome = .success
            }
        case 400: verdict.outcome = .invalidNotificationFormat
        case 401:
            verdict.outcome = .invalidToken
            verdict.retry = .refreshCredentials
        case 403: verdict.outcome = .wrongToken
        case 404:
            verdict.outcome = .badChannel
            verdict.handleChange = .remove
        case 405: verdict.outcome = .pnsInterfaceError
        case 406:
            verdict.outcome = .throttled
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        case 410:
            verdict.outcome = .expiredChannel
            verdict.handleChange = .remove
        case 413: verdict.outcome = .invalidNotificationSize
        case 500:
            verdict.outcome = .pnsServerError
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        case 503:
            verdict.outcome = .pnsUnavailable
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        default:
            verdict.outcome = response.status >= 500 ? .pnsUnavailable : .pnsInterfaceError
        }
        return verdict
    }
}
