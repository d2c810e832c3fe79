/// An HTTP request to a push service, built by a provider's wire mapping (no I/O here).
public struct PushHTTPRequest: Sendable, Hashable {
    public var method: String
    public var url: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Send on a new connection rather than a pooled one (the retry after APNs
    /// `TooManyProviderTokenUpdates`, which makes that connection unusable).
    public var freshConnection = false
    /// The most bytes of the answer's body to read (``defaultMaximumResponseBodyBytes`` unless the
    /// service's wire mapping documents another size); past it that one exchange is cut off and
    /// its answer classified by what was read (``PushHTTPResponse/isBodyTruncated``).
    public var maximumResponseBodyBytes = Self.defaultMaximumResponseBodyBytes
    /// The checked address to connect to (``OutboundPin``): set for a host an operator allowed
    /// rather than a push service's own (a UnifiedPush endpoint, a webhook receiver). With a
    /// pin the transport connects to that address only, speaks `https` only and follows no
    /// redirect; nil for the push services' fixed hosts.
    public var pin: OutboundPin?

    /// 64 KiB: a push service's answer is a status, a few headers and at most a short JSON reason.
    public static let defaultMaximumResponseBodyBytes = 64 * 1024

    public init(method: String = "POST", url: String, headers: [HTTPHeader], body: [UInt8]) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { HTTPHeader.value(of: name, in: headers) }
}

/// A push service's answer.
public struct PushHTTPResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// The service sent more body than the request's ``PushHTTPRequest/maximumResponseBodyBytes``:
    /// `body` is its beginning. The status stands: a 2xx is still delivered (retrying it would
    /// deliver twice), any other status is classified by itself.
    public var isBodyTruncated: Bool

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], isBodyTruncated: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.isBodyTruncated = isBodyTruncated
    }

    public func header(_ name: String) -> String? { HTTPHeader.value(of: name, in: headers) }

    /// The body parsed as JSON, or nil (an empty body, APNs' success, is not parsed at all).
    public var json: JSONValue? { body.isEmpty ? nil : try? JSONParser.parse(body) }
}

/// Why a request got no answer at all.
public enum TransportFailure: String, Sendable, Hashable, Codable {
    /// DNS or TCP connect failed.
    case connect
    /// The TLS handshake or certificate check failed.
    case tls
    /// No answer in time.
    case timeout
    /// The connection broke (reset, GOAWAY, HTTP/2 framing error) before the answer completed.
    case connectionLost
    /// The gateway is shutting down, or the request was cancelled.
    case cancelled
    /// A local fault (bad option, out of memory).
    case local
}

extension HTTPHeader {
    /// The first value of the header `name` (compared case-insensitively, in ASCII: header names
    /// are ASCII, and this runs for every answer of a fan-out, so nothing is lowercased or
    /// allocated).
    static func value(of name: String, in headers: [HTTPHeader]) -> String? {
        func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
        let wanted = name.utf8
        for header in headers where header.name.utf8.count == wanted.count {
            if zip(header.name.utf8, wanted).allSatisfy({ lower($0) == lower($1) }) { return header.value }
        }
        return nil
    }
}
