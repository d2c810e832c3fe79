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

    /// Answer headers Microsoft asks for in problem reports, kept in the per-device result.
    public static let diagnosticHeaders = ["X-WNS-Debug-Trace", "MS-CV", "X-WNS-DeviceConnectionStatus"]

    /// Whether a 410's description is WNS's "Domain Blocked" rather than an expired channel.
    static func isDomainBlocked(_ description: String?) -> Bool {
        guard let text = description?.lowercased() else { return false }
        return text.contains("domain blocked") || text.contains("domain is blocked")
    }

    /// What WNS's answer means (status, `X-WNS-Status`, `X-WNS-Error-Description`).
    public static func classify(_ response: PushHTTPResponse, now: Double) -> DeliveryVerdict {
        let status = response.header("X-WNS-Status") ?? response.header("X-WNS-NotificationStatus")
        let description = response.header("X-WNS-Error-Description")
        var verdict = DeliveryVerdict(
            outcome: .unknownError, statusCode: response.status, reason: description ?? status,
            serviceMessageID: response.header("X-WNS-Msg-ID"))
        let retryAfter = parseRetryAfter(response.header("Retry-After"), now: now)
        verdict.diagnostics = Self.diagnosticHeaders.compactMap { name in response.header(name).map { HTTPHeader(name: name, value: $0) } }
        switch response.status {
        case 200:
            switch status?.lowercased() {
            case "dropped":
                let connection = response.header("X-WNS-DeviceConnectionStatus")?.lowercased()
                verdict.outcome = connection == "disconnected" ? .channelDisconnected : .dropped
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
        case 410 where Self.isDomainBlocked(description):
            // "410 Domain Blocked": WNS refuses the sender, not the channel; pruning would delete
            // every WNS registration the send reaches.
            verdict.outcome = .invalidCredentials
            verdict.reason = "Domain Blocked: \(description ?? "")"
        case 410:
            verdict.outcome = .expiredChannel
            verdict.handleChange = .remove
        case 413: verdict.outcome = .invalidNotificationSize
        default:
            verdict.classifyOther(status: response.status, retryAfter: retryAfter, serverErrors: [500])
        }
        return verdict
    }
}
