/// An HTTP request to a push service, built by a provider's wire mapping (no I/O here).
public struct PushHTTPRequest: Sendable, Hashable {
    public var method: String
    public var url: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(method: String = "POST", url: String, headers: [HTTPHeader], body: [UInt8]) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first(where: { $0.name.lowercased() == lowered })?.value
    }
}

/// A push service's answer.
public struct PushHTTPResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first(where: { $0.name.lowercased() == lowered })?.value
    }

    /// The body parsed as JSON, or nil.
    public var json: JSONValue? { try? JSONParser.parse(body) }
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
