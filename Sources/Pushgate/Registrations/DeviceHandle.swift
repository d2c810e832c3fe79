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

    /// The text of a handle given in JSON, for ``HandlePolicy/validate(_:for:)``: a string, or a
    /// browser's subscription as the object `PushSubscription.toJSON()` gives (both APIs and the
    /// JSON-lines import take both forms); nil for anything else.
    public static func text(fromJSON value: JSONValue) -> String? {
        if let text = value.stringValue { return text }
        return value.objectMembers != nil ? String(decoding: value.serialized(), as: UTF8.self) : nil
    }

    /// The handle with its middle hidden, safe for logs and results: `3f2a9c…b41e`.
    public var masked: String {
        // An FCM topic or condition target is no secret: shown whole.
        if fcmRecipient != nil { return value }
        // A browser's subscription: its endpoint, masked as a channel URI (the keys not at all).
        if platform.isWebPush, let subscription = WebPushSubscription(handleValue: value) { return Self.mask(subscription.endpoint) }
        return Self.mask(value)
    }

    /// The FCM topic or condition this handle holds as a send's one target (no registration's
    /// handle), or nil.
    public var fcmRecipient: FCMRecipient? { platform == .fcm ? FCMRecipient(handleValue: value) : nil }

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
///
/// Every check is bounded by the documented maximum length, which is checked first, so a hostile
/// handle costs no more to refuse than a legitimate one costs to accept.
public struct HandlePolicy: Sendable, Hashable {
    /// Hosts a WNS channel URI may point at (compared after lower-casing), each entry one of:
    /// - `*.notify.windows.com`: any DNS name under that suffix (not the suffix itself), port 443;
    /// - `db3.notify.windows.com`: that DNS name exactly, port 443;
    /// - `host:port`, such as `localhost:8443`, `127.0.0.1:8443` or `[::1]:8443`: that host exactly,
    ///   on that port only. This is the one way to allow an IP address or a port other than 443:
    ///   an explicit opt-in for a service on this machine, such as the sandbox's WNS emulator.
    ///
    /// An entry of any other form matches nothing; configuration loading refuses it (see
    /// ``wnsChannelHostProblem(_:)``). Default: `*.notify.windows.com`.
    public var wnsChannelHosts: [String]

    /// Hosts a Web Push subscription's endpoint may point at, by the same rules as
    /// ``wnsChannelHosts``. Default: the four public push services' hosts
    /// (``WebPushLimits/defaultHosts``).
    public var webPushHosts: [String]

    /// APNs device tokens: an even number of hex digits in this range (Apple's tokens are 32 bytes,
    /// 64 digits, today; Apple says not to rely on a fixed size).
    public static let apnsTokenHexLength = 64...200
    /// FCM and GCM registration tokens, in characters (ASCII): today's are about 160; 4 KB is ample.
    public static let fcmTokenLength = 20...4096
    /// WNS channel URIs, in bytes (UTF-8; a channel URI accepted is ASCII): WNS documents 2,048.
    public static let channelURIMaximumLength = 2048

    /// Hosts a UnifiedPush subscription's endpoint may point at (the distributors' servers the
    /// operator allows), by the same rules as ``wnsChannelHosts``. Default: none, so UnifiedPush
    /// is off until an operator allows hosts. Before every request the host's resolved addresses
    /// are checked too: a loopback, private, link-local, CGNAT, ULA or multicast address is
    /// reached only through an entry naming exactly that `host:port`.
    public var unifiedPushHosts: [String]

    public init(
        wnsChannelHosts: [String] = ["*.notify.windows.com"], webPushHosts: [String] = WebPushLimits.defaultHosts,
        unifiedPushHosts: [String] = []
    ) {
        self.wnsChannelHosts = wnsChannelHosts
        self.webPushHosts = webPushHosts
        self.unifiedPushHosts = unifiedPushHosts
    }

    /// Validates `text` as a handle of `platform`, returning it in canonical form: APNs tokens in
    /// lower case, WNS channel URIs with a lower-case scheme and host and no default port.
    /// Validating a canonical handle again returns it unchanged.
    public func validate(_ text: String, for platform: Platform) throws(HandleError) -> DeviceHandle {
        switch platform {
        case .apns: return DeviceHandle(uncheckedPlatform: .apns, value: try validateAPNSToken(text))
        case .fcm, .gcm: return DeviceHandle(uncheckedPlatform: platform, value: try validateFCMToken(text, platform))
        case .wns: return DeviceHandle(uncheckedPlatform: .wns, value: try validateChannelURI(text))
        case .browser: return DeviceHandle(uncheckedPlatform: .browser, value: try validateSubscription(text))
        case .unifiedpush:
            return DeviceHandle(uncheckedPlatform: .unifiedpush, value: try validateSubscription(text, platform: .unifiedpush))
        // Push Kit tokens are opaque (about 100 to 200 characters): the FCM token rule bounds them.
        case .hms: return DeviceHandle(uncheckedPlatform: .hms, value: try validateFCMToken(text, .hms))
        }
    }

