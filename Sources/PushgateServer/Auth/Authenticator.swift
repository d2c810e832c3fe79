import Crypto
import Foundation
import Pushgate

/// Who made a request.
public struct AuthenticatedUser: Sendable, Hashable {
    public let name: String
    public let isAdmin: Bool

    public init(name: String, isAdmin: Bool) {
        self.name = name
        self.isAdmin = isAdmin
    }
}

/// Basic authentication against configured users (PBKDF2 hashes), or — only when explicitly
/// configured, for demos — the tutorials' "password equals user name" rule.
///
/// Successful verifications are remembered for a few minutes (the tutorial client sends its Basic
/// header on every call, and each PBKDF2 check costs tens of milliseconds); repeated failures for a
/// user are refused for a minute.
public actor Authenticator {
    public enum Verdict: Sendable, Equatable {
        case user(AuthenticatedUser)
        /// No or malformed `Authorization` header.
        case missing
        /// Wrong user name or password.
        case refused
        /// Too many failures for this user recently.
        case rateLimited
    }

    private let users: [String: String]
    private let admins: Set<String>
    private let demoPasswordEqualsName: Bool
    private let now: @Sendable () -> Double
    private var verified: [String: Double] = [:]
    private var failures: [String: [Double]] = [:]

    public static let cacheSeconds = 300.0
    public static let failureWindowSeconds = 60.0
    public static let maximumFailures = 10

    public init(configuration: AuthConfiguration, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        users = Dictionary(configuration.users.map { ($0.name, $0.passwordHash) }, uniquingKeysWith: { first, _ in first })
        admins = Set(configuration.admins)
        demoPasswordEqualsName = configuration.demoPasswordEqualsName
        self.now = now
    }

    /// Checks an `Authorization` header value.
    public func authenticate(_ header: String?) async -> Verdict {
        guard let header, header.count > 6, header.prefix(6).lowercased() == "basic ",
            let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let credentials = String(data: decoded, encoding: .utf8), let colon = credentials.firstIndex(of: ":")
        else { return .missing }
        let name = String(credentials[..<colon])
        let password = String(credentials[credentials.index(after: colon)...])
        guard !name.isEmpty else { return .missing }
        let time = now()
        let recent = (failures[name] ?? []).filter { time - $0 < Self.failureWindowSeconds }
        failures[name] = recent.isEmpty ? nil : recent
        if recent.count >= Self.maximumFailures { return .rateLimited }

        let user = AuthenticatedUser(name: name, isAdmin: admins.contains(name))
        let cacheKey = SHA256.hash(data: Data("\(name)\u{0}\(password)".utf8)).map { String(format: "%02x", $0) }.joined()
        if let until = verified[cacheKey], time < until { return .user(user) }

        let accepted: Bool
        if let hash = users[name] {
            accepted = await Self.verifyOffActor(password: password, hash: hash)
        } else if demoPasswordEqualsName {
            accepted = PasswordHash.constantTimeEqual(Array(name.utf8), Array(password.utf8))
        } else {
            accepted = false
        }
        if accepted {
            verified[cacheKey] = time + Self.cacheSeconds
            return .user(user)
        }
        failures[name, default: []].append(time)
        return .refused
    }

    /// PBKDF2 runs outside the actor so one slow check does not hold up other requests.
    nonisolated static func verifyOffActor(password: String, hash: String) async -> Bool {
        await Task.detached { PasswordHash.verify(password: password, encoded: hash) }.value
    }
}
