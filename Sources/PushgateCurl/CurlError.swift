package import CCurl

/// A libcurl call failed. Every `CURLcode` and `CURLMcode` maps to one of these, with curl's own
/// message; `kind` tells connection-level failures apart from local ones.
public struct CurlError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Broad classes of failure the dispatcher decides on.
    public enum Kind: String, Sendable, Hashable {
        /// Name resolution or connecting failed.
        case connect
        /// TLS handshake or certificate verification failed.
        case tls
        /// The transfer timed out.
        case timeout
        /// The connection broke mid-transfer (reset, GOAWAY, HTTP/2 framing error, empty reply).
        case connectionLost
        /// A local failure: bad option, out of memory, misuse.
        case local
    }

    public let kind: Kind
    /// The numeric code (`CURLcode`, or `CURLMcode` for multi-handle failures).
    public let code: Int
    public let message: String

    init(_ code: CURLcode, detail: String? = nil) {
        self.code = Int(code.rawValue)
        self.message = detail.flatMap { $0.isEmpty ? nil : $0 } ?? String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            kind = .connect
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            kind = .tls
        case CURLE_OPERATION_TIMEDOUT:
            kind = .timeout
        case CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
            CURLE_PARTIAL_FILE:
            kind = .connectionLost
        default:
            kind = .local
        }
    }

    package init(local message: String) {
        self.code = -1
        self.message = message
        self.kind = .local
    }

    package init(multi code: CURLMcode) {
        self.code = Int(code.rawValue)
        self.message = String(cString: curl_multi_strerror(code))
        self.kind = .local
    }

    public var description: String { "curl error \(code) (\(kind.rawValue)): \(message)" }
}
