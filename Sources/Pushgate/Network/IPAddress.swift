#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address, held as 16 bytes: an IPv4 address as its IPv4-mapped IPv6 form
/// (`::ffff:a.b.c.d`), so that both spellings of one client are the same address.
///
/// ```swift
/// IPAddress("203.0.113.7") == IPAddress("::ffff:203.0.113.7")   // true
/// IPAddress("2001:DB8::1")?.description                          // "2001:db8::1"
/// ```
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address in network byte order: always 16 bytes.
    public let bytes: [UInt8]

    /// A dotted-quad IPv4 address (four decimal parts, nothing shorter) or an IPv6 address,
    /// without brackets, port or zone; nil for anything else.
    public init?(_ text: some StringProtocol) {
        let text = String(text)
        // INET6_ADDRSTRLEN, terminator excluded: nothing longer is an address.
        guard !text.isEmpty, text.utf8.count < 46 else { return nil }
        if text.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &address) { Array($0) }
        } else {
            var address = in_addr()
            guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
            bytes = Self.ipv4MappedPrefix + withUnsafeBytes(of: &address) { Array($0) }
        }
    }

    /// The address of 16 bytes in network byte order; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// `::ffff:0:0/96`, where IPv4 addresses live in IPv6.
    static let ipv4MappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]

    /// Whether this is an IPv4 address (written dotted, and matched by IPv4 networks).
    public var isIPv4: Bool { bytes.starts(with: Self.ipv4MappedPrefix) }

    /// Dotted quad for IPv4; RFC 5952's form for IPv6 (lower case, the longest run of zeros as `::`).
    public var description: String {
        if isIPv4 { return bytes[12...].map(String.init).joined(separator: ".") }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        var text = [CChar](repeating: 0, count: 46)
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
