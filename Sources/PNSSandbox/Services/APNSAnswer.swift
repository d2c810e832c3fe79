import Pushgate

/// APNs' answers, shared by device sends, channel management and broadcasts.
enum APNSAnswer {
    /// `{"reason": …}` (with `timestamp`, milliseconds, for a 410) and `headers` (the request's id).
    static func refusal(
        _ refusal: APNSRefusal, headers: [HTTPHeader], timestamp: Int64? = nil, retryAfter: Int? = nil
    ) -> SandboxHTTPResponse {
        var body = #"{"reason":"\#(refusal.reason)""#
        if let timestamp { body += #","timestamp":\#(timestamp)"# }
        body += "}"
        var headers = headers
        if let retryAfter { headers.append(HTTPHeader(name: "retry-after", value: String(retryAfter))) }
        return .json(refusal.status, body, headers: headers)
    }

    /// What a scripted fault makes of a request: an answer, or nil to answer normally (after a
    /// delay, or with `padding` set for the answer to be padded). A GOAWAY is counted under
    /// `"<service>-goaway"`.
    static func apply(
        _ action: SandboxFault.Action, state: SandboxState, service: String, headers: [HTTPHeader], padding: inout Int
    ) async -> SandboxHTTPResponse? {
        switch action {
        case .respond(let status, let reason, let retryAfter):
            return refusal(APNSRefusal(status, reason ?? "InternalServerError"), headers: headers, retryAfter: retryAfter)
        case .delay(let milliseconds):
            try? await Task.sleep(for: .milliseconds(milliseconds))
            return nil
        case .dropConnection:
            return .dropConnection
        case .goAway(let reason):
            state.count(service + "-goaway", status: 0)
            var response = refusal(APNSRefusal(503, reason), headers: headers)
            response.action = .goAway(#"{"reason":"\#(reason)"}"#)
            return response
        case .padBody(let bytes):
            padding = bytes
            return nil
        }
    }

    /// Every `apns-*` and `authorization` header at most once (HTTP/2 names arrive lower-case).
    static func hasDuplicateHeaders(_ request: SandboxHTTPRequest) -> Bool {
        var seen: Set<String> = []
        for header in request.headers where header.name.hasPrefix("apns-") || header.name == "authorization" {
            if !seen.insert(header.name).inserted { return true }
        }
        return false
    }
}
