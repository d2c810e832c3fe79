import Pushgate

/// One answer of Push Kit's send API: the business `code`, its `msg`, and the HTTP status the
/// sandbox sends it with (``SandboxAssumptions/hmsStatusByCode``). A refusal is thrown while a
/// request is checked, hence `Error`.
struct HMSAnswer: Error, Sendable, Hashable {
    var status: Int
    var code: String
    var msg: String
    /// `Retry-After` seconds (an injected fault's).
    var retryAfter: Int?

    init(code: String, msg: String, status: Int? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.msg = msg
        self.status = status ?? SandboxAssumptions.hmsStatusByCode[code] ?? 400
        self.retryAfter = retryAfter
    }

    /// 80000000: every token reached (or a dry run that would have).
    static let success = HMSAnswer(code: "80000000", msg: "Success")

    /// 80100000: some tokens are illegal; `msg` is JSON text naming them.
    static func partial(success: Int, illegalTokens: [String]) -> HMSAnswer {
        let listed = illegalTokens.map { Escaping.jsonString($0) }.joined(separator: ",")
        let member = SandboxAssumptions.hmsIllegalTokensMember
        return HMSAnswer(
            code: "80100000", msg: #"{"success":\#(success),"failure":\#(illegalTokens.count),"\#(member)":[\#(listed)]}"#)
    }

    /// 80100001: a parameter is missing or wrong; `detail` names it.
    static func badParameter(_ detail: String) -> HMSAnswer {
        HMSAnswer(code: "80100001", msg: "Illegal request parameter: \(detail)")
    }

    /// 80100003: the body is not the documented structure (not JSON, no `message`, an unknown member).
    static func badStructure(_ detail: String) -> HMSAnswer {
        HMSAnswer(code: "80100003", msg: "Incorrect message structure: \(detail)")
    }

    /// 80100013: `android.collapse_key` outside −1…100.
    static let badCollapseKey = HMSAnswer(code: "80100013", msg: "Incorrect collapse_key: must be an integer from -1 to 100")
    /// 80200001: no, or a malformed, `Authorization`, or a token of another app.
    static let oauthFailed = HMSAnswer(code: "80200001", msg: "Oauth authentication error")
    /// 80200003: a token the service did not issue, or that expired.
    static let oauthExpired = HMSAnswer(code: "80200003", msg: "Oauth Token expired")
    /// 80300007: no token of the request is valid.
    static let allTokensInvalid = HMSAnswer(code: "80300007", msg: "All the tokens are invalid")
    /// 80300008: the body, tokens not counted, is over 4096 bytes.
    static let tooLarge = HMSAnswer(code: "80300008", msg: "The message body size exceeds the default value")
    /// 80300010: no token, or more than 1,000.
    static let tooManyTokens = HMSAnswer(code: "80300010", msg: "The number of tokens in the message body exceeds the default value")
    /// 81000001: the service's internal error.
    static let internalError = HMSAnswer(code: "81000001", msg: "System inner error")

    /// The documented text of `code`, for an injected fault's answer.
    static func text(of code: String) -> String? {
        [success, badCollapseKey, oauthFailed, oauthExpired, allTokensInvalid, tooLarge, tooManyTokens, internalError]
            .first(where: { $0.code == code })?.msg
    }

    /// The answer on the wire: `{"code","msg","requestId"}`.
    func response(requestID: String) -> SandboxHTTPResponse {
        .json(
            status, #"{"code":"\#(code)","msg":\#(Escaping.jsonString(msg)),"requestId":"\#(requestID)"}"#,
            headers: retryAfter.map { [HTTPHeader(name: "Retry-After", value: String($0))] } ?? [])
    }
}
