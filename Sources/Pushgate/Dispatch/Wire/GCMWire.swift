/// The legacy GCM/FCM HTTP API on the wire: `POST /fcm/send` with `Authorization: key=…`, up to
/// 1000 registration ids per request, one result per id in order.
public enum GCMWire {
    /// Most registration ids in one request.
    public static let maximumBatch = 1000
    /// The answer's size limit: one result per registration id, each a message id and perhaps a
    /// canonical registration id (today's are about 160 characters), about 250 bytes; 1 MiB holds
    /// a full batch's with room to spare.
    public static let maximumResponseBodyBytes = 1024 * 1024

    /// The request sending `notification` (rendered legacy message fields) to `tokens`.
    public static func request(endpoint: String, serverKey: String, tokens: [String], notification: RenderedNotification) -> PushHTTPRequest
    {
        precondition(!tokens.isEmpty && tokens.count <= maximumBatch, "1 to \(maximumBatch) tokens per legacy request")
        var body: [UInt8] = Array(#"{"registration_ids":["#.utf8)
        for (index, token) in tokens.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            Escaping.appendJSONString(token, to: &body)
        }
        body.append(UInt8(ascii: "]"))
        JSONSplice.appendMembers(of: notification.body, to: &body)
        body.append(UInt8(ascii: "}"))
        var request = PushHTTPRequest(
            url: endpoint,
            headers: [
                HTTPHeader(name: "authorization", value: "key=\(serverKey)"), HTTPHeader(name: "content-type", value: "application/json"),
            ],
            body: body)
        request.maximumResponseBodyBytes = maximumResponseBodyBytes
        return request
    }

    /// One verdict per token, in the order of `tokens`.
    public static func classify(_ response: PushHTTPResponse, tokens: [String], now: Double) -> [DeliveryVerdict] {
        let retryAfter = parseRetryAfter(response.header("retry-after"), now: now)
        func all(_ verdict: DeliveryVerdict) -> [DeliveryVerdict] { Array(repeating: verdict, count: tokens.count) }
        switch response.status {
        case 200: break
        case 400:
            return all(
                DeliveryVerdict(
                    outcome: .invalidNotificationFormat, statusCode: 400, reason: String(decoding: response.body.prefix(200), as: UTF8.self)
                ))
        case 401: return all(DeliveryVerdict(outcome: .invalidCredentials, statusCode: 401, reason: "the server key was refused"))
        case 500...:
            return all(
                DeliveryVerdict(
                    outcome: .pnsUnavailable, statusCode: response.status, reason: "Unavailable",
                    retry: .afterBackoff(retryAfterSeconds: retryAfter)))
        default: return all(DeliveryVerdict(outcome: .pnsInterfaceError, statusCode: response.status))
        }
        if response.isBodyTruncated {
            // Accepted (200), but the per-id results were cut off: sent again, it would reach
            // every device twice.
            return all(
                DeliveryVerdict(
                    outcome: .success, statusCode: 200,
                    reason: "the answer was longer than \(maximumResponseBodyBytes) bytes; its per-device results were not read"))
        }
        guard let results = response.json?["results"]?.arrayElements, results.count == tokens.count else {
            return all(DeliveryVerdict(outcome: .pnsInterfaceError, statusCode: 200, reason: "results do not match the registration ids"))
        }
        return zip(results, tokens).map { result, token in
            var verdict = DeliveryVerdict(outcome: .success, statusCode: 200)
            if let messageID = result["message_id"]?.stringValue {
                verdict.serviceMessageID = messageID
                if let canonical = result["registration_id"]?.stringValue, canonical != token {
                    verdict.handleChange = .replace(with: canonical)
                }
                return verdict
            }
            let error = result["error"]?.stringValue ?? "UnknownError"
            verdict.reason = error
            switch error {
            case "NotRegistered":
                verdict.outcome = .expiredChannel
                verdict.handleChange = .remove
            case "InvalidRegistration", "MissingRegistration":
                verdict.outcome = .badChannel
                verdict.handleChange = .remove
            case "MismatchSenderId":
                verdict.outcome = .wrongChannel
            case "MessageTooBig":
                verdict.outcome = .invalidNotificationSize
            case "Unavailable", "InternalServerError":
                verdict.outcome = error == "Unavailable" ? .pnsUnavailable : .pnsServerError
                verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
            case "DeviceMessageRateExceeded", "TopicsMessageRateExceeded":
                verdict.outcome = .throttled
                verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
            case "InvalidApnsCredential":
                verdict.outcome = .invalidCredentials
            default:
                verdict.outcome = .invalidNotificationFormat
            }
            return verdict
        }
    }
}
