internal import CCurl

/// Process-wide libcurl state: `curl_global_init` runs exactly once, before any handle is made.
public enum CurlLibrary {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return true
    }()

    /// Makes sure libcurl is initialised (idempotent, thread-safe).
    public static func initialize() { _ = initialized }

    /// What the linked libcurl is and can do.
    public static var info: CurlInfo {
        initialize()
        guard let data = pushgate_curl_version_info()?.pointee else {
            return CurlInfo(version: "unknown", tlsLibrary: nil, http2Library: nil, supportsHTTP2: false)
        }
        let features = Int32(data.features)
        return CurlInfo(
            version: data.version.map { String(cString: $0) } ?? "unknown",
            tlsLibrary: data.ssl_version.map { String(cString: $0) },
            http2Library: data.nghttp2_version.map { String(cString: $0) },
            supportsHTTP2: features & CURL_VERSION_HTTP2 != 0)
    }
}

/// The version and capabilities of the linked libcurl.
public struct CurlInfo: Sendable, Hashable, CustomStringConvertible {
    public let version: String
    public let tlsLibrary: String?
    public let http2Library: String?
    public let supportsHTTP2: Bool

    public var description: String {
        var parts = ["libcurl \(version)"]
        if let tlsLibrary { parts.append(tlsLibrary) }
        if let http2Library { parts.append("nghttp2 \(http2Library)") }
        parts.append(supportsHTTP2 ? "HTTP/2" : "no HTTP/2")
        return parts.joined(separator: ", ")
    }
}
