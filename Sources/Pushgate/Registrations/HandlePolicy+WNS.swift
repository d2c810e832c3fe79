/// WNS channel URIs: the gateway POSTs notifications (with its WNS access token) to whatever URI a
/// device registered, so a URI is accepted only when it can reach nothing but an allow-listed host.
extension HandlePolicy {
    /// Validates a channel URI and returns it in canonical form: `https://`, the host in lower case,
    /// no port when it is 443, the rest (path and query) unchanged.
    ///
    /// Refused, each with its own message: more than ``channelURIMaximumLength`` bytes; anything but
    /// printable ASCII (control characters, spaces, non-ASCII); a scheme other than `https`; a
    /// fragment; a character RFC 3986 does not allow (`\`, `"`, `<`, `{`, …) or a `%` not followed by
    /// two hex digits; user information; a host that is not a plain DNS name (no `%`-encoding, no
    /// empty label, no trailing dot; labels of letters, digits and inner `-`); an IP address
    /// (dotted, decimal, hexadecimal, or bracketed IPv6) or a port other than 443, unless an
    /// allow-list entry names exactly that `host:port`; a host that no entry matches.
    func validateChannelURI(_ text: String) throws(HandleError) -> String {
        try validateURL(text, platform: .wns, allowed: wnsChannelHosts)
    }

