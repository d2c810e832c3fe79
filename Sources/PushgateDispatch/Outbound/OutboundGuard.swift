import Dispatch
import Pushgate
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Why a request to an operator-allowed host was not made: the URL, the name's resolution, or
/// an address in a refused range (``OutboundAddressRules``).
public struct OutboundRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// Not an `https` URL with a host and a port.
        case notHTTPS(String)
        /// The name did not resolve (the resolver's words).
        case unresolved(host: String, detail: String)
        /// The name resolved to an address in a refused range, and no entry names `host:port`.
        case refusedAddress(host: String, port: Int, address: IPAddress, range: String)
        /// The name resolved to an address no name admits (link-local, multicast, reserved), even
        /// one an entry names with its port: only an entry naming the address itself does.
        case notAdmittedByName(host: String, port: Int, address: IPAddress, range: String)
    }

    public let reason: Reason

    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .notHTTPS(let url):
            "'\(url.prefix(80))' is not an https URL with a host"
        case .unresolved(let host, let detail):
            "host '\(host)' does not resolve: \(detail)"
        case .refusedAddress(let host, let port, let address, let range):
            "host '\(host)' resolves to \(address), a \(range) address; only an allow-list entry naming "
                + "'\(host):\(port)' exactly admits it"
        case .notAdmittedByName(let host, let port, let address, let range):
            "host '\(host)' resolves to \(address), a \(range) address, which no name admits; only an allow-list "
                + "entry naming the address itself with port \(port) does"
        }
    }
}

/// Turns a host name into addresses. ``SystemHostResolver`` asks the system (`getaddrinfo`);
/// tests map names to any address.
public protocol HostResolver: Sendable {
    func addresses(of host: String) async throws(OutboundRefusal) -> [IPAddress]
}

/// The system's resolver (`getaddrinfo`: `/etc/hosts`, then DNS), called on a thread of its own
/// so that a slow lookup holds no task of the cooperative pool.
public struct SystemHostResolver: HostResolver {
    public init() {}

    public func addresses(of host: String) async throws(OutboundRefusal) -> [IPAddress] {
        let result: Result<[IPAddress], OutboundRefusal> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: Self.lookUp(host)) }
        }
        return try result.get()
    }

    static func lookUp(_ host: String) -> Result<[IPAddress], OutboundRefusal> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, nil, &hints, &list)
        guard code == 0, let first = list else {
            return .failure(OutboundRefusal(.unresolved(host: host, detail: String(cString: gai_strerror(code)))))
        }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let socketAddress = current.pointee.ai_addr {
                switch current.pointee.ai_family {
                case AF_INET:
                    let bytes = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                    }
                    if let address = IPAddress(bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + bytes) { addresses.append(address) }
                case AF_INET6:
                    let bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                    }
                    if let address = IPAddress(bytes: bytes) { addresses.append(address) }
                default:
                    break
                }
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { return .failure(OutboundRefusal(.unresolved(host: host, detail: "no IPv4 or IPv6 address"))) }
        var seen = Set<IPAddress>()
        return .success(addresses.filter { seen.insert($0).inserted })
    }
}

/// The check every request to an operator-allowed host passes just before it is made: its host
/// resolved (answers kept `cacheSeconds`), every address checked against
/// ``OutboundAddressRules`` (a private or loopback address only where the allow-list names that
/// `host:port` exactly), and the request pinned to the checked address (``OutboundPin``), so a
/// name that resolves elsewhere a moment later (DNS rebinding) is never connected to.
///
/// ```swift
/// let pin = try await guard.pin(url: endpoint, allowed: handles.unifiedPushHosts)
/// var request = PushHTTPRequest(url: endpoint, headers: headers, body: body)
/// request.pin = pin
/// ```
public final class OutboundGuard: Sendable {
    private let resolver: any HostResolver
    private let cacheSeconds: Int
    private let clock: any PushgateClock
    private let cache = Mutex<[String: (addresses: [IPAddress], until: Timestamp)]>([:])
    /// Names kept at most: past it the cache starts over (memory stays bounded whatever hosts
    /// stored handles name).
    static let maximumCachedHosts = 10_000

    public init(resolver: any HostResolver = SystemHostResolver(), cacheSeconds: Int = 30, clock: any PushgateClock = SystemClock()) {
        self.resolver = resolver
        self.cacheSeconds = cacheSeconds
        self.clock = clock
    }

    /// The pin for `url`, an `https` URL already checked against `allowed` (``HandlePolicy``'s
    /// URL rules); thrown when its host does not resolve or resolves to a refused address.
    public func pin(url: String, allowed: [String]) async throws(OutboundRefusal) -> OutboundPin {
        guard let target = OutboundTarget(url: url, allowed: allowed) else { throw OutboundRefusal(.notHTTPS(url)) }
        return try await pin(target)
    }

    /// The pin for `target`: its literal address, or once every address the name has is
    /// admitted, its first IPv4 address (its first address when it has none).
    public func pin(_ target: OutboundTarget) async throws(OutboundRefusal) -> OutboundPin {
        let addresses: [IPAddress]
        if let literal = target.literalAddress {
            addresses = [literal]
        } else {
            addresses = try await resolve(target.host)
        }
        // Every address, not only the one used: a name with one public and one private address is
        // someone's trick. An exact entry admits what it names: its address (a literal), or a
        // name's loopback and private addresses, never link-local, multicast or reserved ones.
        if !(target.isExplicitlyAllowed && target.literalAddress != nil) {
            for address in addresses {
                guard let range = OutboundAddressRules.refusal(for: address) else { continue }
                if !target.isExplicitlyAllowed {
                    throw OutboundRefusal(.refusedAddress(host: target.host, port: target.port, address: address, range: range))
                }
                if !OutboundAddressRules.isAdmissibleByName(address) {
                    throw OutboundRefusal(.notAdmittedByName(host: target.host, port: target.port, address: address, range: range))
                }
            }
        }
        // One address only (the pin is one connection target): the first IPv4 one, which every
        // host reaches, where the name has one (`localhost` is 127.0.0.1 and ::1, in an order
        // that depends on the machine's address configuration).
        return OutboundPin(host: target.host, port: target.port, address: addresses.first(where: \.isIPv4) ?? addresses[0])
    }

    private func resolve(_ host: String) async throws(OutboundRefusal) -> [IPAddress] {
        let now = clock.now
        if let cached = cache.withLock({ $0[host] }), now < cached.until { return cached.addresses }
        let addresses = try await resolver.addresses(of: host)
        guard !addresses.isEmpty else { throw OutboundRefusal(.unresolved(host: host, detail: "no address")) }
        let until = now.advanced(by: .seconds(cacheSeconds))
        cache.withLock { cache in
            if cache.count >= Self.maximumCachedHosts { cache.removeAll(keepingCapacity: true) }
            cache[host] = (addresses, until)
        }
        return addresses
    }
}
