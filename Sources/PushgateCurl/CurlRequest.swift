/// One HTTP request for ``CurlHTTPClient``.
public struct CurlRequest: Sendable, Hashable {
    public var method: String
    /// The absolute URL (`https://host:port/path?query`).
    public var url: String
    /// Header lines as name/value pairs, sent in order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Open a new connection for this request instead of reusing one (`CURLOPT_FRESH_CONNECT`).
    public var freshConnection: Bool
    /// The most bytes of the answer's body to keep; nil keeps all of it. Past the limit the
    /// transfer is aborted (over HTTP/2 its stream alone is reset; the connection and the other
    /// streams on it carry on) and the answer comes back with its status, its headers, the first
    /// `maximumResponseBodyBytes` bytes and ``CurlResponse/isBodyTruncated`` set.
    public var maximumResponseBodyBytes: Int?
    /// Connect to this address instead of resolving the URL's host (`CURLOPT_CONNECT_TO`,
    /// `host:port:address:port`, IPv6 in brackets); TLS still checks the certificate for the host.
    public var connectTo: String?
    /// Only `https` (`CURLOPT_PROTOCOLS_STR`): an `http` URL fails without a connection.
    public var httpsOnly: Bool

    public init(
        method: String = "POST", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        freshConnection: Bool = false, maximumResponseBodyBytes: Int? = nil, connectTo: String? = nil, httpsOnly: Bool = false
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.freshConnection = freshConnection
        self.maximumResponseBodyBytes = maximumResponseBodyBytes
        self.connectTo = connectTo
        self.httpsOnly = httpsOnly
    }

    public static func == (lhs: CurlRequest, rhs: CurlRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body && lhs.freshConnection == rhs.freshConnection
            && lhs.maximumResponseBodyBytes == rhs.maximumResponseBodyBytes && lhs.connectTo == rhs.connectTo
            && lhs.httpsOnly == rhs.httpsOnly
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(body)
    }
}

/// The answer to a ``CurlRequest``: whatever the status, an answer is a value, not an error.
public struct CurlResponse: Sendable, Hashable {
    public var status: Int
    /// Response header fields in order (names as the server sent them; HTTP/2 names are lower-case).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The HTTP version used: `"2"`, `"1.1"` or `"1.0"`.
    public var httpVersion: String
    /// The server sent more body than the request's ``CurlRequest/maximumResponseBodyBytes``:
    /// `body` holds the first that many bytes, the rest was never read.
    public var isBodyTruncated: Bool

    public init(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], httpVersion: String, isBodyTruncated: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.isBodyTruncated = isBodyTruncated
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first(where: { $0.name.lowercased() == lowered })?.value
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    public static func == (lhs: CurlResponse, rhs: CurlResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.httpVersion == rhs.httpVersion
            && lhs.isBodyTruncated == rhs.isBodyTruncated && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        hasher.combine(body)
    }
}
