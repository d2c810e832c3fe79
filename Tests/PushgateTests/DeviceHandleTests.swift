import Pushgate
import Testing

@Suite struct DeviceHandleTests {
    /// The sandbox's WNS emulator is allowed the way a gateway configured by `pushgate demo` allows
    /// it: by naming its address and port exactly.
    let policy = HandlePolicy(wnsChannelHosts: ["*.notify.windows.com", "127.0.0.1:8443", "[::1]:9443", "localhost:7443"])
    let apnsToken = String(repeating: "A1b2", count: 16)

    func refusal(_ text: String, for platform: Platform, policy: HandlePolicy? = nil) -> String {
        do {
            let handle = try (policy ?? self.policy).validate(text, for: platform)
            return "accepted as \(handle.value)"
        } catch {
            return error.description
        }
    }

    @Test func apnsTokensAreHexAndCanonicallyLowerCase() throws {
        #expect(try policy.validate(apnsToken, for: .apns).value == apnsToken.lowercased())
        #expect {
            try policy.validate(String(apnsToken.dropLast()) + "g", for: .apns)
        } throws: { error in
            (error as! HandleError).description
                == "APNs device token has an invalid character 'g' at position 64; expected hexadecimal digits"
        }
        #expect {
            try policy.validate("abcd", for: .apns)
        } throws: { error in
            (error as! HandleError).description.contains("has length 4")
        }
        #expect(throws: HandleError.self) { try policy.validate(apnsToken + "a", for: .apns) }
        #expect(throws: HandleError.self) { try policy.validate("", for: .apns) }
    }

    @Test func apnsTokensRefuseControlCharactersWideDigitsAndExcessLength() {
        #expect(
            refusal(String(apnsToken.dropLast()) + "\u{0}", for: .apns)
                == "APNs device token has an invalid character U+0000 at position 64; expected hexadecimal digits")
        #expect(refusal(String(apnsToken.dropLast()) + "\n", for: .apns).contains("invalid character U+000A at position 64"))
        // Character.isHexDigit accepts the full-width digits; a token is ASCII.
        #expect(refusal(String(apnsToken.dropLast()) + "\u{FF11}", for: .apns).contains("invalid character '１' at position 64"))
        #expect(
            refusal(String(repeating: "ab", count: 101), for: .apns)
                == "APNs device token has length 202; expected an even number of hex digits, 64 to 200")
        #expect(refusal(String(repeating: "ab", count: 100), for: .apns).hasPrefix("accepted"))
        // Refused by its length before a character of it is looked at.
        #expect(refusal(String(repeating: "\u{0}", count: 1_000_000), for: .apns).contains("has length 1000000"))
    }

    @Test func fcmTokensUseTheirCharsetAndLength() throws {
        let token = "dGVzdA:APA91bH-" + String(repeating: "x_Y", count: 40)
        #expect(try policy.validate(token, for: .fcm).value == token)
        #expect(try policy.validate(token, for: .gcm).platform == .gcm)
        #expect {
            try policy.validate("abc def" + String(repeating: "x", count: 30), for: .fcm)
        } throws: { error in
            (error as! HandleError).description.contains("FCM registration token has an invalid character U+0020 at position 4")
        }
        #expect(throws: HandleError.self) { try policy.validate("short", for: .gcm) }
        #expect(throws: HandleError.self) { try policy.validate(String(repeating: "a", count: 4097), for: .fcm) }
        #expect(refusal(String(repeating: "a", count: 4096), for: .fcm).hasPrefix("accepted"))
        #expect(
            refusal(String(repeating: "a", count: 30) + "\u{7F}", for: .gcm)
                == "GCM registration token has an invalid character U+007F at position 31; expected letters, digits and - _ : .")
        #expect(
            refusal(String(repeating: "a", count: 100_000), for: .fcm)
                == "FCM registration token has length 100000; expected 20 to 4096 characters")
    }

    @Test func wnsChannelsMustBeHTTPSOnAnAllowedHost() throws {
        let channel = "https://db3.notify.windows.com/?token=AwYAAAB%2bQ"
        #expect(try policy.validate(channel, for: .wns).value == channel)
        #expect(try policy.validate("https://127.0.0.1:8443/wns/channel/1", for: .wns).platform == .wns)
        #expect {
            try policy.validate("https://evil.example.com/?token=x", for: .wns)
        } throws: { error in
            (error as! HandleError).description.contains("host 'evil.example.com' is not on the allow-list")
        }
        #expect(throws: HandleError.self) { try policy.validate("http://db3.notify.windows.com/?token=x", for: .wns) }
        // Suffix tricks and user info do not get past the allow-list.
        #expect(throws: HandleError.self) { try policy.validate("https://notify.windows.com.evil.com/", for: .wns) }
        #expect(throws: HandleError.self) { try policy.validate("https://evilnotify.windows.com/", for: .wns) }
        #expect(throws: HandleError.self) { try policy.validate("https://notify.windows.com/", for: .wns) }
        #expect(throws: HandleError.self) { try policy.validate("https://db3.notify.windows.com@evil.com/", for: .wns) }
        #expect(throws: HandleError.self) { try policy.validate("https://db3.notify.windows.com /x", for: .wns) }
        #expect(throws: HandleError.self) { try policy.validate("https://127.0.0.1:port/", for: .wns) }
    }

    /// Accepted, these would open TLS to any port on this machine with `127.0.0.1` allow-listed,
    /// and with a wildcard to any address a suffix trick could reach.
    @Test(arguments: [
        ("ftp://db3.notify.windows.com/", "WNS channel URI must start with https://"),
        ("http://db3.notify.windows.com/", "WNS channel URI must start with https://"),
        ("https://user:pw@db3.notify.windows.com/", "WNS channel URI must not contain user information (user@host)"),
        ("https://evil.com\\@db3.notify.windows.com/", "invalid character '\\' at position 17; expected a character allowed in a URI"),
        ("https://db3.notify.windows.com/#frag", "WNS channel URI has a fragment ('#') at position 32; a channel URI has none"),
        (
            "https://db3.notify.windows.com:8443/?token=x",
            "WNS channel URI port 8443 is not allowed: only 443, unless the allow-list names 'db3.notify.windows.com:8443'"
        ),
        ("https://localhost:8443/", "port 8443 is not allowed: only 443, unless the allow-list names 'localhost:8443'"),
        ("https://localhost/", "host 'localhost' is not on the allow-list"),
        ("https://127.0.0.1/", "WNS channel URI host '127.0.0.1' is an IP address; channel URIs must name a DNS host"),
        ("https://127.0.0.1:443/", "host '127.0.0.1:443' is an IP address"),
        ("https://127.0.0.1:22/", "host '127.0.0.1:22' is an IP address"),
        ("https://169.254.169.254/latest/meta-data", "host '169.254.169.254' is an IP address"),
        ("https://2130706433/", "host '2130706433' is an IP address"),
        ("https://0x7f.1/", "host '0x7f.1' is an IP address"),
        ("https://127.1:8443/", "host '127.1:8443' is an IP address"),
        ("https://[::1]/", "host '[::1]' is an IP address"),
        ("https://[::1]:8443/", "host '[::1]:8443' is an IP address"),
        ("https://[::ffff:127.0.0.1]:9443/", "host '[::ffff:127.0.0.1]:9443' is an IP address"),
        ("https://[::1/", "opens '[' but never closes it"),
        ("https://[::1]x/", "is not [address]:port"),
        ("https://db3.notify.windows.com./", "host 'db3.notify.windows.com.' is not a DNS name: it ends with '.'"),
        ("https://db3..notify.windows.com/", "is not a DNS name: it has an empty label"),
        ("https://.notify.windows.com/", "is not a DNS name: it has an empty label"),
        ("https://db3%2enotify.windows.com/", "host 'db3%2enotify.windows.com' is not a DNS name: '%' is not a letter, digit or '-'"),
        ("https://db3.notify.windows.com%2f.evil.com/", "is not a DNS name: '%' is not a letter, digit or '-'"),
        ("https://db3_x.notify.windows.com/", "is not a DNS name: '_' is not a letter, digit or '-'"),
        ("https://-db3.notify.windows.com/", "label '-db3' starts or ends with '-'"),
        ("https://db3.notify.windows.com/%zz", "has a '%' at position 32 that is not followed by two hex digits"),
        ("https://db3.notify.windows.com/%2", "has a '%' at position 32 that is not followed by two hex digits"),
        ("https://db3.notify.windows.com:0/", "port '0' is not a number from 1 to 65535"),
        ("https://db3.notify.windows.com:+443/", "port '+443' is not a number from 1 to 65535"),
        ("https://db3.notify.windows.com:/", "port '' is not a number from 1 to 65535"),
        ("https://db3.notify.windows.com:99999/", "port '99999' is not a number from 1 to 65535"),
        ("https://db3.notify.windows.com:443:1/", "is malformed: 'db3.notify.windows.com:443:1' is not host:port"),
        ("https:///x", "is malformed: no host after https://"),
        ("https://:443/", "is malformed: no host before ':'"),
        ("https://db3.notify.windows.com/\u{0}", "invalid character U+0000 at position 32"),
        ("https://db3.notify.windows.com/\r\nHost: evil", "invalid character U+000D at position 32"),
        ("https://db3.notify.windows.com/\u{7F}", "invalid character U+007F at position 32"),
        ("https://db3.notify.windows.com/ x", "invalid character U+0020 at position 32"),
        ("https://db3.notify.windows.com/é", "invalid character 'é' at position 32"),
        ("https://dB3.nOtify.windows.cOm\u{2024}evil.com/", "invalid character '\u{2024}' at position 31"),
        ("https://db3.notify.windows.com/\"x\"", "invalid character '\"' at position 32"),
        ("https://db3.notify.windows.com/{x}", "invalid character '{' at position 32"),
        ("", "WNS channel URI is empty"),
    ])
    func wnsChannelsOffTheAllowListOrOddlyEncodedAreRefused(uri: String, message: String) {
        let outcome = refusal(uri, for: .wns)
        #expect(outcome.contains(message), "\(uri): \(outcome)")
    }

    @Test func wnsChannelURIsAreRefusedPastTheirMaximumLength() {
        let base = "https://db3.notify.windows.com/?token="
        let longest = base + String(repeating: "A", count: HandlePolicy.channelURIMaximumLength - base.utf8.count)
        #expect(refusal(longest, for: .wns).hasPrefix("accepted"))
        #expect(refusal(longest + "A", for: .wns) == "WNS channel URI has length 2049; expected at most 2048 bytes")
        #expect(refusal(base + String(repeating: "\u{0}", count: 1_000_000), for: .wns).contains("has length 1000038"))
    }

    @Test func anIPAddressOrAnotherPortIsAllowedOnlyWhereAnEntryNamesItWithItsPort() throws {
        #expect(try policy.validate("https://127.0.0.1:8443/wns/1", for: .wns).value == "https://127.0.0.1:8443/wns/1")
        #expect(try policy.validate("https://[::1]:9443/wns/1", for: .wns).value == "https://[::1]:9443/wns/1")
        #expect(try policy.validate("https://LOCALHOST:7443/wns/1", for: .wns).value == "https://localhost:7443/wns/1")
        #expect(refusal("https://127.0.0.2:8443/", for: .wns).contains("host '127.0.0.2:8443' is an IP address"))
        #expect(refusal("https://localhost:8443/", for: .wns).contains("port 8443 is not allowed"))
        // A bare IP address, or a wildcard with a port, allows nothing.
        let bare = HandlePolicy(wnsChannelHosts: ["127.0.0.1", "*.notify.windows.com:8443"])
        #expect(refusal("https://127.0.0.1/", for: .wns, policy: bare).contains("is an IP address"))
        #expect(refusal("https://127.0.0.1:8443/", for: .wns, policy: bare).contains("is an IP address"))
        #expect(refusal("https://db3.notify.windows.com:8443/", for: .wns, policy: bare).contains("port 8443 is not allowed"))
        #expect(refusal("https://db3.notify.windows.com/", for: .wns, policy: bare).contains("is not on the allow-list"))
        // The default allows Microsoft's hosts, by name, on 443 only.
        #expect(
            refusal("https://wns2-bl2p.notify.windows.com/w/?token=BQYAAAB%2b", for: .wns, policy: HandlePolicy()).hasPrefix("accepted"))
        #expect(refusal("https://127.0.0.1:8443/", for: .wns, policy: HandlePolicy()).contains("is an IP address"))
    }

    @Test func channelURIsAreStoredInCanonicalFormWhichValidatesToItself() throws {
        let canonical = try policy.validate("HTTPS://DB3.Notify.Windows.COM:443/?token=AbC%2B", for: .wns).value
        #expect(canonical == "https://db3.notify.windows.com/?token=AbC%2B")
        #expect(try policy.validate(canonical, for: .wns).value == canonical)
        #expect(try policy.validate("https://db3.notify.windows.com", for: .wns).value == "https://db3.notify.windows.com")
        #expect(try policy.validate("https://db3.notify.windows.com?token=x", for: .wns).value == "https://db3.notify.windows.com?token=x")
        #expect(try policy.validate("https://1.2.3.4.notify.windows.com/", for: .wns).value == "https://1.2.3.4.notify.windows.com/")
    }

    @Test(
        arguments: [
            ("*.notify.windows.com", nil),
            ("DB3.notify.windows.com", nil),
            ("localhost:8443", nil),
            ("127.0.0.1:8443", nil),
            ("[::1]:8443", nil),
            ("127.0.0.1", "'127.0.0.1' is an IP address: allow it explicitly with its port, as 127.0.0.1:PORT"),
            ("[::1]", "'[::1]' is an IP address: allow it explicitly with its port"),
            ("::1:8443", "'::1:8443' is not a host name, host:port or *.domain pattern"),
            ("127.000.0.1:8443", "not an IP address in canonical form"),
            ("*.notify.windows.com:8443", "a *.domain pattern cannot name a port"),
            ("*.com", "would allow a whole top-level domain"),
            ("*.10.0.0.1", "is an IP address, not a domain"),
            ("*", "'*' is not a DNS name"),
            ("notify.windows.com.", "is not a DNS name: it ends with '.'"),
            ("https://db3.notify.windows.com", "looks like a URL; an entry is a host name, host:port or *.domain pattern"),
            ("user@db3.notify.windows.com", "is not a DNS name: '@' is not a letter, digit or '-'"),
            ("db3.notify.windows.com:0", "port '0' is not a number from 1 to 65535"),
            ("", "an entry is empty"),
            ("a b", "U+0020 has no place in a host name"),
        ] as [(String, String?)])
    func allowListEntriesAreCheckedWhenTheyAreConfigured(entry: String, problem: String?) {
        let found = HandlePolicy.wnsChannelHostProblem(entry)
        if let problem {
            #expect(found?.contains(problem) == true, "\(entry): \(found ?? "no problem")")
        } else {
            #expect(found == nil, "\(entry): \(found ?? "")")
        }
    }

    /// A subscription whose `p256dh` is 65 bytes starting 0x04 but no point on P-256 could never
    /// be sent to: it is refused at registration, naming the key.
    @Test func aSubscriptionsKeyMustBeAPointOnP256() throws {
        let policy = HandlePolicy(webPushHosts: ["push.example.net"])
        func subscription(_ key: [UInt8]) -> String {
            WebPushSubscription(endpoint: "https://push.example.net/push/abc", p256dh: key, auth: Array(repeating: 7, count: 16))
                .handleValue
        }
        func bytes(_ hex: String) -> [UInt8] {
            let digits = Array(hex.utf8).map { UInt8(String(UnicodeScalar($0)), radix: 16)! }
            return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
        }
        // RFC 8291's receiver key, and the curve's generator (SEC 2, §2.4.2).
        let rfc = try #require(Base64URL.decode("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"))
        let generator: [UInt8] =
            [0x04]
            + bytes(
                "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                    + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
        for key in [rfc, generator] {
            #expect(try policy.validate(subscription(key), for: .browser).value == subscription(key))
        }
        var offCurve = rfc
        offCurve[64] ^= 1
        let prime = bytes("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
        // X = p is X = 0 written out of range: refused.
        let outOfRange: [UInt8] = [0x04] + prime + Array(rfc[33...])
        let zero: [UInt8] = [0x04] + Array(repeating: 0, count: 64)
        for key in [offCurve, outOfRange, zero] {
            #expect(
                refusal(subscription(key), for: .browser, policy: policy)
                    == "Web Push subscription is malformed: 'keys.p256dh' is not a point on the P-256 curve")
        }
        // The arithmetic itself: (p − 1)² = 1 and (p − 1) + 1 = 0 (mod p).
        let minusOne = P256Curve.Field(bigEndian: bytes("ffffffff00000001000000000000000000000000fffffffffffffffffffffffe"))
        let one = P256Curve.Field(limbs: [1, 0, 0, 0])
        #expect(P256Curve.multiply(minusOne, minusOne) == one)
        #expect(P256Curve.add(minusOne, one) == .zero)
        #expect(P256Curve.subtract(.zero, one) == minusOne)
    }

    @Test func maskingHidesTheSecretPart() {
        #expect(DeviceHandle.mask(apnsToken) == "A1b2A1…A1b2")
        #expect(DeviceHandle.mask("https://db3.notify.windows.com/?token=AwYAAAB2bQ") == "https://db3.notify.windows.com/?to…B2bQ")
        #expect(DeviceHandle.mask("short") == "••••")
    }

    @Test func registrationIDsAreValidatedAndRandomOnesAreUnique() throws {
        #expect(throws: RegistrationIDError.self) { try RegistrationID("../etc") }
        #expect(throws: RegistrationIDError.self) { try RegistrationID("") }
        #expect(try RegistrationID("8494103062346893245-4416436018006052880-1").rawValue.count == 41)
        let ids = Set((0..<1000).map { _ in RegistrationID.random() })
        #expect(ids.count == 1000)
        #expect(ids.allSatisfy { $0.rawValue.count == 32 })
    }
}
