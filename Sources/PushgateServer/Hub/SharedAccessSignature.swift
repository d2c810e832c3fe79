import Crypto
import Foundation
import Pushgate
import Synchronization

/// Notification Hubs' Shared Access Signature: `SharedAccessSignature sr=<resource>&sig=<signature>&se=<expiry>&skn=<rule>`.
///
/// The signature is `base64(HMAC-SHA256(key, sr + "\n" + se))` over `sr` exactly as the token
/// carries it (URL-encoded), then URL-encoded itself. A token is valid for a request when its rule
/// is one of the hub's, it has not expired, its signature is the rule key's, and its resource
/// (lower-cased, scheme and query left out) is a prefix of the request's `host/path`, on a path
/// segment boundary: a token for the namespace (`https://host/`) covers every hub, one for
/// `https://host/hub` that hub only.
public struct SharedAccessSignature: Sendable, Hashable {
    /// `sr` as the token carries it (URL-encoded).
    public var encodedResource: String
    /// `sig`, URL-decoded (base64).
    public var signature: String
    public var expiry: Int64
    public var keyName: String

    public static let scheme = "SharedAccessSignature"

    /// Parses an `Authorization` header value; nil with the reason when it is not a token.
    public static func parse(_ header: String) -> Result<SharedAccessSignature, SASError> {
        guard header.count <= 4096 else { return .failure(.malformed("the Authorization header is longer than 4096 characters")) }
        let prefix = scheme + " "
        guard header.utf8.count > prefix.utf8.count, header.prefix(prefix.count).lowercased() == prefix.lowercased() else {
            return .failure(.malformed("Authorization must be 'SharedAccessSignature sr=…&sig=…&se=…&skn=…'"))
        }
        var fields: [String: String] = [:]
        for pair in header.dropFirst(prefix.count).drop(while: { $0 == " " }).split(separator: "&") {
            guard let equals = pair.firstIndex(of: "=") else { return .failure(.malformed("'\(pair.prefix(40))' is not name=value")) }
            let name = pair[..<equals].lowercased()
            // Notification Hubs' tokens carry these four and nothing else: another field would
            // only make distinct headers (cache entries) of one signature.
            guard ["sr", "sig", "se", "skn"].contains(name) else {
                return .failure(.malformed("'\(name.prefix(40))' is not a field of a token (sr, sig, se, skn)"))
            }
            guard fields[name] == nil else { return .failure(.malformed("'\(name)' is given twice")) }
            fields[name] = String(pair[pair.index(after: equals)...])
        }
        for name in ["sr", "sig", "se", "skn"] where (fields[name] ?? "").isEmpty {
            return .failure(.malformed("the token has no '\(name)'"))
        }
        guard let expiry = Int64(fields["se"]!) else {
            let text = fields["se"]!.prefix(40)
            return .failure(.malformed("se '\(text)' is not whole seconds since 1970 (a decimal integer of at most 19 digits)"))
        }
        guard let signature = percentDecoded(fields["sig"]!), let keyName = percentDecoded(fields["skn"]!) else {
            return .failure(.malformed("sig or skn is not URL-encoded correctly"))
        }
        return .success(SharedAccessSignature(encodedResource: fields["sr"]!, signature: signature, expiry: expiry, keyName: keyName))
    }

    /// The resource as compared: decoded, lower-cased, without scheme, port, query or trailing `/`.
    public var normalizedResource: String? {
        guard let decoded = Self.percentDecoded(encodedResource) else { return nil }
        return Self.normalize(decoded)
    }

