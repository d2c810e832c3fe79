import Crypto
import Pushgate

/// RFC 8291 message encryption for one subscription: a fresh P-256 key pair and salt per
/// message, ECDH with the subscription's `p256dh`, HKDF with its `auth` secret, AES-128-GCM over
/// the payload and the last-record delimiter, one record, behind the aes128gcm header
/// (RFC 8188: salt, record size, the sender's public key as key id).
public enum WebPushEncryption {
    /// The record size written in the header: the services' 4,096-byte body limit.
    public static let recordSize: UInt32 = 4096

    public enum Failure: Error, CustomStringConvertible {
        case badSubscriptionKey
        case tooLarge(Int)

        public var description: String {
            switch self {
            case .badSubscriptionKey: "the subscription's p256dh is not a P-256 public key"
            case .tooLarge(let bytes):
                "the payload is \(bytes) bytes; at most \(WebPushLimits.maximumPayloadBytes) fit in one 4,096-byte Web Push record"
            }
        }
    }

    /// A fresh P-256 key pair for one message: a random scalar from the system's CSPRNG (a value
    /// outside 1..<n, about one in 2^32, is drawn again). `P256.KeyAgreement.PrivateKey()` would
    /// also run FIPS's pair-wise consistency test (an ECDSA signature made and verified), which
    /// costs more than the ECDH itself and proves nothing about a key used once.
    static func ephemeralKey() -> P256.KeyAgreement.PrivateKey {
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: randomBytes(32)) { return key }
        }
    }

    /// `count` bytes (a multiple of 8) from the system's CSPRNG.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for _ in 0..<(count / 8) { withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) } }
        return bytes
    }

    /// The encrypted body of `payload` for `subscription`.
    public static func encrypt(_ payload: [UInt8], for subscription: WebPushSubscription) throws(Failure) -> [UInt8] {
        try encrypt(payload, for: subscription, sender: ephemeralKey(), salt: randomBytes(16))
    }

    /// The encryption with the sender's key and the salt given (RFC 8291's example checks it).
    package static func encrypt(
        _ payload: [UInt8], for subscription: WebPushSubscription, sender: P256.KeyAgreement.PrivateKey, salt: [UInt8]
    ) throws(Failure) -> [UInt8] {
        guard payload.count <= WebPushLimits.maximumPayloadBytes else { throw .tooLarge(payload.count) }
        let receiver: P256.KeyAgreement.PublicKey
        do { receiver = try P256.KeyAgreement.PublicKey(x963Representation: subscription.p256dh) } catch { throw .badSubscriptionKey }
        let senderPublic = Array(sender.publicKey.x963Representation)
        let shared: SharedSecret
        do { shared = try sender.sharedSecretFromKeyAgreement(with: receiver) } catch { throw .badSubscriptionKey }
        // IKM = HKDF(salt: auth, ikm: ECDH, info: "WebPush: info" 0x00 ua_public as_public, 32).
        let keyInfo = Array("WebPush: info".utf8) + [0] + subscription.p256dh + senderPublic
        let inputKey = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: subscription.auth, sharedInfo: keyInfo, outputByteCount: 32)
        // CEK and NONCE = HKDF(salt, IKM, "Content-Encoding: aes128gcm" 0x00 / "Content-Encoding: nonce" 0x00).
        let contentKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKey, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonceKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKey, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        let sealed: AES.GCM.SealedBox
        do {
            let nonce = try AES.GCM.Nonce(data: nonceKey.withUnsafeBytes { Array($0) })
            // The payload, then the delimiter of the last record (no further padding).
            sealed = try AES.GCM.seal(payload + [2], using: contentKey, nonce: nonce)
        } catch {
            // AES-GCM with a 16-byte key and a 12-byte nonce does not fail.
            preconditionFailure("AES-128-GCM sealing failed: \(error)")
        }
        var body: [UInt8] = []
        body.reserveCapacity(86 + payload.count + 17)
        body += salt
        body += [UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF), UInt8(recordSize & 0xFF)]
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }
}
