/// Which addresses a request to an operator-allowed host (a UnifiedPush endpoint, a webhook
/// receiver) may never reach unless the allow-list names them exactly: loopback, private, shared
/// (CGNAT), link-local (cloud metadata at 169.254.169.254), unique-local, multicast and the
/// reserved ranges. An address inside NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) is judged by
/// the IPv4 address it carries; local-use NAT64 (`64:ff9b:1::/48`) and Teredo (`2001::/32`),
/// which carry one in other ways, are refused whole.
///
/// An allow-list entry naming a DNS name with its port (`ntfy.lan:443`) admits the name's
/// loopback, private, CGNAT and unique-local addresses (``isAdmissibleByName(_:)``: a distributor
/// on the operator's own network); the other refused ranges (link-local with the metadata
/// address, multicast, reserved, …) only an entry naming the address itself admits
/// (`169.254.10.5:8443`), so that no name, whoever controls its DNS, can lead there.
///
/// ```swift
/// OutboundAddressRules.refusal(for: IPAddress("127.0.0.1")!)       // "loopback (127.0.0.0/8)"
/// OutboundAddressRules.refusal(for: IPAddress("203.0.113.7")!)     // nil: public
/// ```
public enum OutboundAddressRules {
    /// The refused ranges with their names, the first that holds an address naming it: IPv4
    /// first (matched on IPv4 addresses only), `::1` before the `::/96` it sits in; `byName`:
    /// admitted by an entry naming a DNS name with its port.
    public static let refused: [(range: IPAddressRange, name: String, byName: Bool)] = [
        ("0.0.0.0/8", "this network", false), ("10.0.0.0/8", "private", true),
        ("100.64.0.0/10", "shared address space (CGNAT)", true), ("127.0.0.0/8", "loopback", true),
        ("169.254.0.0/16", "link-local", false), ("172.16.0.0/12", "private", true),
        ("192.0.0.0/24", "IETF protocol assignments", false), ("192.168.0.0/16", "private", true),
        ("198.18.0.0/15", "benchmarking", false), ("224.0.0.0/4", "multicast", false), ("240.0.0.0/4", "reserved", false),
        ("::1", "loopback", true), ("::/96", "unspecified or IPv4-compatible", false), ("100::/64", "discard-only", false),
        ("64:ff9b:1::/48", "local-use NAT64", false), ("2001::/32", "Teredo", false), ("fc00::/7", "unique local", true),
        ("fe80::/10", "link-local", false), ("fec0::/10", "site-local", false), ("ff00::/8", "multicast", false),
    ].map { (try! IPAddressRange(parsing: $0.0), $0.1, $0.2) }

    /// Nil for an address a request may reach; otherwise the range that refuses it, named
    /// (`"loopback (127.0.0.0/8)"`).
    public static func refusal(for address: IPAddress) -> String? {
        if let embedded = embeddedIPv4(address) {
            return refusal(for: embedded).map { "\($0) inside \(address)" }
        }
        guard let hit = range(of: address) else { return nil }
        return "\(hit.name) (\(hit.range))"
    }

    /// Whether an entry naming a DNS name with its port admits `address` (a refused one):
    /// loopback, private, CGNAT and unique-local addresses, not link-local, multicast or reserved.
    public static func isAdmissibleByName(_ address: IPAddress) -> Bool {
        if let embedded = embeddedIPv4(address) { return isAdmissibleByName(embedded) }
        return range(of: address)?.byName ?? true
    }

    static func range(of address: IPAddress) -> (range: IPAddressRange, name: String, byName: Bool)? {
        refused.first(where: { $0.range.contains(address) })
    }

    /// The IPv4 address a NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:AABB:CCDD::`) address carries.
    static func embeddedIPv4(_ address: IPAddress) -> IPAddress? {
        let bytes = address.bytes
        if bytes.starts(with: [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) {
            return IPAddress(bytes: IPAddress.ipv4MappedPrefix + bytes[12...])
        }
        if bytes.starts(with: [0x20, 0x02]) { return IPAddress(bytes: IPAddress.ipv4MappedPrefix + bytes[2..<6]) }
        return nil
    }
}

/// Where a checked request connects: the URL's `host` and `port`, and the one `address` that was
/// checked, which the transport connects to instead of resolving the name again (libcurl's
/// `CURLOPT_CONNECT_TO`; TLS still verifies the certificate for `host`).
public struct OutboundPin: Sendable, Hashable, CustomStringConvertible {
    /// The URL's host as written in it (a DNS name, a dotted IPv4 address or a bracketed IPv6 one).
    public var host: String
    public var port: Int
    public var address: IPAddress

    public init(host: String, port: Int, address: IPAddress) {
        self.host = host
        self.port = port
        self.address = address
    }

    /// libcurl's `CURLOPT_CONNECT_TO` entry: `host:port:address:port` (IPv6 in brackets).
    public var connectTo: String {
        let target = address.isIPv4 ? address.description : "[\(address)]"
        return "\(host):\(port):\(target):\(port)"
    }

    public var description: String { "\(host):\(port) at \(address)" }
}

/// The host and port an allowed `https` URL names, and whether the allow-list names that
/// `host:port` exactly (the only way a private or loopback address is admitted: a wildcard or a
/// bare host entry never admits one).
public struct OutboundTarget: Sendable, Hashable {
    /// Lower case; an IPv6 address in brackets.
    public var host: String
    public var port: Int
    public var isExplicitlyAllowed: Bool

    /// The target of `url`, an `https` URL already checked against `allowed` (a stored handle or
    /// a configured receiver); nil when it is not an `https` URL with a host.
    public init?(url: String, allowed: [String]) {
        guard url.prefix(8).lowercased() == "https://" else { return nil }
        let authority = url.dropFirst(8).prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        guard !authority.contains("@"), let (hostText, portText) = try? HandlePolicy.splitAuthority(authority) else { return nil }
        let host = hostText.lowercased()
        var port = 443
        if let portText {
            guard let number = HandlePolicy.portNumber(portText) else { return nil }
            port = number
        }
        self.host = host
        self.port = port
        isExplicitlyAllowed = allowed.contains { entry in
            if case .hostAndPort(let name, let allowedPort)? = try? WNSHostPattern(parsing: entry) {
                return name == host && allowedPort == port
            }
            return false
        }
    }

    /// The host's address when the URL names one (`203.0.113.7`, `[::1]`): nothing to resolve.
    public var literalAddress: IPAddress? {
        host.hasPrefix("[") ? IPAddress(host.dropFirst().dropLast()) : IPAddress(host)
    }
}

extension HandlePolicy {
    /// An `https` URL that is not a device's handle (a webhook receiver's), checked by the rules
    /// every requested URL follows (printable ASCII, no user information or fragment, a DNS name
    /// or an explicitly allowed address, port 443 unless an entry names `host:port`) against
    /// `allowed`; returned in canonical form. Errors name `subject` (`"webhook URL"`).
    public static func checkOutboundURL(_ text: String, allowed: [String], subject: String) throws(HandleError) -> String {
        do {
            return try HandlePolicy().validateURL(text, platform: .browser, allowed: allowed)
        } catch {
            throw HandleError(error.code, platform: error.platform, subject: subject)
        }
    }
}
