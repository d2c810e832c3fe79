/// A fresh certificate authority and the server certificate it issued for `localhost`,
/// `127.0.0.1` and `::1` (the sandbox's own kind): for the test kit's other servers that speak
/// TLS on loopback (a webhook receiver). A client trusts `caCertificatePEM` through a CA file;
/// nothing is ever trusted system-wide.
public struct LoopbackTLSIdentity: Sendable {
    public let caCertificatePEM: String
    /// The server's certificate chain (leaf), PEM.
    public let certificatePEM: String
    /// The server's private key, PEM (PKCS#8).
    public let privateKeyPEM: String

    public init() throws {
        let authority = try SandboxCertificateAuthority()
        caCertificatePEM = authority.caCertificatePEM
        certificatePEM = authority.serverCertificatePEM
        privateKeyPEM = authority.serverPrivateKeyPEM
    }
}
