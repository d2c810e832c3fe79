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

    public init(
        method: String = "POST", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        freshConnection: Bool = false
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.freshConnection = freshConnection
    }

    public static func == (lhs: CurlRequest, rhs: CurlRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body && lhs.freshConnection == rhs.freshConnection
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

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8], httpVersion: String) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first(where: { $0.name.lowercased() == lowered })?.value
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    public static func == (lhs: CurlResponse, rhs: CurlResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.httpVersion == rhs.httpVersion
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        hasher.combine(body)
    }
}
