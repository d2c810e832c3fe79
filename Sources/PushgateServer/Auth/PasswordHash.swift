import Crypto
import CryptoExtras
import Foundation

/// Salted, slow password hashes: `pbkdf2-sha256$<iterations>$<salt, base64>$<key, base64>`.
///
/// New hashes use at least 210,000 iterations (OWASP's figure for PBKDF2-SHA256); verification
/// honours the iteration count stored in the hash and compares in constant time.
public enum PasswordHash {
    public static let defaultIterations = 210_000
    static let keyLength = 32

    /// Hashes `password` with a fresh random salt.
    public static func make(password: String, iterations: Int = defaultIterations) throws -> String {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        let key = try derive(password: password, salt: salt, iterations: iterations)
        return "pbkdf2-sha256$\(iterations)$\(Data(salt).base64EncodedString())$\(Data(key).base64EncodedString())"
    }

    /// Whether `password` matches `encoded`. Malformed hashes never match.
    public static func verify(password: String, encoded: String) -> Bool {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let iterations = Int(parts[1]), iterations >= 1,
            let salt = Data(base64Encoded: String(parts[2])), let expected = Data(base64Encoded: String(parts[3])), !expected.isEmpty,
            let derived = try? derive(password: password, salt: Array(salt), iterations: iterations, length: expected.count)
        else { return false }
        return constantTimeEqual(derived, Array(expected))
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