    /// Clients disagree on the scheme and port they sign (the .NET SDK signs `http://host/…` with
    /// no port, the Python one `https://host:port/hub`, the JavaScript one the namespace URL), so
    /// both are left out of the comparison, as Notification Hubs does; the signature still covers
    /// `sr` exactly as sent.
    static func normalize(_ uri: String) -> String {
        // On the bytes (it runs for every request): ASCII lower-cased, then the parts cut away.
        var bytes = Array(uri.utf8)
        for index in bytes.indices where (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(bytes[index]) { bytes[index] += 32 }
        var start = 0
        for scheme in ["https://", "http://", "sb://"] where bytes.starts(with: scheme.utf8) {
            start = scheme.utf8.count
            break
        }
        var end = bytes[start...].firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        let slash = bytes[start..<end].firstIndex(of: UInt8(ascii: "/")) ?? end
        var text = bytes[start..<slash]
        // The port: digits after the last ':' outside an IPv6 literal's brackets.
        if let colon = text.lastIndex(of: UInt8(ascii: ":")), !text[colon...].contains(UInt8(ascii: "]")),
            text[(colon + 1)...].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            text.first == UInt8(ascii: "[") || text.filter({ $0 == UInt8(ascii: ":") }).count == 1
        {
            text = text[..<colon]
        }
        while end > slash, bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        var result = Array(text)
        if slash < end { result += bytes[slash..<end] }
        while result.last == UInt8(ascii: "/") { result.removeLast() }
        return String(decoding: result, as: UTF8.self)
    }

    /// Whether the token's resource covers `host/path` (both normalized).
    public func covers(host: String, path: String) -> Bool {
        guard let resource = normalizedResource else { return false }
        return Self.covers(resource: resource, host: host, path: path)
    }

    /// Whether a normalized resource covers `host/path`: equal, or a prefix at a `/` boundary.
    static func covers(resource: String, host: String, path: String) -> Bool {
        let target = normalize(host + path)
        if target == resource { return true }
        return target.hasPrefix(resource + "/")
    }

    /// The signature `key` gives this token's resource and expiry.
    public static func sign(encodedResource: String, expiry: Int64, key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(encodedResource)\n\(expiry)".utf8), using: SymmetricKey(data: Data(key.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// A token for `resourceURI` (for example `https://host:8443/myhub`), valid until `expiry`:
    /// what clients build from a connection string.
    public static func token(resourceURI: String, keyName: String, key: String, expiry: Int64) -> String {
        let resource = formEncode(resourceURI.lowercased())
        let signature = sign(encodedResource: resource, expiry: expiry, key: key)
        return "\(scheme) sr=\(resource)&sig=\(formEncode(signature))&se=\(expiry)&skn=\(keyName)"
    }

    /// `%XX` sequences decoded (either case of hex; `+` stays `+`, as base64 signatures need);
    /// nil when a `%` is not followed by two hex digits or the bytes are not UTF-8. On the bytes,
    /// without Foundation: it runs for every new token.
    public static func percentDecoded(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hex), let low = iterator.next().flatMap(hex) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// URL-encodes everything but letters, digits and `-_.~`.
    public static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_.~")
        return text.unicodeScalars.map { scalar in
            scalar.isASCII && allowed.contains(scalar)
                ? String(scalar) : String(scalar).utf8.map { String(format: "%%%02X", $0) }.joined()
        }.joined()
    }

    /// Constant-time comparison of two base64 signatures' bytes.
    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        var difference = UInt8(left.count == right.count ? 0 : 1)
        for index in 0..<max(left.count, right.count) {
            difference |= (index < left.count ? left[index] : 0) ^ (index < right.count ? right[index] : 0)
        }
        return difference == 0
    }
}

/// Why a Shared Access Signature was refused (answered 401; the message never holds a key).
public enum SASError: Error, Hashable, Sendable, CustomStringConvertible {
    case missing
    case malformed(String)
    case unknownRule(String)
    case expired(Int64)
    case tooLong(expiry: Int64, maximum: Int64)
    case wrongResource(String)
    case badSignature
    case unknownHost(String)

    public var description: String {
        switch self {
        case .missing: "authorization required: send Authorization: SharedAccessSignature sr=…&sig=…&se=…&skn=… (a hub rule's key)"
        case .malformed(let reason): "malformed SharedAccessSignature: \(reason)"
        case .unknownRule(let name): "the hub has no shared access rule '\(name.prefix(80))' (skn)"
        case .expired(let expiry): "the SharedAccessSignature expired at \(expiry) (se, seconds since 1970)"
        case .tooLong(let expiry, let maximum):
            "the SharedAccessSignature expires at \(expiry) (se), more than \(maximum) s from now (listener.sasMaximumLifetimeSeconds)"
        case .wrongResource(let resource):
            "the SharedAccessSignature is for '\(resource.prefix(200))' (sr), which does not cover this request"
        case .badSignature: "the SharedAccessSignature's signature (sig) does not match the rule's key"
        case .unknownHost(let host): "'\(host)' is not one of the gateway's names (listener.hostnames); send the request to one of them"
        }
    }
}

/// Verified signatures, so that a client reusing its token (they do until it expires) costs a
/// dictionary lookup, not a parse and an HMAC. Bounded: when full, it starts over.
public final class SignatureCache: Sendable {
    /// What a verified header said: its expiry, rule and normalized resource, which are checked
    /// again on every request (the resource against each request's path).
    struct Entry: Sendable {
        var expiry: Int64
        var keyName: String
        var resource: String
    }

    private let entries = Mutex<[String: Entry]>([:])
    let capacity: Int

    public init(capacity: Int = 10_000) { self.capacity = capacity }

    /// Forgets every verified token (their rules' keys may have changed).
    func removeAll() { entries.withLock { $0.removeAll() } }

    /// What `header` was verified as for `hub`, if it was.
    func entry(_ header: String, hub: AppID) -> Entry? {
        entries.withLock { $0[hub.rawValue + " " + header] }
    }

    func insert(_ header: String, hub: AppID, entry: Entry) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[hub.rawValue + " " + header] = entry
        }
    }
}