    /// An `https` URL the gateway will POST to (a WNS channel URI, a Web Push endpoint), by the
    /// rules above, on a host of `allowed`.
    func validateURL(_ text: String, platform: Platform, allowed: [String]) throws(HandleError) -> String {
        if text.isEmpty { throw HandleError(.empty, platform: platform) }
        let length = text.utf8.count
        guard length <= Self.channelURIMaximumLength else {
            throw HandleError(.badLength(length, expected: "at most \(Self.channelURIMaximumLength) bytes"), platform: platform)
        }
        if let (offset, bad) = text.unicodeScalars.enumerated().first(where: { !(0x21...0x7E).contains($0.element.value) }) {
            throw HandleError(
                .invalidCharacter(Character(bad), position: offset + 1, expected: "printable ASCII (no spaces or control characters)"),
                platform: platform)
        }
        // From here on the text is printable ASCII: one byte, one character, one position.
        let bytes = Array(text.utf8)
        let scheme = "https://"
        guard text.prefix(scheme.count).lowercased() == scheme else { throw HandleError(.notHTTPS, platform: platform) }
        for (offset, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "#"):
                throw HandleError(.fragment(position: offset + 1), platform: platform)
            case UInt8(ascii: "%"):
                // A %-escape is % and two hex digits; anything else is read differently by different parsers.
                guard offset + 2 < bytes.count, bytes[offset + 1].isASCIIHexDigit, bytes[offset + 2].isASCIIHexDigit else {
                    throw HandleError(.badPercentEscape(position: offset + 1), platform: platform)
                }
            case _ where !byte.isURICharacter:
                // `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`: not in a URI (RFC 3986); `\` is read as `/` by
                // some parsers.
                throw HandleError(
                    .invalidCharacter(
                        Character(Unicode.Scalar(byte)), position: offset + 1, expected: "a character allowed in a URI (RFC 3986)"),
                    platform: platform)
            default:
                break
            }
        }
        let afterScheme = text.dropFirst(scheme.count)
        let authority = afterScheme.prefix(while: { $0 != "/" && $0 != "?" })
        let rest = afterScheme.dropFirst(authority.count)
        if authority.contains("@") { throw HandleError(.userInfo, platform: platform) }

        let (hostText, portText) = try Self.splitAuthority(authority, platform: platform)
        let host = hostText.lowercased()
        var port = 443
        if let portText {
            guard let number = Self.portNumber(portText) else { throw HandleError(.badPort(String(portText)), platform: platform) }
            port = number
        }
        let isIPAddress = Self.isIPAddress(host)
        if !isIPAddress, let reason = Self.dnsNameProblem(host) {
            throw HandleError(.notDNSName(host, reason: reason), platform: platform)
        }
        let patterns = allowed.compactMap { try? WNSHostPattern(parsing: $0) }
        guard patterns.contains(where: { $0.matches(host: host, port: port, isIPAddress: isIPAddress) }) else {
            if isIPAddress { throw HandleError(.ipAddress(portText == nil ? host : "\(host):\(port)"), platform: platform) }
            if port != 443 { throw HandleError(.portNotAllowed(host: host, port: port), platform: platform) }
            throw HandleError(.hostNotAllowed(host, allowed: allowed), platform: platform)
        }
        return scheme + host + (port == 443 ? "" : ":\(port)") + rest
    }

    /// Whether `entry` can be a ``wnsChannelHosts`` entry: nil if so, otherwise what is wrong with
    /// it, for a configuration error (`'127.0.0.1' is an IP address: …`).
    public static func wnsChannelHostProblem(_ entry: String) -> String? {
        do {
            _ = try WNSHostPattern(parsing: entry)
            return nil
        } catch {
            return error.reason
        }
    }

    /// The host and the port text of an authority (`host`, `host:port`, `[v6]`, `[v6]:port`).
    static func splitAuthority(_ authority: Substring, platform: Platform = .wns) throws(HandleError) -> (host: Substring, port: Substring?)
    {
        if authority.isEmpty { throw HandleError(.malformed("no host after https://"), platform: platform) }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw HandleError(.malformed("'\(authority)' opens '[' but never closes it"), platform: platform)
            }
            let host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if after.isEmpty { return (host, nil) }
            guard after.first == ":" else { throw HandleError(.malformed("'\(authority)' is not [address]:port"), platform: platform) }
            return (host, after.dropFirst())
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw HandleError(.malformed("'\(authority)' is not host:port"), platform: platform) }
        if parts[0].isEmpty { throw HandleError(.malformed("no host before ':' in '\(authority)'"), platform: platform) }
        return (parts[0], parts.count == 2 ? parts[1] : nil)
    }

    /// A port written as 1 to 5 ASCII digits, 1…65535; nil for anything else (`+443`, ``, `0x1bb`).
    static func portNumber(_ text: Substring) -> Int? {
        guard (1...5).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(text),
            (1...65535).contains(number)
        else { return nil }
        return number
    }

    /// Whether a (lower-case) host is read as an IP address by URL parsers: bracketed IPv6, or a
    /// name whose last label is a number (`127.0.0.1`, `2130706433`, `0x7f.1`, `127.1`), which the
    /// WHATWG URL standard and `inet_aton` read as IPv4.
    static func isIPAddress(_ host: String) -> Bool {
        if host.hasPrefix("[") { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard var last = labels.last else { return false }
        if last.isEmpty, labels.count > 1 { last = labels[labels.count - 2] }  // "127.0.0.1."
        if last.isEmpty { return false }
        if last.allSatisfy({ $0.isASCII && $0.isNumber }) { return true }
        return last.hasPrefix("0x") && last.dropFirst(2).allSatisfy({ $0.isASCII && $0.isHexDigit })
    }

    /// Why a lower-case host is not a plain DNS name (RFC 1123 host name), or nil if it is one.
    static func dnsNameProblem(_ host: String) -> String? {
        if host.utf8.count > 253 { return "it is \(host.utf8.count) characters long; the limit is 253" }
        if host.hasSuffix(".") { return "it ends with '.'" }
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { return "it has an empty label ('..' or a leading '.')" }
            if label.count > 63 { return "label '\(label.prefix(20))…' is \(label.count) characters long; the limit is 63" }
            if let bad = label.first(where: { !(isLowerCaseASCIILetterOrDigit($0) || $0 == "-") }) {
                return "\(quoted(bad)) is not a letter, digit or '-'" + (bad == "%" ? " (no %-encoding in a host)" : "")
            }
            if label.hasPrefix("-") || label.hasSuffix("-") { return "label '\(label)' starts or ends with '-'" }
        }
        return nil
    }

    private static func isLowerCaseASCIILetterOrDigit(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(ascii) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(ascii)
    }
}

