import PushgateCurl

/// What a receiver answered to one POST: a value whatever it was (an HTTP status, or a
/// connection that failed).
public struct WebhookAnswer: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status; nil when no answer came (connection refused, timeout, TLS).
    public var status: Int?
    /// `Retry-After`, in seconds, when the receiver gave one.
    public var retryAfter: Double?
    /// The first bytes of the answer's body, or why the POST failed.
    public var detail: String

    public init(status: Int?, retryAfter: Double? = nil, detail: String = "") {
        self.status = status
        self.retryAfter = retryAfter
        self.detail = detail
    }

    /// A 2xx status: the receiver has the events.
    public var isSuccess: Bool { status.map { (200...299).contains($0) } ?? false }

    public var description: String {
        if let status { return "HTTP \(status)" + (detail.isEmpty ? "" : ": \(detail.prefix(200))") }
        return "no answer: \(detail)"
    }

    /// `Retry-After` in seconds (its HTTP-date form is not read: the backoff applies then).
    public static func retryAfter(_ value: String?) -> Double? {
        guard let value, let seconds = Double(value.filter { $0 != " " }), seconds >= 0, seconds.isFinite else { return nil }
        return seconds
    }
}

/// Where POSTs go: the seam between the poster and the network.
public protocol WebhookTransport: Sendable {
    func post(url: String, headers: [(name: String, value: String)], body: [UInt8]) async -> WebhookAnswer
    func shutdown() async
}

/// POSTs through libcurl (``CurlHTTPClient``), HTTP/1.1 or HTTP/2 as the receiver speaks,
/// redirects never followed, the answer's body read up to 4 KiB.
public final class CurlWebhookTransport: WebhookTransport {
    let client: CurlHTTPClient

    public init(timeoutSeconds: Int, caFile: String?) throws(CurlError) {
        client = try CurlHTTPClient(
            configuration: CurlHTTPClientConfiguration(
                httpVersion: .http2, caFile: caFile, maximumConnectionsPerHost: 8,
                connectTimeoutMilliseconds: min(10_000, timeoutSeconds * 1000),
                totalTimeoutMilliseconds: timeoutSeconds * 1000))
    }

    public func post(url: String, headers: [(name: String, value: String)], body: [UInt8]) async -> WebhookAnswer {
        let request = CurlRequest(method: "POST", url: url, headers: headers, body: body, maximumResponseBodyBytes: 4096)
        do {
            let response = try await client.execute(request)
            return WebhookAnswer(
                status: response.status, retryAfter: WebhookAnswer.retryAfter(response.header("Retry-After")),
                detail: String(response.bodyText.prefix(200)))
        } catch {
            return WebhookAnswer(status: nil, detail: error.description)
        }
    }

    public func shutdown() async { await client.shutdown() }
}
