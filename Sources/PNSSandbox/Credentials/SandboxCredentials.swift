import Crypto
import CryptoExtras
import Foundation
import Pushgate

/// The secrets a gateway needs to use the sandbox, made fresh for each sandbox: an APNs `.p8` key
/// with its key and team ids, an FCM service account, a legacy GCM server key, and WNS client
/// credentials, and a Huawei Push Kit app id and secret. The sandbox keeps the public halves to verify what the gateway sends.
public struct SandboxCredentials: Sendable {
    /// APNs provider-token key (PKCS#8 PEM, as Apple's `.p8` files).
    public let apnsPrivateKeyPEM: String
    public let apnsKeyID: String
    public let apnsTeamID: String
    /// The app's bundle id (`apns-topic`).
    public let apnsTopic: String

    /// The FCM project and its service account.
    public let fcmProjectID: String
    public let fcmClientEmail: String
    public let fcmPrivateKeyID: String
    /// The service account's RSA key (PKCS#8 PEM, as in Google's service-account JSON).
    public let fcmPrivateKeyPEM: String

    /// The legacy GCM server key (`Authorization: key=…`).
    public let gcmServerKey: String
    /// The legacy GCM sender id the sandbox's devices belong to.
    public let gcmSenderID: String

    /// WNS client credentials (package SID and secret).
    public let wnsClientID: String
    public let wnsClientSecret: String
    /// WNS through Microsoft Entra ID: the tenant, and the application's client id and secret.
    public let entraTenantID: String
    public let entraClientID: String
    public let entraClientSecret: String

    /// APNs client certificates with their keys (PEM, certificate then key), issued by the
    /// sandbox's CA: one for the development environment the sandbox is, one for production
    /// (`BadCertificateEnvironment` here).
    public let apnsClientCertificatePEM: String
    public let apnsProductionClientCertificatePEM: String

    /// The app's VAPID key pair (Web Push): the application server key (an uncompressed P-256
    /// point) and the private scalar, both base64url, as `web-push generate-vapid-keys` prints
    /// them. The sandbox's browsers subscribe with the public key and accept only tokens it
    /// verifies.
    public let vapidPublicKey: String
    public let vapidPrivateKey: String

    /// Huawei Push Kit: the AppGallery Connect app id (digits; the OAuth client id and the send
    /// path's app id) and its app secret (the OAuth client secret, 64 hex digits).
    public let hmsAppID: String
    public let hmsAppSecret: String

    let apnsPublicKeyPEM: String
    let fcmPublicKeyPEM: String

    /// Credentials with client certificates from a CA of their own (tests that need no listener).
    public init(topic: String, projectID: String) throws {
        try self.init(topic: topic, projectID: projectID, authority: try SandboxCertificateAuthority())
    }

    init(topic: String, projectID: String, authority: SandboxCertificateAuthority) throws {
        let apnsKey = P256.Signing.PrivateKey()
        apnsPrivateKeyPEM = apnsKey.pemRepresentation
        apnsPublicKeyPEM = apnsKey.publicKey.pemRepresentation
        apnsKeyID = Self.randomID(10)
        apnsTeamID = Self.randomID(10)
        apnsTopic = topic
        apnsClientCertificatePEM = try authority.issueAPNSClientCertificate(
            bundleID: topic, teamID: apnsTeamID, environment: .development)
        apnsProductionClientCertificatePEM = try authority.issueAPNSClientCertificate(
            bundleID: topic, teamID: apnsTeamID, environment: .production)

        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        fcmPrivateKeyPEM = rsa.pkcs8PEMRepresentation
        fcmPublicKeyPEM = rsa.publicKey.pemRepresentation
        fcmProjectID = projectID
        fcmClientEmail = "pushgate-sandbox@\(projectID).iam.gserviceaccount.com"
        fcmPrivateKeyID = Self.randomHex(40)

        gcmServerKey = "AAAA" + Self.randomToken(36) + ":APA91b" + Self.randomToken(120)
        gcmSenderID = String(Int.random(in: 100_000_000_000...999_999_999_999))
        wnsClientID =
            "ms-app://s-1-15-2-" + (0..<7).map { _ in String(UInt32.random(in: 1_000_000_000...UInt32.max)) }.joined(separator: "-")
        wnsClientSecret = Self.randomToken(32)
        entraTenantID = UUID().uuidString.lowercased()
        entraClientID = UUID().uuidString.lowercased()
        entraClientSecret = Self.randomToken(40)

        hmsAppID = String(Int.random(in: 100_000_000...109_999_999))
        hmsAppSecret = Self.randomHex(64)

        let vapid = P256.Signing.PrivateKey()
        vapidPublicKey = Base64URL.encode(vapid.publicKey.x963Representation)
        vapidPrivateKey = Base64URL.encode(vapid.rawRepresentation)
    }

    /// The service-account JSON Google issues, with `token_uri` pointing at the sandbox.
    public func serviceAccountJSON(tokenURI: String) -> String {
        let object: [String: String] = [
            "type": "service_account",
            "project_id": fcmProjectID,
            "private_key_id": fcmPrivateKeyID,
            "private_key": fcmPrivateKeyPEM,
            "client_email": fcmClientEmail,
            "client_id": String(UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999)),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": tokenURI,
        ]
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    static func randomID(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }

    static func randomHex(_ count: Int) -> String {
        let alphabet = Array("0123456789abcdef")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }

    static func randomToken(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }
}
