import Crypto
import Pushgate
import PushgateDispatch
import Testing

/// RFC 8291's encryption and RFC 8292's tokens, decision by decision.
@Suite struct WebPushCryptoTests {
    /// RFC 8291 section 5 (its example, byte for byte; Python's http_ece gives the same body).
    static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    @Test func theRFCsExampleEncryptsByteForByte() throws {
        let subscription = WebPushSubscription(
            endpoint: "https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV",
            p256dh: try #require(Base64URL.decode(Self.receiverPublic)), auth: try #require(Base64URL.decode(Self.auth)))
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: try #require(Base64URL.decode(Self.senderPrivate)))
        let body = try WebPushEncryption.encrypt(
            Self.plaintext, for: subscription, sender: sender, salt: try #require(Base64URL.decode(Self.salt)))
        #expect(Base64URL.encode(body) == Self.body)
    }

    @Test func everyMessageHasItsOwnKeyAndSaltAndTheLimitIsTheRecord() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let subscription = WebPushSubscription(
            endpoint: "https://push.example.net/x", p256dh: Array(receiver.publicKey.x963Representation),
            auth: Array(repeating: 1, count: 16))
        let first = try WebPushEncryption.encrypt(Self.plaintext, for: subscription)
        let second = try WebPushEncryption.encrypt(Self.plaintext, for: subscription)
        #expect(first.prefix(16) != second.prefix(16), "the salt")
        #expect(first[21..<86] != second[21..<86], "the sender's key")
        #expect(first.count == Self.plaintext.count + WebPushLimits.encryptionOverheadBytes)
        // The largest payload fills the services' 4,096 bytes exactly; one byte more is refused.
        let largest = try WebPushEncryption.encrypt(Array(repeating: 0x61, count: WebPushLimits.maximumPayloadBytes), for: subscription)
        #expect(largest.count == 4096)
        #expect(throws: WebPushEncryption.Failure.self) {
            try WebPushEncryption.encrypt(Array(repeating: 0x61, count: WebPushLimits.maximumPayloadBytes + 1), for: subscription)
        }
    }

    /// Registration's P-256 check (the domain's own arithmetic) accepts exactly the keys
    /// swift-crypto accepts: fresh keys, the same with one bit flipped, and random bytes after 0x04.
    @Test func registrationAcceptsExactlyTheKeysSwiftCryptoAccepts() throws {
        let policy = HandlePolicy(webPushHosts: ["push.example.net"])
        func registers(_ key: [UInt8]) -> Bool {
            let handle = WebPushSubscription(endpoint: "https://push.example.net/x", p256dh: key, auth: Array(repeating: 1, count: 16))
            return (try? policy.validate(handle.handleValue, for: .browser)) != nil
        }
        var generator = SystemRandomNumberGenerator()
        var accepted = 0
        for _ in 0..<300 {
            let key = Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            var flipped = key
            let bit = Int.random(in: 8..<(65 * 8), using: &generator)
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            let random = [0x04] + (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for candidate in [key, flipped, random] {
                let swiftCrypto = (try? P256.KeyAgreement.PublicKey(x963Representation: candidate)) != nil
                #expect(registers(candidate) == swiftCrypto, "\(Base64URL.encode(candidate))")
                if swiftCrypto { accepted += 1 }
            }
        }
        #expect(accepted >= 300, "every fresh key")
    }

    @Test func vapidTokensAreCachedPerOriginAndRenewedBeforeTheyExpire() async throws {
        let clock = ManualClock(secondsSinceEpoch: 1_800_000_000)
        let pair = VAPIDSigner.generateKeyPair()
        let signer = try await VAPIDSigner(
            subject: "mailto:a@example.com", publicKey: pair.publicKey, privateKey: pair.privateKey, clock: clock)
        let mozilla = try await signer.token(audience: "https://updates.push.services.mozilla.com")
        #expect(try await signer.token(audience: "https://updates.push.services.mozilla.com") == mozilla)
        let apple = try await signer.token(audience: "https://web.push.apple.com")
        #expect(apple != mozilla)
        #expect(await signer.signedCount == 2)
        // The claims: aud the origin, exp 12 h ahead, sub the contact; ES256 over them.
        let parts = mozilla.split(separator: ".").map(String.init)
        let claims = try JSONParser.parse(try #require(Base64URL.decode(parts[1])))
        #expect(claims["aud"]?.stringValue == "https://updates.push.services.mozilla.com")
        #expect(claims["exp"]?.kind == .number("1800043200"))
        #expect(claims["sub"]?.stringValue == "mailto:a@example.com")
        #expect(try JSONParser.parse(try #require(Base64URL.decode(parts[0])))["alg"]?.stringValue == "ES256")
        let key = try P256.Signing.PublicKey(x963Representation: try #require(Base64URL.decode(pair.publicKey)))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))

        // A second short of eleven hours on it is still used; at eleven hours (an hour before it
        // expires) a new one is signed.
        clock.advance(seconds: 11 * 3600 - 1)
        #expect(try await signer.token(audience: "https://updates.push.services.mozilla.com") == mozilla)
        clock.advance(seconds: 1)
        #expect(try await signer.token(audience: "https://updates.push.services.mozilla.com") != mozilla)
        // A token the service refused is replaced once: a second refusal of the old one gets the new.
        let current = try await signer.token(audience: "https://web.push.apple.com")
        let refreshed = try await signer.refresh(audience: "https://web.push.apple.com", after: current)
        #expect(refreshed != current)
        #expect(try await signer.refresh(audience: "https://web.push.apple.com", after: current) == refreshed)
    }

    @Test func aPrivateKeyThatIsNotThePublicKeysPairIsRefused() async throws {
        let one = VAPIDSigner.generateKeyPair()
        let other = VAPIDSigner.generateKeyPair()
        await #expect(throws: VAPIDSigner.Failure.self) {
            _ = try await VAPIDSigner(subject: "mailto:a@b.c", publicKey: one.publicKey, privateKey: other.privateKey, clock: SystemClock())
        }
        await #expect(throws: VAPIDSigner.Failure.self) {
            _ = try await VAPIDSigner(subject: "mailto:a@b.c", publicKey: one.publicKey, privateKey: "not a key", clock: SystemClock())
        }
    }
}
