/// The address of one app installation at its push service: an APNs device token, an FCM / GCM
/// registration token, or a WNS channel URI. Construct it through ``HandlePolicy/validate(_:for:)``.
public struct DeviceHandle: Sendable, Hashable, CustomStringConvertible, Codable {
    public let platform: Platform
    /// The handle in canonical form (APNs tokens lower-case hex).
    public let value: String

    /// Wraps a handle that was validated before (for example, read back from the store).
    public init(uncheckedPlatform platform: Platform, value: String) {
        self.platform = platform
        self.value = value
    }

    /// The handle with its middle hidden, safe for logs and results: `3f2a9c…b41e`.
    public var masked: String { Self.mask(value) }

    /// Hides the middle of a handle: at most the first 6 and last 4 characters remain.
    public static func mask(_ value: String) -> String {
        if value.hasPrefix("https://") || value.hasPrefix("http://") {
            // Channel URIs: keep scheme and host, hide the token that makes them a secret.
            let afterScheme = value[value.index(value.firstIndex(of: ":")!, offsetBy: 3)...]
            let hostEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
            let rest = afterScheme[hostEnd...]
            return String(value[..<hostEnd]) + (rest.count > 8 ? String(rest.prefix(4)) + "…" + String(rest.suffix(4)) : String(rest))
        }
        guard value.count > 12 else { return String(repeating: "•", count: min(value.count, 4)) }
        return String(value.prefix(6)) + "…" + String(value.suffix(4))
    }

    public var description: String { "\(platform):\(masked)" }
}

/// The rules a handle must pass before it is stored: what each push service accepts, and which WNS
/// hosts the gateway will ever POST to (it must never call an arbitrary URL a device registered).
public struct HandlePolicy: Sendable, Hashable {
    /// Hosts a WNS channel URI may point at. `*.example.com` matches any subdomain by DNS name;
    /// `host` matches that host exactly. Only port 443 is allowed unless an entry names another
    /// explicitly (`127.0.0.1:8443`, as the local sandbox does); an IP address is allowed only
    /// when an entry names it exactly. Default: `*.notify.windows.com`.
    public var wnsChannelHosts: [String]

    public static let apnsTokenHexLength = 64...200
    public static let fcmTokenLength = 20...4096
    public static let channelURIMaximumLength = 2048

    public init(wnsChannelHosts: [String] = ["*.notify.windows.com"]) {
        self.wnsChannelHosts = wnsChannelHosts
    }

    /// Validates `text` as a handle of `platform`, returning it in canonical form.
    public func validate(_ text: String, for platform: Platform) throws(HandleError) -> DeviceHandle {
        switch platform {
        case .apns: return DeviceHandle(uncheckedPlatform: .apns, value: try validateAPNSToken(text))
        case .fcm, .gcm: return DeviceHandle(uncheckedPlatform: platform, value: try validateFCMToken(text, platform))
        case .wns: return DeviceHandle(uncheckedPlatform: .wns, value: try validateChannelURI(text))
        }
    }

    private func validateAPNSToken(_ text: String) throws(HandleError) -> String {
        if text.isEmpty { throw HandleError(.empty, platform: .apns) }
        if let (offset, bad) = text.enumerated().first(where: { !$0.element.isHexDigit }) {
            throw HandleError(.invalidCharacter(bad, position: offset + 1, expected: "hexadecimal digits"), platform: .apns)
        }
        let count = text.count
        guard Self.apnsTokenHexLength.contains(count), count % 2 == 0 else {
            throw HandleError(.badLength(count, expected: "an even number of hex digits, 64 to 200"), platform: .apns)
        }
        return text.lowercased()
    }

    private func validateFCMToken(_ text: String, _ platform: Platform) throws(HandleError) -> String {
        if text.isEmpty { throw HandleError(.empty, platform: platform) }
        if let (offset, bad) = text.enumerated().first(where: { !Self.isFCMTokenCharacter($0.element) }) {
            throw HandleError(.invalidCharacter(bad, position: offset + 1, expected: "letters, digits and - _ : ."), platform: platform)
        }
        let count = text.count
        guard Self.fcmTokenLength.contains(count) else {
            throw HandleError(.badLength(count, expected: "20 to 4096 characters"), platform: platform)
        }
        return text
    }

    private static func isFCMTokenCharacter(_ character: Character) -> Bool {
        guard character.isASCII else { return false }
        return character.isLetter || character.isNumber || "-_:.".contains(character)
    }

