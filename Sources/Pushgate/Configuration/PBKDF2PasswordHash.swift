/// A user's password hash as configured (`auth.users[].passwordHash`) and as `pushgate users hash`
/// writes it: `pbkdf2-sha256$<iterations>$<salt>$<key>`, salt and key in base64.
///
/// Read the same way when the configuration loads or reloads and at every login, so a hash that
/// could never match, or that would hold a core for minutes (2^32−1 iterations took ten), is
/// refused where it is configured, naming what is wrong, instead of failing its user's logins.
///
/// ```swift
/// let hash = try PBKDF2PasswordHash(parsing: "pbkdf2-sha256$210000$…$…")
/// hash.iterations   // 210000
/// ```
public struct PBKDF2PasswordHash: Sendable, Hashable {
    public static let scheme = "pbkdf2-sha256"
    /// Iterations a hash may have: fewer protect nothing, more hold a core per login for seconds.
    public static let acceptedIterations = 1_000...10_000_000
    /// What new hashes use (OWASP's figure for PBKDF2-SHA256); fewer load, with a warning.
    public static let recommendedIterations = 210_000
    public static let acceptedSaltBytes = 8...1024
    /// The derived key: at most two SHA-256 blocks, each of which costs the iterations again.
    public static let acceptedKeyBytes = 16...64

    public let iterations: Int
    public let salt: [UInt8]
    public let key: [UInt8]

    /// A hash from its parts, each checked against the accepted ranges.
    public init(iterations: Int, salt: [UInt8], key: [UInt8]) throws(PasswordHashError) {
        try Self.check(iterations: iterations)
        guard Self.acceptedSaltBytes.contains(salt.count) else {
            throw PasswordHashError(.length(of: "salt", salt.count, Self.acceptedSaltBytes))
        }
        guard Self.acceptedKeyBytes.contains(key.count) else {
            throw PasswordHashError(.length(of: "key", key.count, Self.acceptedKeyBytes))
        }
        self.iterations = iterations
        self.salt = salt
        self.key = key
    }

    /// Throws unless `iterations` is within ``acceptedIterations``.
    public static func check(iterations: Int) throws(PasswordHashError) {
        guard acceptedIterations.contains(iterations) else { throw PasswordHashError(.iterations(iterations)) }
    }

    /// Reads `pbkdf2-sha256$<iterations>$<salt>$<key>`.
    public init(parsing text: String) throws(PasswordHashError) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == Self.scheme else { throw PasswordHashError(.format) }
        guard parts[1].utf8.count <= 10, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let iterations = Int(parts[1]) else {
            throw PasswordHashError(.iterationsNotANumber(String(parts[1].prefix(20))))
        }
        try Self.check(iterations: iterations)
        guard let salt = Self.base64Decoded(parts[2]) else { throw PasswordHashError(.notBase64("salt")) }
        guard let key = Self.base64Decoded(parts[3]) else { throw PasswordHashError(.notBase64("key")) }
        try self.init(iterations: iterations, salt: salt, key: key)
    }

    /// The hash as configured: `pbkdf2-sha256$<iterations>$<salt>$<key>`.
    public var encoded: String { "\(Self.scheme)$\(iterations)$\(Self.base64(salt))$\(Self.base64(key))" }

    /// Standard base64 with its padding (what `pushgate users hash` writes); nil for anything else.
    static func base64Decoded(_ text: Substring) -> [UInt8]? {
        let digits = text.utf8.prefix { $0 != UInt8(ascii: "=") }
        let padding = text.utf8.dropFirst(digits.count)
        guard !text.isEmpty, text.utf8.count % 4 == 0, padding.count <= 2, padding.allSatisfy({ $0 == UInt8(ascii: "=") }),
            digits.allSatisfy(isBase64Digit)
        else { return nil }
        return Base64URL.decode(String(text))
    }

    private static func isBase64Digit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "/"):
            true
        default: false
        }
    }

    static func base64(_ bytes: [UInt8]) -> String {
        let text = Base64URL.encode(bytes).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 }
        return String(text) + String(repeating: "=", count: (4 - text.count % 4) % 4)
    }
}

/// A password hash that cannot be used: what is wrong with it, never the hash itself.
public struct PasswordHashError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: Hashable {
        case format
        case iterationsNotANumber(String)
        case iterations(Int)
        case notBase64(String)
        case length(of: String, Int, ClosedRange<Int>)
    }

    let code: Code

    init(_ code: Code) { self.code = code }

    public var description: String {
        switch code {
        case .format:
            "expected a password hash '\(PBKDF2PasswordHash.scheme)$<iterations>$<salt>$<hash>' (never a plain password; `pushgate users hash` makes one)"
        case .iterationsNotANumber(let text):
            "the iterations, '\(text)', are not a whole number"
        case .iterations(let count):
            "\(count) iterations are out of range \(PBKDF2PasswordHash.acceptedIterations.lowerBound)…\(PBKDF2PasswordHash.acceptedIterations.upperBound) (new hashes use \(PBKDF2PasswordHash.recommendedIterations))"
        case .notBase64(let part):
            "the \(part) is not base64 (standard alphabet, with its '=' padding)"
        case .length(let part, let count, let range):
            "the \(part) is \(count) bytes; expected \(range.lowerBound) to \(range.upperBound)"
        }
    }
}
