/// What the Web Push services take and what a subscription's keys are (RFC 8030, RFC 8291).
public enum WebPushLimits {
    /// The smallest body limit of the push services (Mozilla autopush, FCM, Apple, WNS for Edge).
    public static let maximumBodyBytes = 4096
    /// The aes128gcm header (salt 16, record size 4, key id length 1, the 65-byte key id), the
    /// padding delimiter and the 16-byte tag that encryption adds to a payload.
    public static let encryptionOverheadBytes = 16 + 4 + 1 + 65 + 1 + 16
    /// The largest payload whose encrypted body fits ``maximumBodyBytes``: 3,993 bytes.
    public static let maximumPayloadBytes = maximumBodyBytes - encryptionOverheadBytes
    /// A subscription's `p256dh`: an uncompressed P-256 point (0x04, X, Y).
    public static let publicKeyBytes = 65
    /// A subscription's `auth` secret.
    public static let authSecretBytes = 16
    /// The Web Push services' hosts: the default `handles.webPushHosts`. Mozilla
    /// (`updates.push.services.mozilla.com`), FCM (`fcm.googleapis.com`), Apple
    /// (`web.push.apple.com`; Apple asks servers to allow `*.push.apple.com`) and WNS for Edge
    /// (`wns2-<region>.notify.windows.com`).
    public static let defaultHosts = [
        "updates.push.services.mozilla.com", "fcm.googleapis.com", "*.push.apple.com", "*.notify.windows.com",
    ]
}

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it:
/// `{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}}`. A browser registration's
/// handle is this, in canonical JSON (the endpoint first, then the keys in base64url without
/// padding); the handle of a send's target is read back with ``init(handleValue:)``.
public struct WebPushSubscription: Sendable, Hashable {
    /// Where the push service takes the subscription's messages.
    public var endpoint: String
    /// The user agent's P-256 public key, 65 bytes.
    public var p256dh: [UInt8]
    /// The authentication secret, 16 bytes.
    public var auth: [UInt8]
    /// Whether messages are signed with the app's VAPID key (RFC 8292). A browser's always are;
    /// a UnifiedPush subscription says so with `"vapid": true` (its distributor was given the
    /// app's VAPID public key), and without it is sent unsigned, as ntfy takes it.
    public var vapid: Bool

    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8], vapid: Bool = false) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.vapid = vapid
    }

    /// The subscription in a stored handle (canonical JSON, checked when it was registered); nil
    /// for anything else.
    public init?(handleValue: String) {
        guard let value = try? JSONParser.parse(handleValue), let endpoint = value["endpoint"]?.stringValue,
            let keys = value["keys"], let p256dh = keys["p256dh"]?.stringValue.flatMap(Base64URL.decode),
            let auth = keys["auth"]?.stringValue.flatMap(Base64URL.decode)
        else { return nil }
        self.init(endpoint: endpoint, p256dh: p256dh, auth: auth, vapid: value["vapid"]?.kind == .bool(true))
    }

    /// The canonical handle: `{"endpoint":"…","keys":{"p256dh":"…","auth":"…"}}`, and
    /// `,"vapid":true` before the last `}` when ``vapid`` is set (a UnifiedPush subscription's).
    public var handleValue: String {
        let json = Self.json(endpoint: endpoint, p256dh: Base64URL.encode(p256dh), auth: Base64URL.encode(auth))
        return vapid ? json.dropLast() + #","vapid":true}"# : json
    }

    /// A subscription as JSON from its three parts as given (the hub API's `Endpoint`, `P256DH`
    /// and `Auth`), in the handle's layout; checked where every handle is.
    public static func json(endpoint: String, p256dh: String, auth: String) -> String {
        var output = Array(handlePrefix(endpoint: endpoint).utf8)
        output += Array(#"{"p256dh":"#.utf8)
        Escaping.appendJSONString(p256dh, to: &output)
        output += Array(#","auth":"#.utf8)
        Escaping.appendJSONString(auth, to: &output)
        output += Array("}}".utf8)
        return String(decoding: output, as: UTF8.self)
    }

    /// What every stored handle of `endpoint` begins with: how a subscription is found by its
    /// endpoint alone (`POST /api/register?handle=<endpoint>`).
    public static func handlePrefix(endpoint: String) -> String {
        var output = Array(#"{"endpoint":"#.utf8)
        Escaping.appendJSONString(endpoint, to: &output)
        output += Array(#","keys":"#.utf8)
        return String(decoding: output, as: UTF8.self)
    }

    /// The endpoint's origin (`https://host[:port]`): a VAPID token's audience.
    public var origin: String {
        let afterScheme = endpoint.dropFirst("https://".count)
        let authority = afterScheme.prefix(while: { $0 != "/" && $0 != "?" })
        return "https://" + authority
    }
}

extension HandlePolicy {
    /// Whether `endpoint` may be requested: `https` on a host of ``webPushHosts`` (checked again
    /// before every send, so that a subscription stored under another allow-list is never
    /// contacted).
    public func checkWebPushEndpoint(_ endpoint: String) throws(HandleError) {
        _ = try canonicalWebPushEndpoint(endpoint)
    }

    /// `endpoint` checked as ``checkWebPushEndpoint(_:)`` does, in the canonical form a stored
    /// subscription holds (the scheme and host in lower case, no `:443`).
    public func canonicalWebPushEndpoint(_ endpoint: String) throws(HandleError) -> String {
        try validateURL(endpoint, platform: .browser, allowed: webPushHosts)
    }

    /// Whether a UnifiedPush `endpoint` may be requested: `https` on a host of
    /// ``unifiedPushHosts`` (checked again before every send; the addresses the host resolves to
    /// are checked apart, when it is requested).
    public func checkUnifiedPushEndpoint(_ endpoint: String) throws(HandleError) {
        _ = try validateURL(endpoint, platform: .unifiedpush, allowed: unifiedPushHosts)
    }

    /// The hosts a Web Push platform's endpoints may point at.
    public func endpointHosts(for platform: Platform) -> [String] { platform == .unifiedpush ? unifiedPushHosts : webPushHosts }

    /// A browser subscription: JSON with `endpoint` (an `https` URL on a host of
    /// ``webPushHosts``, by the same rules as WNS channel URIs), `keys.p256dh` (an uncompressed
    /// point on the P-256 curve) and `keys.auth` (16 bytes), both base64url with or without padding; other
    /// members (`expirationTime`) are ignored. Returned in canonical form.
    ///
    /// A UnifiedPush subscription (`platform` `.unifiedpush`) takes the same shape, its endpoint
    /// on a host of ``unifiedPushHosts``, and an optional `vapid` (`true` or `false`): whether
    /// its messages are signed with the app's VAPID key.
    func validateSubscription(_ text: String, platform: Platform = .browser) throws(HandleError) -> String {
        if text.isEmpty { throw HandleError(.empty, platform: platform) }
        // An endpoint, two keys and some slack.
        let limit = Self.channelURIMaximumLength + 512
        guard text.utf8.count <= limit else {
            throw HandleError(.badLength(text.utf8.count, expected: "at most \(limit) bytes"), platform: platform)
        }
        let value: JSONValue
        do { value = try JSONParser.parse(text) } catch {
            throw HandleError(
                .malformed("expected the subscription as JSON {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}}: \(error)"),
                platform: platform)
        }
        guard value.objectMembers != nil else {
            throw HandleError(.malformed("expected a JSON object {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}}"), platform: platform)
        }
        guard let endpointText = value["endpoint"]?.stringValue else {
            throw HandleError(.malformed("'endpoint' is missing or not a string"), platform: platform)
        }
        let endpoint = try validateURL(endpointText, platform: platform, allowed: endpointHosts(for: platform))
        guard let keys = value["keys"], keys.objectMembers != nil else {
            throw HandleError(.malformed("'keys' is missing or not an object"), platform: platform)
        }
        func key(_ name: String, bytes: Int) throws(HandleError) -> [UInt8] {
            guard let text = keys[name]?.stringValue else {
                throw HandleError(.malformed("'keys.\(name)' is missing or not a string"), platform: platform)
            }
            guard let decoded = Base64URL.decode(text) else {
                throw HandleError(.malformed("'keys.\(name)' is not base64url"), platform: platform)
            }
            guard decoded.count == bytes else {
                throw HandleError(.malformed("'keys.\(name)' is \(decoded.count) bytes; expected \(bytes)"), platform: platform)
            }
            return decoded
        }
        let p256dh = try key("p256dh", bytes: WebPushLimits.publicKeyBytes)
        guard p256dh.first == 0x04 else {
            throw HandleError(.malformed("'keys.p256dh' is not an uncompressed P-256 point (it must start with 0x04)"), platform: platform)
        }
        // Not a key the browser made: every send to it would fail, and the registration stay.
        guard P256Curve.isUncompressedPoint(p256dh) else {
            throw HandleError(.malformed("'keys.p256dh' is not a point on the P-256 curve"), platform: platform)
        }
        let auth = try key("auth", bytes: WebPushLimits.authSecretBytes)
        var vapid = false
        if platform == .unifiedpush, let member = value["vapid"], member.kind != .null {
            guard case .bool(let flag) = member.kind else {
                throw HandleError(
                    .malformed("'vapid' must be true or false (whether messages are signed with the app's VAPID key)"), platform: platform)
            }
            vapid = flag
        }
        return WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, vapid: vapid).handleValue
    }
}

/// base64url (RFC 4648 §5), as Web Push writes keys: encoded without padding; decoded with or
/// without it (and from standard base64's `+` and `/`, which some clients send).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            output.append(alphabet[Int(first >> 2)])
            output.append(alphabet[Int((first & 0x03) << 4 | (second ?? 0) >> 4)])
            if let second { output.append(alphabet[Int((second & 0x0F) << 2 | (third ?? 0) >> 6)]) }
            if let third { output.append(alphabet[Int(third & 0x3F)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var bits: UInt32 = 0
        var count = 0
        var output: [UInt8] = []
        var padding = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            bits = bits << 6 | UInt32(value)
            count += 6
            if count >= 8 {
                count -= 8
                output.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
            }
        }
        // A lone character (6 bits) encodes no byte; padding goes only after 2 or 3 characters.
        guard count != 6, padding <= 2 else { return nil }
        return output
    }
}
