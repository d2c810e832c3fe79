/// OAuth token requests: Google's JWT-bearer grant and WNS's client-credentials grant.
public enum OAuthWire {
    /// `POST token_uri` exchanging a signed service-account assertion.
    public static func googleTokenRequest(tokenURI: String, assertion: String) -> PushHTTPRequest {
        PushHTTPRequest(
            url: tokenURI, headers: [HTTPHeader(name: "content-type", value: "application/x-www-form-urlencoded")],
            body: Array(
                FormEncoding.encode([("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]).utf8))
    }

    /// `POST` client credentials to the WNS token endpoint.
    public static func wnsTokenRequest(endpoint: String, clientID: String, clientSecret: String, scope: String) -> PushHTTPRequest {
        PushHTTPRequest(
            url: endpoint, headers: [HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded")],
            body: Array(
                FormEncoding.encode([
                    ("grant_type", "client_credentials"), ("client_id", clientID), ("client_secret", clientSecret), ("scope", scope),
                ]).utf8))
    }

    /// An access token and its lifetime in seconds, from a token endpoint's answer.
    public static func parseToken(_ response: PushHTTPResponse) throws(OAuthError) -> (token: String, expiresIn: Double) {
        guard response.status == 200 else {
            let json = response.json
            // `error` is a string (RFC 6749) or, at Huawei, a number with a `sub_error`.
            func text(_ value: JSONValue?) -> String? {
                switch value?.kind {
                case .string(let text)?: text
                case .number(let text)?: text
                default: nil
                }
            }
            let code = [text(json?["error"]), text(json?["sub_error"])].compactMap { $0 }.joined(separator: "/")
            throw OAuthError(
                status: response.status,
                reason: [code.isEmpty ? nil : code, json?["error_description"]?.stringValue].compactMap { $0 }.joined(separator: ": "))
        }
        guard let token = response.json?["access_token"]?.stringValue, !token.isEmpty else {
            throw OAuthError(status: 200, reason: "the answer has no access_token")
        }
        let expiresIn: Double
        switch response.json?["expires_in"]?.kind {
        case .number(let text)?: expiresIn = Double(text) ?? 3600
        case .string(let text)?: expiresIn = Double(text) ?? 3600
        default: expiresIn = 3600
        }
        return (token, expiresIn)
    }
}

/// A token endpoint refused to issue an access token. Never contains the secret.
public struct OAuthError: Error, Hashable, Sendable, CustomStringConvertible {
    public let status: Int
    public let reason: String

    public var description: String { "token endpoint answered \(status)\(reason.isEmpty ? "" : ": \(reason)")" }
}

/// `application/x-www-form-urlencoded` bodies.
public enum FormEncoding {
    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(PercentEncoding.encode($0.0))=\(PercentEncoding.encode($0.1))" }.joined(separator: "&")
    }

    /// Decodes a form body or query string; later duplicates win.
    public static func decode(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            result[percentDecode(String(parts[0]))] = parts.count > 1 ? percentDecode(String(parts[1])) : ""
        }
        return result
    }

    /// `%XX` and `+` decoded; malformed escapes are kept as they are.
    public static func percentDecode(_ text: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
