import Pushgate
import PushgateDispatch
import Synchronization
import Testing

/// The check before a request to an operator-allowed host: resolved, every address checked, the
/// request pinned to a checked address; private addresses only through an exact `host:port`.
@Suite struct OutboundGuardTests {
    /// Names mapped to addresses, each lookup counted.
    final class MappedResolver: HostResolver {
        let names: Mutex<[String: [String]]>
        let lookups = Mutex(0)
        init(_ names: [String: [String]]) { self.names = Mutex(names) }
        func addresses(of host: String) async throws(OutboundRefusal) -> [IPAddress] {
            lookups.withLock { $0 += 1 }
            guard let texts = names.withLock({ $0[host] }) else {
                throw OutboundRefusal(.unresolved(host: host, detail: "Name or service not known"))
            }
            return texts.compactMap { IPAddress($0) }
        }
    }

    static let allowed = ["*.example.net", "sandbox.example.net:8443", "localhost:9443"]

    @Test func aPublicAddressIsPinnedIPv4First() async throws {
        let resolver = MappedResolver(["up.example.net": ["2001:db8::7", "203.0.113.7"], "v6.example.net": ["2001:db8::8"]])
        let outbound = OutboundGuard(resolver: resolver)
        let pin = try await outbound.pin(url: "https://up.example.net/up/abc", allowed: Self.allowed)
        #expect(pin == OutboundPin(host: "up.example.net", port: 443, address: IPAddress("203.0.113.7")!), "IPv4 first")
        #expect(try await outbound.pin(url: "https://v6.example.net/", allowed: Self.allowed).address == IPAddress("2001:db8::8"))
    }

    @Test func aNameWithAnyRefusedAddressIsRefusedNamingTheAddressAndItsRange() async throws {
        let resolver = MappedResolver(["rebind.example.net": ["203.0.113.7", "127.0.0.1"], "meta.example.net": ["169.254.169.254"]])
        let outbound = OutboundGuard(resolver: resolver)
        for (url, address, range) in [
            ("https://rebind.example.net/x", "127.0.0.1", "loopback"), ("https://meta.example.net/x", "169.254.169.254", "link-local"),
        ] {
            do {
                let pin = try await outbound.pin(url: url, allowed: Self.allowed)
                Issue.record("\(url) pinned to \(pin)")
            } catch {
                guard case .refusedAddress(_, _, let refused, let name) = error.reason else {
                    Issue.record("\(error)")
                    continue
                }
                #expect(refused == IPAddress(address) && name.contains(range))
                #expect(error.description.contains("only an allow-list entry naming"), "\(error)")
            }
        }
    }

    @Test func anExactHostAndPortEntryAdmitsLoopbackAndAWildcardNever() async throws {
        let resolver = MappedResolver(["sandbox.example.net": ["127.0.0.1"], "localhost": ["127.0.0.1", "::1"]])
        let outbound = OutboundGuard(resolver: resolver)
        let pin = try await outbound.pin(url: "https://sandbox.example.net:8443/up", allowed: Self.allowed)
        #expect(pin.connectTo == "sandbox.example.net:8443:127.0.0.1:8443")
        #expect(try await outbound.pin(url: "https://localhost:9443/up", allowed: Self.allowed).address == IPAddress("127.0.0.1"))
        await #expect(throws: OutboundRefusal.self) {
            try await outbound.pin(url: "https://sandbox.example.net/up", allowed: Self.allowed)
        }
    }

    /// A name's exact entry trusts the operator's network, not wherever its DNS leads: the
    /// metadata address is admitted only by an entry naming the address itself.
    @Test func noNameLeadsToALinkLocalAddressEvenWithAnExactEntry() async throws {
        let resolver = MappedResolver(["sandbox.example.net": ["169.254.169.254"]])
        let outbound = OutboundGuard(resolver: resolver)
        do {
            let pin = try await outbound.pin(url: "https://sandbox.example.net:8443/up", allowed: Self.allowed)
            Issue.record("pinned to \(pin)")
        } catch {
            guard case .notAdmittedByName(_, 8443, let address, let range) = error.reason else {
                Issue.record("\(error)")
                return
            }
            #expect(address == IPAddress("169.254.169.254") && range.contains("link-local"))
            #expect(error.description.contains("which no name admits"), "\(error)")
        }
        resolver.names.withLock { $0["sandbox.example.net"] = ["10.0.0.5"] }
        #expect(
            try await OutboundGuard(resolver: resolver).pin(url: "https://sandbox.example.net:8443/up", allowed: Self.allowed).address
                == IPAddress("10.0.0.5"))
        let literal = try await outbound.pin(url: "https://169.254.10.5:8443/x", allowed: ["169.254.10.5:8443"])
        #expect(literal.address == IPAddress("169.254.10.5"))
    }

    @Test func answersAreKeptForTheirTimeThenAskedAgain() async throws {
        let resolver = MappedResolver(["up.example.net": ["203.0.113.7"]])
        let clock = ManualClock(secondsSinceEpoch: 1_800_000_000)
        let outbound = OutboundGuard(resolver: resolver, cacheSeconds: 30, clock: clock)
        _ = try await outbound.pin(url: "https://up.example.net/a", allowed: Self.allowed)
        _ = try await outbound.pin(url: "https://up.example.net/b", allowed: Self.allowed)
        #expect(resolver.lookups.withLock { $0 } == 1)
        // The name now points at loopback (a rebinding): refused once the kept answer expires.
        resolver.names.withLock { $0["up.example.net"] = ["127.0.0.1"] }
        clock.advance(seconds: 31)
        await #expect(throws: OutboundRefusal.self) { try await outbound.pin(url: "https://up.example.net/a", allowed: Self.allowed) }
        #expect(resolver.lookups.withLock { $0 } == 2)
    }

    @Test func theSystemResolverReadsTheHostsFileAndNamesWhatDoesNotResolve() async throws {
        let addresses = try await SystemHostResolver().addresses(of: "localhost")
        #expect(addresses.contains(IPAddress("127.0.0.1")!) || addresses.contains(IPAddress("::1")!), "\(addresses)")
        do {
            let found = try await SystemHostResolver().addresses(of: "no-such-host.invalid")
            Issue.record("resolved: \(found)")
        } catch {
            #expect(error.description.hasPrefix("host 'no-such-host.invalid' does not resolve"), "\(error)")
        }
        // Through the guard, localhost off an exact entry is refused as loopback.
        await #expect(throws: OutboundRefusal.self) {
            try await OutboundGuard().pin(url: "https://localhost/up", allowed: ["localhost"])
        }
    }
}
