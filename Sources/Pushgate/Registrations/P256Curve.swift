/// NIST P-256 (secp256r1) as far as a registration needs it: whether a Web Push subscription's
/// `p256dh` is a point on the curve, the check `P256.KeyAgreement.PublicKey(x963Representation:)`
/// makes at send time, made here without a dependency so that every way in (both APIs, direct
/// sends, imports) refuses the same keys through ``HandlePolicy/validate(_:for:)``.
///
/// Only public values are involved, so nothing here needs to run in constant time; the curve's
/// cofactor is 1, so every point on it (but the point at infinity, which has no uncompressed
/// form) is a valid public key.
package enum P256Curve {
    /// The field prime, p = 2^256 − 2^224 + 2^192 + 2^96 − 1 (SEC 2, §2.4.2).
    static let p = Field(bigEndian: hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff"))
    /// The curve's b in y² = x³ − 3x + b (SEC 2, §2.4.2).
    static let b = Field(bigEndian: hex("5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b"))

    /// Whether `bytes` is an uncompressed point on the curve: 65 bytes, 0x04 then X and Y (big
    /// endian), each less than p, with y² = x³ − 3x + b (mod p).
    static func isUncompressedPoint(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 65, bytes[0] == 0x04 else { return false }
        let x = Field(bigEndian: bytes[1..<33])
        let y = Field(bigEndian: bytes[33..<65])
        guard x < p, y < p else { return false }
        let cube = multiply(multiply(x, x), x)
        let threeX = add(add(x, x), x)
        return multiply(y, y) == add(subtract(cube, threeX), b)
    }

    /// A 256-bit unsigned number: four 64-bit limbs, the least significant first.
    package struct Field: Equatable, Comparable {
        var limbs: [UInt64]

        package static let zero = Field(limbs: [0, 0, 0, 0])

        package init(limbs: [UInt64]) { self.limbs = limbs }

        /// From 32 big-endian bytes.
        package init(bigEndian bytes: some Collection<UInt8>) {
            precondition(bytes.count == 32, "32 bytes")
            var limbs: [UInt64] = [0, 0, 0, 0]
            for (index, byte) in bytes.reversed().enumerated() { limbs[index / 8] |= UInt64(byte) << UInt64(8 * (index % 8)) }
            self.limbs = limbs
        }

        package static func < (lhs: Field, rhs: Field) -> Bool {
            for index in (0..<4).reversed() where lhs.limbs[index] != rhs.limbs[index] { return lhs.limbs[index] < rhs.limbs[index] }
            return false
        }

        /// Whether bit `index` (0: the least significant) is set.
        func bit(_ index: Int) -> Bool { limbs[index / 64] >> UInt64(index % 64) & 1 == 1 }

        /// `self + other` modulo 2^256, and whether it carried out.
        func adding(_ other: Field) -> (Field, carry: Bool) {
            var result = Field.zero
            var carry: UInt64 = 0
            for index in 0..<4 {
                let (partial, first) = limbs[index].addingReportingOverflow(other.limbs[index])
                let (sum, second) = partial.addingReportingOverflow(carry)
                result.limbs[index] = sum
                carry = first || second ? 1 : 0
            }
            return (result, carry == 1)
        }

        /// `self − other` modulo 2^256, and whether it borrowed.
        func subtracting(_ other: Field) -> (Field, borrow: Bool) {
            var result = Field.zero
            var borrow: UInt64 = 0
            for index in 0..<4 {
                let (partial, first) = limbs[index].subtractingReportingOverflow(other.limbs[index])
                let (difference, second) = partial.subtractingReportingOverflow(borrow)
                result.limbs[index] = difference
                borrow = first || second ? 1 : 0
            }
            return (result, borrow == 1)
        }
    }

    /// (a + b) mod p, for a and b less than p: their sum is less than 2p, so one subtraction of p
    /// (wrapping, when the sum carried past 2^256) reduces it.
    package static func add(_ a: Field, _ b: Field) -> Field {
        let (sum, carry) = a.adding(b)
        return carry || !(sum < p) ? sum.subtracting(p).0 : sum
    }

    /// (a − b) mod p, for a and b less than p.
    package static func subtract(_ a: Field, _ b: Field) -> Field {
        let (difference, borrow) = a.subtracting(b)
        return borrow ? difference.adding(p).0 : difference
    }

    /// (a × b) mod p, for a and b less than p: b's bits from the most significant, doubling and
    /// adding (a few thousand limb operations; a registration makes three of these).
    package static func multiply(_ a: Field, _ b: Field) -> Field {
        var result = Field.zero
        for index in (0..<256).reversed() {
            result = add(result, result)
            if b.bit(index) { result = add(result, a) }
        }
        return result
    }

    /// The bytes of a hex constant.
    private static func hex(_ text: StaticString) -> [UInt8] {
        let digits = text.withUTF8Buffer { Array($0) }
        func value(_ digit: UInt8) -> UInt8 { digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10 }
        return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
    }
}
