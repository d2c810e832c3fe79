/// Huawei Push Kit's server API v1 on the wire (`protocols.md` §9): the OAuth 2.0
/// client-credentials token, `POST /v1/<appId>/messages:send` carrying up to 1,000 tokens of one
/// message, and the answer's `code` read per token.
public enum HMSWire {
    /// `POST <tokenEndpoint>` with the app's id and secret.
    public static func tokenRequest(endpoint: String, appID: String, appSecret: String) -> PushHTTPRequest {
        PushHTTPRequest(
            url: endpoint, headers: [HTTPHeader(name: "content-type", value: "application/x-www-form-urlencoded")],
            body: Array(
                FormEncoding.encode([("grant_type", "client_credentials"), ("client_id", appID), ("client_secret", appSecret)]).utf8))
    }

    /// The send of `notification` (a v1 `message` without its target, as the app's template
    /// renders it) to `tokens`; `validate_only` for a dry run.
    public static func request(
        endpoint: String, appID: String, tokens: [String], notification: RenderedNotification, accessToken: String?
    ) -> PushHTTPRequest {
        var body = Array(#"{"validate_only":"#.utf8)
        body += Array((notification.validateOnly ? "true" : "false").utf8)
        body += Array(#","message":"#.utf8)
        // The message's own members, then the tokens: `{…,"token":["…",…]}`.
        var message = notification.body
        while let last = message.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
            message.removeLast()
        }
        if message.last == UInt8(ascii: "}") {
            message.removeLast()
            let empty = message.drop(while: { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }).isEmpty
            body += message
            if !empty { body.append(UInt8(ascii: ",")) }
        } else {
            body.append(UInt8(ascii: "{"))
        }
        body += Array(#""token":["#.utf8)
        for (index, token) in tokens.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            Escaping.appendJSONString(token, to: &body)
        }
        body += Array("]}}".utf8)
        var headers = [HTTPHeader(name: "content-type", value: "application/json; charset=utf-8")]
        if let accessToken { headers.append(HTTPHeader(name: "authorization", value: "Bearer \(accessToken)")) }
        return PushHTTPRequest(url: "\(endpoint)/v1/\(appID)/messages:send", headers: headers, body: body)
    }

    /// Push Kit's result codes (the answer's `code`, a string of digits).
    public enum Code {
        public static let success = "80000000"
        public static let partial = "80100000"
        public static let invalidToken = "80200001"
        public static let expiredToken = "80200003"
        public static let appNotPermitted = "80300002"
        public static let allTokensInvalid = "80300007"
        public static let tooLarge = "80300008"
        public static let tooManyTokens = "80300010"
        public static let noHighPriorityRight = "80300011"
        public static let internalError = "81000001"
        /// Bad parameter, bad structure, TTL in the past, bad collapse_key, sensitive content.
        public static let badMessage: Set<String> = ["80100001", "80100003", "80100004", "80100013", "80100016"]
    }

    /// One verdict per token of the request, in order, from the answer's `code` (its HTTP status
    /// when it has none): a partial success names the illegal tokens in `msg` (JSON text whose
    /// exact shape is unconfirmed: `illegal_tokens` or `illegalTokens`, an array or an object of
    /// arrays by reason, is read); those are pruned, the rest succeeded. An answer of a shape not
    /// known is the service's reason, verbatim (capped).
    public static func classify(_ response: PushHTTPResponse, tokens: [String], now: Double) -> [DeliveryVerdict] {
        let json = response.json
        let code: String? =
            switch json?["code"]?.kind {
            case .string(let text)?: text
            case .number(let text)?: text
            default: nil
            }
        let message = json?["msg"]?.stringValue
        let requestID = json?["requestId"]?.stringValue
        let reason = [code, message.map { String($0.prefix(200)) }].compactMap { $0 }.joined(separator: ": ")
        func all(_ outcome: Outcome, retry: RetryAdvice = .never, remove: Bool = false) -> [DeliveryVerdict] {
            let verdict = DeliveryVerdict(
                outcome: outcome, statusCode: response.status, reason: reason.isEmpty ? nil : reason, serviceMessageID: requestID,
                retry: retry, handleChange: remove ? .remove : nil)
            return Array(repeating: verdict, count: tokens.count)
        }
        let retryAfter = parseRetryAfter(response.header("retry-after"), now: now)
        switch code {
        case Code.success?:
            return all(.success)
        case Code.partial?:
            let illegal = illegalTokens(in: message)
            // A partial success whose msg names no token it can read: the service's own words kept.
            if illegal.isEmpty { return all(.success) }
            return tokens.map { token in
                illegal.contains(token)
                    ? DeliveryVerdict(
                        outcome: .expiredChannel, statusCode: response.status, reason: "\(Code.partial): illegal token",
                        serviceMessageID: requestID, handleChange: .remove)
                    : DeliveryVerdict(outcome: .success, statusCode: response.status, serviceMessageID: requestID)
            }
        case Code.allTokensInvalid?:
            return all(.expiredChannel, remove: true)
        case Code.invalidToken?, Code.expiredToken?:
            // The access token: a new one, once per request.
            return all(.invalidCredentials, retry: .refreshCredentials)
        case Code.appNotPermitted?:
            return all(.invalidCredentials)
        case Code.tooLarge?:
            return all(.invalidNotificationSize)
        case Code.internalError?:
            return all(.pnsServerError, retry: .afterBackoff(retryAfterSeconds: retryAfter))
        case let code? where Code.badMessage.contains(code) || code == Code.tooManyTokens || code == Code.noHighPriorityRight:
            return all(.invalidNotificationFormat)
        default:
            switch response.status {
            case 401: return all(.invalidCredentials, retry: .refreshCredentials)
            case 429, 503: return all(.throttled, retry: .afterBackoff(retryAfterSeconds: retryAfter))
            case 500, 502, 504: return all(.pnsServerError, retry: .afterBackoff(retryAfterSeconds: retryAfter))
            default: return all(.pnsInterfaceError)
            }
        }
    }

    /// The tokens a partial success's `msg` names as illegal, read leniently.
    static func illegalTokens(in message: String?) -> Set<String> {
        guard let message, let parsed = try? JSONParser.parse(Array(message.utf8)) else { return [] }
        var found: Set<String> = []
        func collect(_ value: JSONValue?) {
            guard let value else { return }
            if let text = value.stringValue { found.insert(text) }
            for element in value.arrayElements ?? [] { collect(element) }
            for member in value.objectMembers ?? [] { collect(member.value) }
        }
        collect(parsed["illegal_tokens"])
        collect(parsed["illegalTokens"])
        return found
    }
}
