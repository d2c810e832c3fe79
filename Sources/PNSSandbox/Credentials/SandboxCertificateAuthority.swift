import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority made fresh for each sandbox, and the server certificate it issues for
/// `localhost`, `127.0.0.1` and `::1`. The CA certificate is written to a file a gateway trusts
/// (curl's `CAINFO`); nothing here is ever trusted system-wide.
struct SandboxCertificateAuthority: Sendable {
    /// The CA certificate, PEM.
    let caCertificatePEM: String
    /// The server certificate chain (leaf), PEM.
    let serverCertificatePEM: String
    /// The server's private key, PEM (PKCS#8).
    let serverPrivateKeyPEM: String
    /// A certificate and key for the gateway's HTTPS listener (`listener.tls`), from the same CA,
    /// so that a client trusting the sandbox CA reaches the gateway's hub API too.
    let gatewayCertificatePEM: String
    let gatewayPrivateKeyPEM: String
    /// The CA certificate and key, to issue and check APNs client certificates.
    let caCertificate: Certificate
    private let caKey: P256.Signing.PrivateKey

    init(validFrom now: Date = Date()) throws {
        let caKey = P256.Signing.PrivateKey()
        self.caKey = caKey
        let caName = try DistinguishedName {
            OrganizationName("Pushgate Sandbox")
            CommonName("Pushgate Sandbox CA")
        }
        let notBefore = now.addingTimeInterval(-3600)
        let ca = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: now.addingTimeInterval(3650 * 86400),
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(caKey.publicKey))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )

        let server = try Self.issueServer(commonName: "localhost", caName: caName, caKey: caKey, now: now)
        let gateway = try Self.issueServer(commonName: "Pushgate gateway", caName: caName, caKey: caKey, now: now)
        caCertificate = ca
        caCertificatePEM = try ca.serializeAsPEM().pemString
        (serverCertificatePEM, serverPrivateKeyPEM) = server
        (gatewayCertificatePEM, gatewayPrivateKeyPEM) = gateway
    }

    /// A TLS server certificate (PEM) for `localhost`, `127.0.0.1` and `::1`, and its key (PEM,
    /// PKCS#8), signed by the CA.
    private static func issueServer(
        commonName: String, caName: DistinguishedName, caKey: P256.Signing.PrivateKey, now: Date
    ) throws -> (certificate: String, key: String) {
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(825 * 86400),
            issuer: caName,
            subject: try DistinguishedName {
                OrganizationName("Pushgate Sandbox")
                CommonName(commonName)
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                    .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
                ])
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        return (try certificate.serializeAsPEM().pemString, key.pemRepresentation)
    }

    /// An APNs client certificate for `bundleID`, as Apple issues a universal "Apple Push
    /// Services" certificate: the bundle id as the subject's UID (the default topic), the
    /// environment marker extension, and the topics extension listing the bundle id with its
    /// VoIP and complication topics. Returns the certificate and its key, PEM, in one string (the
    /// form a `.p12` converted with openssl takes, and what curl and aioapns read).
    func issueAPNSClientCertificate(
        bundleID: String, teamID: String, environment: APNSCertificateEnvironment, validFrom now: Date = Date(),
        lifetime: TimeInterval = 365 * 86400
    ) throws -> String {
        let key = P256.Signing.PrivateKey()
        let prefix = environment == .development ? "Apple Development IOS Push Services" : "Apple Push Services"
        let subject = DistinguishedName([
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: APNSCertificateOID.userID, utf8String: bundleID)),
            RelativeDistinguishedName(
                RelativeDistinguishedName.Attribute(type: .RDNAttributeType.commonName, utf8String: "\(prefix): \(bundleID)")),
            RelativeDistinguishedName(
                RelativeDistinguishedName.Attribute(type: .RDNAttributeType.organizationalUnitName, utf8String: teamID)),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.countryName, utf8String: "US")),
        ])
        var topics = DER.Serializer()
        try topics.appendConstructedNode(identifier: .sequence) { coder in
            for (topic, kind) in [(bundleID, "app"), (bundleID + ".voip", "voip"), (bundleID + ".complication", "complication")] {
                try coder.serialize(ASN1UTF8String(topic))
                try coder.appendConstructedNode(identifier: .sequence) { try $0.serialize(ASN1UTF8String(kind)) }
            }
        }
        let marker = environment == .development ? APNSCertificateOID.development : APNSCertificateOID.production
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(lifetime),
            issuer: caCertificate.subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
                Certificate.Extension(oid: marker, critical: false, value: [0x05, 0x00])
                Certificate.Extension(oid: APNSCertificateOID.topics, critical: false, value: topics.serializedBytes[...])
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        return try certificate.serializeAsPEM().pemString + "\n" + key.pemRepresentation + "\n"
    }

    /// What an APNs client certificate presented on a connection allows, or why it is refused.
    func checkAPNSClientCertificate(_ der: [UInt8], now: Date = Date()) -> APNSClientCertificateCheck {
        guard let certificate = try? Certificate(derEncoded: der), certificate.issuer == caCertificate.subject,
            caCertificate.publicKey.isValidSignature(certificate.signature, for: certificate),
            certificate.notValidBefore <= now, now <= certificate.notValidAfter
        else { return .bad }
        let extensions = certificate.extensions
        let isDevelopment = extensions[oid: APNSCertificateOID.development] != nil
        let isProduction = extensions[oid: APNSCertificateOID.production] != nil
        guard isDevelopment || isProduction else { return .bad }
        var topics: [String] = []
        for attribute in certificate.subject.flatMap({ $0 }) where attribute.type == APNSCertificateOID.userID {
            if let text = String(describing: attribute.value) as String? { topics.append(text) }
        }
        if let value = extensions[oid: APNSCertificateOID.topics]?.value, let node = try? DER.parse(value),
            case .constructed(let children) = node.content
        {
            for child in children where child.identifier == .utf8String {
                if let topic = try? ASN1UTF8String(derEncoded: child) { topics.append(String(topic)) }
            }
        }
        var unique: [String] = []
        for topic in topics where !unique.contains(topic) { unique.append(topic) }
        return .valid(topics: unique, development: isDevelopment)
    }
}

/// The environment an APNs client certificate is for.
enum APNSCertificateEnvironment: Sendable { case development, production }

/// The verdict on a presented APNs client certificate.
enum APNSClientCertificateCheck: Sendable, Equatable {
    /// Issued by the sandbox's CA and in date: its topics (the subject's UID first) and whether it
    /// is valid for the development environment (a universal certificate is valid for both).
    case valid(topics: [String], development: Bool)
    /// Not issued by the sandbox, out of date, or not a push certificate: `BadCertificate`.
    case bad
}

/// Object identifiers Apple uses in push certificates.
enum APNSCertificateOID {
    /// `UID` in the subject: the bundle id.
    static let userID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
    /// Apple Push Notification service Development (sandbox) environment.
    static let development: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 1]
    /// Apple Push Notification service Production environment.
    static let production: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 2]
    /// The topics a universal certificate covers.
    static let topics: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 6]
}
