import Crypto
import CryptoExtras
import Pushgate

/// Salted, slow password hashes: `pbkdf2-sha256$<iterations>$<salt, base64>$<key, base64>`
/// (``PBKDF2PasswordHash`` reads and checks the format).
///
/// New hashes use at least 210,000 iterations (OWASP's figure for PBKDF2-SHA256); verification
/// honours the iteration count stored in the hash, within
/// ``PBKDF2PasswordHash/acceptedIterations``, and compares in constant time.
public enum PasswordHash {
    public static let defaultIterations = PBKDF2PasswordHash.recommendedIterations
    static let keyLength = 32

    /// Hashes `password` with a fresh random salt; throws for iterations outside
    /// ``PBKDF2PasswordHash/acceptedIterations``.
    public static func make(password: String, iterations: Int = defaultIterations) throws -> String {
        try PBKDF2PasswordHash.check(iterations: iterations)
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        let key = try derive(password: password, salt: salt, iterations: iterations)
        return try PBKDF2PasswordHash(iterations: iterations, salt: salt, key: key).encoded
    }

    /// Whether `password` matches `encoded`. A hash the configuration would refuse never matches
    /// (and costs nothing).
    public static func verify(password: String, encoded: String) -> Bool {
        guard let hash = try? PBKDF2PasswordHash(parsing: encoded),
            let derived = try? derive(password: password, salt: hash.salt, iterations: hash.iterations, length: hash.key.count)
        else { return false }
        return constantTimeEqual(derived, hash.key)
    }

    static func derive(password: String, salt: [UInt8], iterations: Int, length: Int = keyLength) throws -> [UInt8] {
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: length, unsafeUncheckedRounds: iterations)
        return key.withUnsafeBytes { Array($0) }
    }

    /// Compares without an early exit, so timing says nothing about where the bytes differ.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
