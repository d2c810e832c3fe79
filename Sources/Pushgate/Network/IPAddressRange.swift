/// One address or one network in CIDR notation: `127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`.
///
/// ```swift
/// let proxies = try IPAddressRange(parsing: "10.0.0.0/8")
/// proxies.contains(IPAddress("10.1.2.3")!)   // true
/// ```
public struct IPAddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The first address of the range.
    public let network: IPAddress
    /// The prefix length as written: 0–32 for an IPv4 network, 0–128 for IPv6.
    public let prefixLength: Int

    /// Reads `address` or `address/prefix`. A network with bits set past its prefix
    /// (`10.0.0.1/8`) is refused, naming the network meant, and so is a prefix of 0, which would
    /// take in every address.
    public init(parsing text: String) throws(IPAddressRangeError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { throw IPAddressRangeError(.notAnAddress(text)) }
        let widest = address.isIPv4 ? 32 : 128
        var length = widest
        if parts.count == 2 {
            guard parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber), let parsed = Int(parts[1]), (0...widest).contains(parsed)
            else { throw IPAddressRangeError(.badPrefix(text, widest: widest)) }
            length = parsed
        }
        guard length > 0 else { throw IPAddressRangeError(.everything(text)) }
        let masked = Self.masked(address.bytes, bits: 128 - widest + length)
        guard masked == address.bytes else {
            throw IPAddressRangeError(.hostBitsSet(text, meant: "\(IPAddress(bytes: masked)!)/\(length)"))
        }
        network = address
        prefixLength = length
    }

    /// Whether `address` is in the range (an IPv4 network holds only IPv4 addresses).
    public func contains(_ address: IPAddress) -> Bool {
        address.isIPv4 == network.isIPv4 && Self.masked(address.bytes, bits: bits) == network.bytes
    }

    /// The prefix counted on the 16-byte form (an IPv4 /8 is 104 bits of it).
    private var bits: Int { (network.isIPv4 ? 96 : 0) + prefixLength }

    /// `bytes` with every bit past the first `bits` cleared.
    static func masked(_ bytes: [UInt8], bits: Int) -> [UInt8] {
        bytes.indices.map { index in
            let kept = min(8, max(0, bits - index * 8))
            return kept == 8 ? bytes[index] : bytes[index] & ~(UInt8(0xFF) >> kept)
        }
    }

    /// The address alone when the range is one address, else `network/prefix`.
    public var description: String {
        prefixLength == (network.isIPv4 ? 32 : 128) ? network.description : "\(network)/\(prefixLength)"
    }
}

/// A text that is not an address or network: which text, and what is wrong with it.
public struct IPAddressRangeError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: Hashable {
        case notAnAddress(String)
        case badPrefix(String, widest: Int)
        case everything(String)
        case hostBitsSet(String, meant: String)
    }

    let code: Code

    init(_ code: Code) { self.code = code }

    public var description: String {
        switch code {
        case .notAnAddress(let text):
            "'\(text.prefix(60))' is not an IP address or network (examples: 10.0.0.5, 10.0.0.0/8, fd00::/8)"
        case .badPrefix(let text, let widest):
            "'\(text.prefix(60))' has a prefix length that is not a whole number from 1 to \(widest)"
        case .everything(let text):
            "'\(text.prefix(60))' takes in every address; name the proxies' own addresses or networks"
        case .hostBitsSet(let text, let meant):
            "'\(text.prefix(60))' has bits set past its prefix; did you mean \(meant)?"
        }
    }
}