    private func validateAPNSToken(_ text: String) throws(HandleError) -> String {
        if text.isEmpty { throw HandleError(.empty, platform: .apns) }
        let expected = "an even number of hex digits, \(Self.apnsTokenHexLength.lowerBound) to \(Self.apnsTokenHexLength.upperBound)"
        // The length first (bytes, O(1)): nothing longer than the limit is scanned.
        if text.utf8.count > Self.apnsTokenHexLength.upperBound {
            throw HandleError(.badLength(text.utf8.count, expected: expected), platform: .apns)
        }
        // ASCII only: `Character.isHexDigit` also accepts the full-width forms (U+FF10…). The
        // bytes are checked first (a token is ASCII); the characters only to name a bad one.
        var upperCase = false
        let hex = text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): return true
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                upperCase = true
                return true
            default: return false
            }
        }
        if !hex, let (offset, bad) = text.enumerated().first(where: { !($0.element.isASCII && $0.element.isHexDigit) }) {
            throw HandleError(.invalidCharacter(bad, position: offset + 1, expected: "hexadecimal digits"), platform: .apns)
        }
        let count = text.utf8.count
        guard Self.apnsTokenHexLength.contains(count), count % 2 == 0 else {
            throw HandleError(.badLength(count, expected: expected), platform: .apns)
        }
        return upperCase ? text.lowercased() : text
    }

    private func validateFCMToken(_ text: String, _ platform: Platform) throws(HandleError) -> String {
        if text.isEmpty { throw HandleError(.empty, platform: platform) }
        let expected = "\(Self.fcmTokenLength.lowerBound) to \(Self.fcmTokenLength.upperBound) characters"
        if text.utf8.count > Self.fcmTokenLength.upperBound {
            throw HandleError(.badLength(text.utf8.count, expected: expected), platform: platform)
        }
        if !text.utf8.allSatisfy(Self.isFCMTokenByte),
            let (offset, bad) = text.enumerated().first(where: { !Self.isFCMTokenCharacter($0.element) })
        {
            throw HandleError(.invalidCharacter(bad, position: offset + 1, expected: "letters, digits and - _ : ."), platform: platform)
        }
        let count = text.utf8.count
        guard Self.fcmTokenLength.contains(count) else {
            throw HandleError(.badLength(count, expected: expected), platform: platform)
        }
        return text
    }

    /// Whether `byte` is an ASCII letter, digit or one of `- _ : .`: a token's bytes, checked
    /// before its characters.
    private static func isFCMTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "."): true
        default: false
        }
    }

    private static func isFCMTokenCharacter(_ character: Character) -> Bool {
        guard character.isASCII else { return false }
        return character.isLetter || character.isNumber || "-_:.".contains(character)
    }
}

/// A device handle is not acceptable for its platform; the description names the handle's kind
/// (the field) and what is wrong with it.
public struct HandleError: PushgateInputError, Hashable {
    enum Code: Hashable {
        case empty
        case invalidCharacter(Character, position: Int, expected: String)
        case badLength(Int, expected: String)
        case notHTTPS
        case userInfo
        case fragment(position: Int)
        case badPercentEscape(position: Int)
        case malformed(String)
        case notDNSName(String, reason: String)
        case badPort(String)
        case ipAddress(String)
        case portNotAllowed(host: String, port: Int)
        case hostNotAllowed(String, allowed: [String])
    }

    let code: Code
    public let platform: Platform
    /// What the text is when it is not a device's handle (`"webhook URL"`); nil for a handle.
    let subject: String?

    init(_ code: Code, platform: Platform, subject: String? = nil) {
        self.code = code
        self.platform = platform
        self.subject = subject
    }

    public var description: String {
        let what =
            if let subject { subject } else {
                switch platform {
                case .apns: "APNs device token"
                case .fcm: "FCM registration token"
                case .gcm: "GCM registration token"
                case .wns: "WNS channel URI"
                case .browser: "Web Push subscription"
                case .hms: "Huawei Push Kit token"
                case .unifiedpush: "UnifiedPush subscription"
                }
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
        case .fragment(let position):
            return "\(what) has a fragment ('#') at position \(position); a channel URI has none"
        case .badPercentEscape(let position):
            return "\(what) has a '%' at position \(position) that is not followed by two hex digits"
        case .malformed(let detail):
            return "\(what) is malformed: \(detail)"
        case .notDNSName(let host, let reason):
            return "\(what) host '\(host)' is not a DNS name: \(reason)"
        case .badPort(let port):
            return "\(what) port '\(port)' is not a number from 1 to 65535"
        case .ipAddress(let host):
            return "\(what) host '\(host)' is an IP address; channel URIs must name a DNS host "
                + "(an IP address is allowed only where the allow-list names it with its port, as host:port)"
        case .portNotAllowed(let host, let port):
            return "\(what) port \(port) is not allowed: only 443, unless the allow-list names '\(host):\(port)'"
        case .hostNotAllowed(let host, let allowed):
            if allowed.isEmpty { return "\(what) host '\(host)' is not allowed: the allow-list is empty (no host is allowed)" }
            // The push services' hosts are public; an operator's UnifiedPush hosts may name its
            // own network, which a client is not told.
            if platform == .unifiedpush, subject == nil {
                return "\(what) host '\(host)' is not on the allow-list (handles.unifiedPushHosts)"
            }
            return "\(what) host '\(host)' is not on the allow-list (\(allowed.joined(separator: ", ")))"
        }
    }
}
