/// How a ``CurlHTTPClient`` connects. Defaults suit a push service over HTTP/2 and TLS.
public struct CurlHTTPClientConfiguration: Sendable, Hashable {
    public enum HTTPVersion: Sendable, Hashable {
        /// HTTP/2 negotiated with ALPN over TLS (APNs, FCM); HTTP/1.1 if the server refuses h2.
        case http2
        /// HTTP/1.1 only (WNS).
        case http1
    }

    public var httpVersion: HTTPVersion
    /// A PEM CA bundle to verify servers with instead of the system store (the sandbox's CA).
    public var caFile: String?
    /// A PEM client certificate and key (APNs certificate authentication).
    public var clientCertificateFile: String?
    public var clientKeyFile: String?
    /// Most connections to one host. Default 1 (HTTP/2 multiplexes streams on it).
    public var maximumConnectionsPerHost: Int
    /// Most concurrent streams curl opens on one HTTP/2 connection. Default 100.
    public var maximumStreamsPerConnection: Int
    /// Connect timeout in milliseconds. Default 10 s.
    public var connectTimeoutMilliseconds: Int
    /// Whole-transfer timeout in milliseconds. Default 30 s.
    public var totalTimeoutMilliseconds: Int
    /// Verify the server certificate and host name. On by default; never off in production.
    public var verifyPeer: Bool

    public init(
        httpVersion: HTTPVersion = .http2, caFile: String? = nil, clientCertificateFile: String? = nil, clientKeyFile: String? = nil,
        maximumConnectionsPerHost: Int = 1, maximumStreamsPerConnection: Int = 100, connectTimeoutMilliseconds: Int = 10_000,
        totalTimeoutMilliseconds: Int = 30_000, verifyPeer: Bool = true
    ) {
        self.httpVersion = httpVersion
        self.caFile = caFile
        self.clientCertificateFile = clientCertificateFile
        self.clientKeyFile = clientKeyFile
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.maximumStreamsPerConnection = maximumStreamsPerConnection
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.totalTimeoutMilliseconds = totalTimeoutMilliseconds
        self.verifyPeer = verifyPeer
    }
}
