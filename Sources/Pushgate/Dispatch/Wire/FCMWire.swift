/// FCM HTTP v1 on the wire: `POST /v1/projects/{project}/messages:send` with an OAuth bearer token.
public enum FCMWire {
    /// The request sending `notification` (a rendered v1 `Message` without a target) to `token`.
    public static func request(
        endpoint: String, projectID: String, token: String, notification: RenderedNotification, accessToken: String
    )
        -> PushHTTPRequest
    {
        request(
            url: url(endpoint: endpoint, projectID: projectID), token: token, notification: notification,
            headers: headers(accessToken: accessToken))
    }

    /// The request to one device with the URL and headers already built (a fan-out builds them once).
    public static func request(url: String, token: String, notification: RenderedNotification, headers: [HTTPHeader]) -> PushHTTPRequest {
        PushHTTPRequest(url: url, headers: headers, body: body(token: token, notification: notification))
    }

    /// The send URL of a project.
    public static func url(endpoint: String, projectID: String) -> String { "\(endpoint)/v1/projects/\(projectID)/messages:send" }

    /// The request headers: the same for every device of a send with one access token.
    public static func headers(accessToken: String) -> [HTTPHeader] {
        [
            HTTPHeader(name: "authorization", value: "Bearer \(accessToken)"),
            HTTPHeader(name: "content-type", value: "application/json; charset=UTF-8"),
        ]
    }

    /// The message for one device: the rendered payload's members under `message`, with its token
    /// (or, for a topic or condition target, its `topic` or `condition`; see ``FCMRecipient``).
    public static func body(token: String, notification: RenderedNotification) -> [UInt8] {
        let recipient = FCMRecipient(handleValue: token)
        var body: [UInt8] = Array((notification.validateOnly ? #"{"validate_only":true,"message":{""# : #"{"message":{""#).utf8)
        body.reserveCapacity(notification.body.count + token.utf8.count + 40)
        body.append(contentsOf: (recipient?.field ?? "token").utf8)
        body.append(contentsOf: #"":"#.utf8)
        Escaping.appendJSONString(recipient?.value ?? token, to: &body)
        JSONSplice.appendMembers(of: notification.body, to: &body)
        body.append(contentsOf: "}}".utf8)
        return body
    }

    /// Firebase's least backoff after `QUOTA_EXCEEDED` ("at least one minute").
    public static let minimumQuotaBackoffSeconds = 60.0

    /// What FCM's answer means (google.rpc status and the `FcmError` detail).
    public static func classify(_ response: PushHTTPResponse, now: Double) -> DeliveryVerdict {
        let json = response.json
        let error = json?["error"]
        let details = error?["details"]?.arrayElements ?? []
        let errorCode = details.first(where: { $0["@type"]?.stringValue?.hasSuffix("FcmError") == true })?["errorCode"]?.stringValue
        // google.rpc.BadRequest: which request fields were wrong ("message.token" for a bad token).
        let violations = details.filter { $0["@type"]?.stringValue?.hasSuffix("google.rpc.BadRequest") == true }
            .flatMap { $0["fieldViolations"]?.arrayElements ?? [] }
        let violatedFields = violations.compactMap { $0["field"]?.stringValue }
        let violationTexts = violations.compactMap { $0["description"]?.stringValue }
        let message = error?["message"]?.stringValue
        var verdict = DeliveryVerdict(
            outcome: .unknownError, statusCode: response.status, reason: errorCode ?? error?["status"]?.stringValue)
        if let message, let code = verdict.reason { verdict.reason = "\(code): \(message)" }
        if !violations.isEmpty, let reason = verdict.reason {
            let listed = zip(violatedFields, violationTexts).map { "\($0): \($1)" }
            verdict.reason = "\(reason) (\(listed.joined(separator: "; ")))"
        }
        let retryAfter = parseRetryAfter(response.header("retry-after"), now: now)
        switch (response.status, errorCode) {
        case (200, _):
            verdict.outcome = .success
            verdict.serviceMessageID = json?["name"]?.stringValue
            verdict.reason = nil
        case (_, "UNREGISTERED"):
            verdict.outcome = .expiredChannel
            verdict.handleChange = .remove
        case (_, "SENDER_ID_MISMATCH"):
            verdict.outcome = .wrongChannel
        case (_, "QUOTA_EXCEEDED"):
            // Firebase: back off exponentially from at least a minute (honouring Retry-After), so
            // not in place: a retry policy that waits less gives the target up as Throttled.
            verdict.outcome = .throttled
            verdict.retry = .afterBackoff(retryAfterSeconds: max(retryAfter ?? 0, Self.minimumQuotaBackoffSeconds))
        case (_, "UNAVAILABLE"):
            verdict.outcome = .pnsUnavailable
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        case (_, "INTERNAL"):
            verdict.outcome = .pnsServerError
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        case (_, "THIRD_PARTY_AUTH_ERROR"), (_, "APNS_AUTH_ERROR"):
            // The APNs or Web Push credentials stored in the Firebase project; the reason says so.
            verdict.outcome = .invalidCredentials
        case (_, "INVALID_ARGUMENT"):
            let text = ([message ?? ""] + violationTexts).joined(separator: " ").lowercased()
            if violatedFields.contains("message.token") || text.contains("registration token") {
                // Firebase's token-management guide: an invalid token is removed.
                verdict.outcome = .badChannel
                verdict.handleChange = .remove
            } else if text.contains("too big") || text.contains("too large") {
                verdict.outcome = .invalidNotificationSize
            } else {
                verdict.outcome = .invalidNotificationFormat
            }
        case (401, _):
            verdict.outcome = .invalidCredentials
            verdict.retry = .refreshCredentials
        case (403, _):
            verdict.outcome = .invalidCredentials
        case (404, _):
            verdict.outcome = .pnsInterfaceError
        case (429, _):
            // Project quota: RESOURCE_EXHAUSTED with a google.rpc.ErrorInfo and no FcmError.
            verdict.outcome = .throttled
            verdict.retry = .afterBackoff(retryAfterSeconds: max(retryAfter ?? 0, Self.minimumQuotaBackoffSeconds))
        case (500..., _):
            verdict.outcome = response.status == 500 ? .pnsServerError : .pnsUnavailable
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        default:
            verdict.outcome = .invalidNotificationFormat
        }
        return verdict
    }
}

/// Byte-level JSON helpers for wrapping a rendered template object.
enum JSONSplice {
    /// Appends the members of the JSON object `object` (compact, as rendered) after a comma, so
    /// that `{"token":"t"` + members + `}` is the object with the token added first.
    static func appendMembers(of object: [UInt8], to output: inout [UInt8]) {
        guard object.count > 2, object.first == UInt8(ascii: "{"), object.last == UInt8(ascii: "}") else { return }
        output.append(UInt8(ascii: ","))
        output.append(contentsOf: object[1..<(object.count - 1)])
    }
}
