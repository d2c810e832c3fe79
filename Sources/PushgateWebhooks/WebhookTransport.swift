import Pushgate
import PushgateCurl
import PushgateDispatch

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
/// redirects never followed, the answer's body read up to 4 KiB; with the push endpoints' SSRF
/// rules: the host resolved and checked by the ``OutboundGuard`` (a loopback, private, link-local…
/// address only through an `allowedHosts` entry naming exactly its `host:port`) and the
/// connection pinned to the checked address (no DNS rebinding), `https` only unless the URL is an
/// `http://host:port` entry's.
public final class CurlWebhookTransport: WebhookTransport {
    let client: CurlHTTPClient
    let outbound: OutboundGuard
    let settings: WebhooksConfiguration

    public init(settings: WebhooksConfiguration, caFile: String?, outbound: OutboundGuard) throws(CurlError) {
        self.outbound = outbound
        self.settings = settings
        let timeoutSeconds = settings.timeoutSeconds
        client = try CurlHTTPClient(
            configuration: CurlHTTPClientConfiguration(
                httpVersion: .http2, caFile: caFile, maximumConnectionsPerHost: 8,
                connectTimeoutMilliseconds: min(10_000, timeoutSeconds * 1000),
                totalTimeoutMilliseconds: timeoutSeconds * 1000))
    }

    public func post(url: String, headers: [(name: String, value: String)], body: [UInt8]) async -> WebhookAnswer {
        let pin: OutboundPin
        let plainHTTP = url.lowercased().hasPrefix("http://")
        do {
            if plainHTTP {
                // Checked at load against an `http://host:port` entry: that host:port, exactly.
                let https = "https://" + url.dropFirst("http://".count)
                guard let target = OutboundTarget(url: https, allowed: settings.plainHTTPHosts), target.isExplicitlyAllowed else {
                    return WebhookAnswer(status: nil, detail: "'\(url.prefix(80))' is no http://host:port entry of webhooks.allowedHosts")
                }
                pin = try await outbound.pin(target)
            } else {
                pin = try await outbound.pin(url: url, allowed: settings.httpsHosts)
            }
        } catch {
            return WebhookAnswer(status: nil, detail: "refused: \(error.description)")
        }
        let request = CurlRequest(
            method: "POST", url: url, headers: headers, body: body, maximumResponseBodyBytes: 4096, connectTo: pin.connectTo,
            httpsOnly: !plainHTTP)
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