    private func validateChannelURI(_ text: String) throws(HandleError) -> String {
        if text.isEmpty { throw HandleError(.empty, platform: .wns) }
        if text.utf8.count > Self.channelURIMaximumLength {
            throw HandleError(.badLength(text.utf8.count, expected: "at most \(Self.channelURIMaximumLength) bytes"), platform: .wns)
        }
        if let (offset, bad) = text.enumerated().first(where: {
            !$0.element.isASCII || $0.element.isWhitespace || ($0.element.asciiValue ?? 0) < 0x21
        }) {
            throw HandleError(
                .invalidCharacter(bad, position: offset + 1, expected: "a URI without spaces or non-ASCII characters"), platform: .wns)
        }
        guard text.lowercased().hasPrefix("https://") else { throw HandleError(.notHTTPS, platform: .wns) }
        let afterScheme = text.dropFirst("https://".count)
        let authority = afterScheme.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        let rest = afterScheme.dropFirst(authority.count)
        if authority.contains("@") { throw HandleError(.userInfo, platform: .wns) }
        if rest.contains("#") { throw HandleError(.malformed("a fragment ('#') has no place in a channel URI"), platform: .wns) }
        if authority.hasPrefix("[") { throw HandleError(.hostNotAllowed(String(authority), allowed: wnsChannelHosts), platform: .wns) }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw HandleError(.malformed("'\(authority)' is not host[:port]"), platform: .wns) }
        let host = parts[0].lowercased()
        if host.isEmpty { throw HandleError(.malformed("no host"), platform: .wns) }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }), !host.hasPrefix("."), !host.hasSuffix("."),
            !host.contains("..")
        else {
            throw HandleError(.malformed("host '\(host)' is not a plain DNS name (no %-encoding, no trailing dot)"), platform: .wns)
        }
        var port = 443
        if parts.count == 2 {
            guard let number = Int(parts[1]), (1...65535).contains(number), parts[1].allSatisfy(\.isNumber) else {
                throw HandleError(.malformed("port '\(parts[1])' is not a number from 1 to 65535"), platform: .wns)
            }
            port = number
        }
        guard wnsChannelHosts.contains(where: { Self.host(host, port: port, matches: $0.lowercased()) }) else {
            throw HandleError(.hostNotAllowed(port == 443 ? host : "\(host):\(port)", allowed: wnsChannelHosts), platform: .wns)
        }
        // Canonical form: lower-case scheme and host, no default port.
        return "https://" + host + (port == 443 ? "" : ":\(port)") + rest
    }

    /// Whether `host` on `port` is allowed by one allow-list entry.
    static func host(_ host: String, port: Int, matches entry: String) -> Bool {
        var pattern = Substring(entry)
        var allowedPort = 443
        if let colon = entry.lastIndex(of: ":"), let number = Int(entry[entry.index(after: colon)...]) {
            pattern = entry[..<colon]
            allowedPort = number
        }
        guard port == allowedPort else { return false }
        if pattern.hasPrefix("*.") {
            // By DNS name only: an IP address never matches a wildcard.
            if host.allSatisfy({ $0.isNumber || $0 == "." }) { return false }
            return Self.host(host, matches: String(pattern))
        }
        return host == pattern
    }

    static func host(_ host: String, matches pattern: String) -> Bool {
        if pattern.hasPrefix("*.") {
            let suffix = pattern.dropFirst(1)  // ".notify.windows.com"
            return host.hasSuffix(suffix) && host.count > suffix.count
        }
        return host == pattern
    }
}

/// A device handle is not acceptable for its platform.
public struct HandleError: PushgateInputError, Hashable {
    enum Code: Hashable {
        case empty
        case invalidCharacter(Character, position: Int, expected: String)
        case badLength(Int, expected: String)
        case notHTTPS
        case userInfo
        case malformed(String)
        case hostNotAllowed(String, allowed: [String])
    }

    let code: Code
    public let platform: Platform

    init(_ code: Code, platform: Platform) {
        self.code = code
        self.platform = platform
    }

    public var description: String {
        let what =
            switch platform {
            case .apns: "APNs device token"
            case .fcm: "FCM registration token"
            case .gcm: "GCM registration token"
            case .wns: "WNS channel URI"
            }
        switch code {
        case .empty:
            return "\(what) is empty"
        case .invalidCharacter(let character, let position, let expected):
            return "\(what) has an invalid character \(quoted(character)) at position \(position); expected \(expected)"
        case .badLength(let count, let expected):
            return "\(what) has length \(count); expected \(expected)"
        case .notHTTPS:
            return "\(what) must start with https://"
        case .userInfo:
            return "\(what) must not contain user information (user@host)"
        case .malformed(let detail):
            return "\(what) is malformed: \(detail)"
        case .hostNotAllowed(let host, let allowed):
            return "\(what) host '\(host)' is not on the allow-list (\(allowed.joined(separator: ", ")))"
        }
    }
}
