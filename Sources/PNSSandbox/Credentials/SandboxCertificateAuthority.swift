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

    init(validFrom now: Date = Date()) throws {
        let caKey = P256.Signing.PrivateKey()
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

        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: now.addingTimeInterval(825 * 86400),
            issuer: caName,
            subject: try DistinguishedName {
                OrganizationName("Pushgate Sandbox")
                CommonName("localhost")
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
        caCertificatePEM = try ca.serializeAsPEM().pemString
        serverCertificatePEM = try server.serializeAsPEM().pemString
        serverPrivateKeyPEM = serverKey.pemRepresentation
    }
}
