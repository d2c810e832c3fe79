/// Identifiers that sort by the time they were made: UUID version 7 (RFC 9562, section 5.7),
/// lowercase with hyphens, as `UUID().uuidString.lowercased()` writes a version 4.
///
/// The first 48 bits are the Unix time in milliseconds, the rest (74 bits) random. Stored as a
/// key, successive ids land at the end of their B-tree instead of on a random leaf: a store's
/// commit of several sends writes the few pages at the end of each index, not one page per send
/// and index (the everyday send's notification, its page and its counts are all keyed by it).
/// The ids say when they were made, to the millisecond, which a notification's record says anyway.
public enum TimeOrderedID {
    /// A new id made at `time`.
    public static func make(at time: Timestamp) -> String {
        var generator = SystemRandomNumberGenerator()
        return make(at: time, using: &generator)
    }

    /// A new id made at `time`, its random part from `generator`.
    public static func make(at time: Timestamp, using generator: inout some RandomNumberGenerator) -> String {
        let milliseconds = UInt64(max(0, min(time.secondsSinceEpoch * 1000, Double(1 << 48 - 1))))
        var high = (milliseconds << 16) | 0x7000 | (generator.next() & 0x0FFF)
        let low = (generator.next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[7 - index] = UInt8(truncatingIfNeeded: high)
            high >>= 8
        }
        var rest = low
        for index in 0..<8 {
            bytes[15 - index] = UInt8(truncatingIfNeeded: rest)
            rest >>= 8
        }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
