/// UnifiedPush on the wire: Web Push (``WebPushWire``'s request, with or without VAPID) to a
/// distributor's endpoint, whose answers are read by the UnifiedPush server specification rather
/// than by the browser push services' tables: the distributors (ntfy, NextPush, Sunup/autopush,
/// self-hosted) answer in their own words, so only the status counts, and the body is reduced to a
/// short reason.
public enum UnifiedPushWire {
    /// The discovery answer a UnifiedPush server gives to `GET <endpoint>` (the server
    /// specification advises checking it before using an endpoint).
    public static let discoveryAnswer = #"{"unifiedpush":{"version":1}}"#

    /// Why a discovery answer is not a UnifiedPush server's, or nil when it is one: a 2xx with the
    /// JSON `{"unifiedpush":{"version":1}}` (other members are ignored).
    public static func discoveryProblem(_ response: PushHTTPResponse) -> String? {
        guard (200...299).contains(response.status) else { return "GET answered \(response.status), not 200" }
        guard let json = try? JSONParser.parse(response.body), let unifiedPush = json["unifiedpush"] else {
            return #"the answer to GET is not {"unifiedpush":{"version":1}}"#
        }
        guard case .number(let version)? = unifiedPush["version"]?.kind, version == "1" else {
            return "the answer names no UnifiedPush version 1"
        }
        return nil
    }

    /// The most of a distributor's answer a reason quotes.
    static let maximumReasonCharacters = 120

    /// What a distributor's answer means. `signed`: whether the request carried VAPID (a 401
    /// then earns one fresh token). `noActiveSubscriber`: what ntfy's 507 does.
    ///
    /// - any 2xx: delivered (the spec says 201; ntfy answers 200);
    /// - 404, 410: the endpoint is gone: the registration is removed;
    /// - 413: too large; 429: throttled, retried after `Retry-After`;
    /// - 401, 403: a VAPID problem (a 401 to a signed request is signed afresh once);
    /// - 507 (ntfy: no active subscriber): `ChannelDisconnected`, kept, not retried in the round;
    ///   or, with `noActiveSubscriber: .prune`, `ExpiredChannel`, removed;
    /// - anything else: retried later, with backoff.
    public static func classify(
        _ response: PushHTTPResponse, now: Double, signed: Bool, noActiveSubscriber: UnifiedPushConfiguration.NoActiveSubscriber
    ) -> DeliveryVerdict {
        var verdict = DeliveryVerdict(
            outcome: .unknownError, statusCode: response.status, reason: reason(response.body),
            serviceMessageID: response.header("Location"))
        let retryAfter = parseRetryAfter(response.header("Retry-After"), now: now)
        if verdict.classifyRFC8030(status: response.status, retryAfter: retryAfter) { return verdict }
        switch response.status {
        case 200...299: verdict.outcome = .success
        case 401, 403:
            verdict.outcome = .invalidCredentials
            if response.status == 401, signed { verdict.retry = .refreshCredentials }
        case 507:
            switch noActiveSubscriber {
            case .keep: verdict.outcome = .channelDisconnected
            case .prune:
                verdict.outcome = .expiredChannel
                verdict.handleChange = .remove
            }
        default:
            verdict.outcome =
                switch response.status {
                case 503: .pnsUnavailable
                case 500...599: .pnsServerError
                default: .pnsInterfaceError
                }
            verdict.retry = .afterBackoff(retryAfterSeconds: retryAfter)
        }
        return verdict
    }

    /// A short reason from a distributor's answer: a JSON body's `error` or `message` (with its
    /// `code` or `errno`: ntfy's `{"code":50701,"error":"…"}`, autopush's `{"errno":106,"message":"…"}`),
    /// printable ASCII only; nil for any other body (a text or HTML page, JSON past 2 KiB). Never
    /// more than ``maximumReasonCharacters`` characters: an answer is not echoed.
    static func reason(_ body: [UInt8]) -> String? {
        let prefix = Array(body.prefix(2048))
        guard !prefix.isEmpty else { return nil }
        var text: String?
        if let json = try? JSONParser.parse(prefix), json.objectMembers != nil {
            let words = json["error"]?.stringValue ?? json["message"]?.stringValue ?? json["reason"]?.stringValue
            let code: String? =
                if case .number(let code)? = json["code"]?.kind { code } else if case .number(let errno)? = json["errno"]?.kind {
                    errno
                } else {
                    nil
                }
            if let words { text = code.map { "\(words) (\($0))" } ?? words } else { text = code }
        }
        // Only a JSON answer's own error words and code: a body that is not one is never echoed
        // (the endpoint's host is the user's choice; its answer is not theirs to read).
        guard let chosen = text else { return nil }
        let printable = String(String.UnicodeScalarView(chosen.unicodeScalars.filter { (0x20...0x7E).contains($0.value) }))
        let trimmed = printable.trimmed()
        guard !trimmed.isEmpty else { return nil }
        return trimmed.count > maximumReasonCharacters ? String(trimmed.prefix(maximumReasonCharacters)) + "…" : trimmed
    }
}
