import Foundation
import JWTKit
import Pushgate

/// A Google service account (the JSON file Google issues) and the RS256 assertions it signs for
/// the OAuth JWT-bearer grant.
public struct GoogleServiceAccount: Sendable {
    public let projectID: String
    public let clientEmail: String
    public let privateKeyID: String?
    public let tokenURI: String
    private let keys: JWTKeyCollection

    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The assertion's audience. Google's service-account guide: "always"
    /// `https://oauth2.googleapis.com/token`, whatever `token_uri` says (google-auth for Python,
    /// Java and .NET send this constant too).
    public static let audience = "https://oauth2.googleapis.com/token"

    /// Parses the service-account JSON. Errors name the missing field, never the key.
    public init(json: String) async throws(ServiceAccountError) {
        guard let root = try? JSONParser.parse(json), root.objectMembers != nil else { throw ServiceAccountError("is not a JSON object") }
        func field(_ name: String) throws(ServiceAccountError) -> String {
            guard let value = root[name]?.stringValue, !value.isEmpty else { throw ServiceAccountError("has no \"\(name)\"") }
            return value
        }
        projectID = try field("project_id")
        clientEmail = try field("client_email")
        tokenURI = try field("token_uri")
        privateKeyID = root["private_key_id"]?.stringValue
        let pem = try field("private_key")
        keys = JWTKeyCollection()
        do {
            await keys.add(
                rsa: try Insecure.RSA.PrivateKey(pem: pem), digestAlgorithm: .sha256, kid: privateKeyID.map { JWKIdentifier(string: $0) })
        } catch {
            throw ServiceAccountError("has a \"private_key\" that is not an RSA private key in PEM")
        }
    }

    /// A signed assertion valid for an hour from `now`.
    public func assertion(now: Double) async throws -> String {
        let issued = Date(timeIntervalSince1970: now.rounded(.down))
        let claims = Claims(
            iss: clientEmail, scope: Self.scope, aud: Self.audience, iat: IssuedAtClaim(value: issued),
            exp: ExpirationClaim(value: issued.addingTimeInterval(3600)))
        return try await keys.sign(claims, kid: privateKeyID.map { JWKIdentifier(string: $0) })
    }

    struct Claims: JWTPayload {
        var iss: String
        var scope: String
        var aud: String
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}

/// A service-account file is unusable.
public struct ServiceAccountError: Error, Hashable, Sendable, CustomStringConvertible {
    public let problem: String
    init(_ problem: String) { self.problem = problem }
    public var description: String { "the service account \(problem)" }
}