/// One parsed ``HandlePolicy/wnsChannelHosts`` entry.
enum WNSHostPattern: Hashable {
    /// `*.example.com`: DNS names ending in `.example.com` (stored with the leading dot), port 443.
    case suffix(String)
    /// `db3.example.com`: that DNS name, port 443.
    case host(String)
    /// `host:port`: that host (a DNS name, a dotted IPv4 address or a bracketed IPv6 address)
    /// exactly, on that port only.
    case hostAndPort(String, Int)

    struct Problem: Error {
        var reason: String
    }

    init(parsing entry: String) throws(Problem) {
        let text = entry.lowercased()
        guard !text.isEmpty else { throw Problem(reason: "an entry is empty") }
        if let bad = text.unicodeScalars.first(where: { !(0x21...0x7E).contains($0.value) }) {
            throw Problem(reason: "\(quoted(Character(bad))) has no place in a host name")
        }
        if text.contains("/") {
            throw Problem(reason: "'\(entry)' looks like a URL; an entry is a host name, host:port or *.domain pattern")
        }
        if text.hasPrefix("*.") {
            let suffix = String(text.dropFirst(2))
            if suffix.contains(":") { throw Problem(reason: "a *.domain pattern cannot name a port; name each host:port instead") }
            if HandlePolicy.isIPAddress(suffix) { throw Problem(reason: "'\(suffix)' is an IP address, not a domain") }
            if let reason = HandlePolicy.dnsNameProblem(suffix) { throw Problem(reason: "'\(suffix)' is not a DNS name: \(reason)") }
            if !suffix.contains(".") { throw Problem(reason: "'*.\(suffix)' would allow a whole top-level domain") }
            self = .suffix("." + suffix)
            return
        }
        let host: Substring
        let portText: Substring?
        do { (host, portText) = try HandlePolicy.splitAuthority(Substring(text)) } catch {
            throw Problem(reason: "'\(entry)' is not a host name, host:port or *.domain pattern")
        }
        var port: Int?
        if let portText {
            guard let number = HandlePolicy.portNumber(portText) else {
                throw Problem(reason: "port '\(portText)' is not a number from 1 to 65535")
            }
            port = number
        }
        if HandlePolicy.isIPAddress(String(host)) {
            guard Self.isCanonicalIPAddress(host) else {
                throw Problem(reason: "'\(host)' is not an IP address in canonical form (a.b.c.d, or [v6] in lower case)")
            }
            guard let port else {
                throw Problem(reason: "'\(host)' is an IP address: allow it explicitly with its port, as \(host):PORT")
            }
            self = .hostAndPort(String(host), port)
            return
        }
        if let reason = HandlePolicy.dnsNameProblem(String(host)) { throw Problem(reason: "'\(host)' is not a DNS name: \(reason)") }
        self = port.map { .hostAndPort(String(host), $0) } ?? .host(String(host))
    }

    /// Dotted-quad IPv4 with no leading zeros, or bracketed IPv6 of hex digits, `:` and `.`: the
    /// form an exact entry must take, since it is compared as text.
    static func isCanonicalIPAddress(_ host: Substring) -> Bool {
        if host.hasPrefix("[") {
            let inner = host.dropFirst().dropLast()
            return host.hasSuffix("]") && inner.contains(":")
                && inner.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == ":" || $0 == ".") })
        }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4
            && octets.allSatisfy { octet in
                (1...3).contains(octet.count) && octet.allSatisfy({ $0.isASCII && $0.isNumber })
                    && (octet == "0" || !octet.hasPrefix("0")) && Int(octet).map { $0 <= 255 } == true
            }
    }

    func matches(host: String, port: Int, isIPAddress: Bool) -> Bool {
        switch self {
        case .suffix(let suffix): port == 443 && !isIPAddress && host.hasSuffix(suffix)
        case .host(let name): port == 443 && !isIPAddress && host == name
        case .hostAndPort(let name, let allowedPort): port == allowedPort && host == name
        }
    }
}

extension UInt8 {
    fileprivate var isASCIIHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    /// RFC 3986 unreserved and reserved characters, and `%` (escapes are checked apart).
    fileprivate var isURICharacter: Bool {
        switch self {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("-._~:/?#[]@!$&'()*+,;=%".utf8).contains(self)
        }
    }
}
