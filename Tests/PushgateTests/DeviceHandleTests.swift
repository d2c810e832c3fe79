import Testing

@testable import Pushgate

@Suite struct DeviceHandleTests {
    let policy = HandlePolicy(wnsChannelHosts: ["*.notify.windows.com", "127.0.0.1:8443"])
    let apnsToken = String(repeating: "A1b2", count: 16)

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
        #expect(throws: HandleError.self) { try policy.validate("https://db3.notify.windows.com@evil.com/", for: .wns) }
        #expect(throws: HandleError.self) { try policy.validate("https://db3.notify.windows.com /x", for: .wns) }
        #expect(throws: HandleError.self) { try policy.validate("https://127.0.0.1:port/", for: .wns) }
    }

    /// Wave 1 accepted these, and with `127.0.0.1` allow-listed opened TLS to any port.
    @Test(arguments: [
        ("https://db3.notify.windows.com:8443/?token=x", "'db3.notify.windows.com:8443' is not on the allow-list"),
        ("https://127.0.0.1:22/", "'127.0.0.1:22' is not on the allow-list"),
        ("https://127.0.0.1/", "'127.0.0.1' is not on the allow-list"),
        ("https://169.254.169.254/latest/meta-data", "'169.254.169.254' is not on the allow-list"),
        ("https://[::1]:8443/", "is not on the allow-list"),
        ("https://1.2.3.4.notify.windows.com/", "no error"),
        ("https://db3.notify.windows.com./", "not a plain DNS name"),
        ("https://db3%2enotify.windows.com/", "not a plain DNS name"),
        ("https://user:pw@db3.notify.windows.com/", "user information"),
        ("https://db3.notify.windows.com/#frag", "fragment"),
        ("https://db3.notify.windows.com:0/", "not a number from 1 to 65535"),
        ("https://db3.notify.windows.com:443:1/", "is not host[:port]"),
    ])
    func wnsChannelsOffTheAllowListOrOddlyEncodedAreRefused(uri: String, message: String) {
        let outcome: String
        do {
            _ = try policy.validate(uri, for: .wns)
            outcome = "no error"
        } catch {
            outcome = error.description
        }
        #expect(outcome.contains(message), "\(uri): \(outcome)")
    }

    @Test func channelURIsAreStoredInCanonicalForm() throws {
        #expect(
            try policy.validate("HTTPS://DB3.Notify.Windows.COM:443/?token=AbC", for: .wns).value
                == "https://db3.notify.windows.com/?token=AbC")
        #expect(try policy.validate("https://127.0.0.1:8443/wns/1", for: .wns).value == "https://127.0.0.1:8443/wns/1")
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
