import Foundation
import Pushgate

/// Who sent a request, as login throttling counts: the peer; or, when the peer is one of the
/// trusted proxies (`listener.trustedProxies`), the rightmost `X-Forwarded-For` address that is
/// not one of them — the address the outermost proxy we trust saw. What a client writes into
/// `X-Forwarded-For` itself lies left of that address, so it is never read.
///
/// An IPv6 client is named by its /64, which one host usually holds whole: a guesser cannot
/// escape its count by moving to the next address.
///
/// ```swift
/// let resolver = ClientAddressResolver(trustedProxies: [try IPAddressRange(parsing: "10.0.0.0/8")])
/// resolver.client(peer: "10.0.0.5", forwardedFor: ["198.51.100.9, 203.0.113.7, 10.0.0.2"])   // "203.0.113.7"
/// ```
public struct ClientAddressResolver: Sendable {
    public let trustedProxies: [IPAddressRange]

    public init(trustedProxies: [IPAddressRange] = []) { self.trustedProxies = trustedProxies }

    /// The client of a request from `peer` (an address as the socket gives it) carrying these
    /// `X-Forwarded-For` field values, in order.
    public func client(peer: String, forwardedFor: [String]) -> String {
        guard let peerAddress = IPAddress(peer) else { return peer }
        var client = peerAddress
        if isTrusted(peerAddress) {
            let hops = forwardedFor.flatMap { $0.split(separator: ",") }
            for hop in hops.reversed() {
                // Garbage where a trusted proxy writes: the proxy that passed it on is the client.
                guard let address = Self.address(in: hop) else { break }
                client = address
                if !isTrusted(address) { break }
            }
        }
        return Self.name(client)
    }

    func isTrusted(_ address: IPAddress) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// The address of one `X-Forwarded-For` entry: `203.0.113.7`, `2001:db8::7`, and the forms
    /// with a port some proxies write (`203.0.113.7:5150`, `[2001:db8::7]:5150`).
    static func address(in hop: Substring) -> IPAddress? {
        let text = hop.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            return IPAddress(text[text.index(after: text.startIndex)..<close])
        }
        if let address = IPAddress(text) { return address }
        // IPv4 with a port.
        guard let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon else { return nil }
        return IPAddress(text[..<colon])
    }

    /// IPv4 as itself; IPv6 as its /64.
    static func name(_ address: IPAddress) -> String {
        guard !address.isIPv4, let network = IPAddress(bytes: Array(address.bytes.prefix(8)) + Array(repeating: 0, count: 8)) else {
            return address.description
        }
        return "\(network)/64"
    }
}
