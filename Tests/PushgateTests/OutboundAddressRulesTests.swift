import Pushgate
import Testing

/// Which addresses an operator-allowed host may not reach, and which allow-list entries admit
/// one anyway.
@Suite struct OutboundAddressRulesTests {
    @Test(arguments: [
        ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"),
        ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"), ("100.64.0.1", "CGNAT"),
        ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("fd00::5", "unique local"), ("fc00::1", "unique local"),
        ("224.0.0.1", "multicast"), ("ff02::1", "multicast"), ("0.0.0.0", "this network"), ("255.255.255.255", "reserved"),
        ("::", "unspecified"), ("::ffff:127.0.0.1", "loopback"), ("64:ff9b::7f00:1", "loopback"), ("2002:a00:1::", "private"),
        ("198.18.0.1", "benchmarking"), ("64:ff9b:1::7f00:1", "local-use NAT64"), ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo"),
    ])
    func refusedAddressesAreNamedByTheirRange(address: String, range: String) throws {
        let parsed = try #require(IPAddress(address))
        let refusal = try #require(OutboundAddressRules.refusal(for: parsed))
        #expect(refusal.contains(range), "\(address): \(refusal)")
    }

    @Test(arguments: ["203.0.113.7", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2001:db8::1", "2606:4700::1111", "64:ff9b::808:808"])
    func publicAddressesPass(address: String) throws {
        let parsed = try #require(IPAddress(address))
        #expect(OutboundAddressRules.refusal(for: parsed) == nil)
    }

    /// A name's entry with its port admits the operator's own network (loopback, private, CGNAT,
    /// unique-local), never link-local (the metadata address), multicast or reserved addresses.
    @Test func aNamesExactEntryAdmitsOnlyTheOperatorsOwnNetworks() throws {
        for (address, admitted) in [
            ("127.0.0.1", true), ("10.1.2.3", true), ("100.64.0.1", true), ("fd00::5", true), ("::1", true),
            ("169.254.169.254", false), ("fe80::1", false), ("224.0.0.1", false), ("0.0.0.0", false), ("64:ff9b::a9fe:a9fe", false),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", false),
        ] {
            let parsed = try #require(IPAddress(address))
            #expect(OutboundAddressRules.isAdmissibleByName(parsed) == admitted, "\(address)")
        }
    }

    @Test func onlyAnEntryNamingHostAndPortExactlyAdmitsAPrivateAddress() throws {
        let allowed = ["*.example.net", "push.example.org", "localhost:8443", "127.0.0.1:9000", "[::1]:9001"]
        func explicit(_ url: String) throws -> Bool { try #require(OutboundTarget(url: url, allowed: allowed)).isExplicitlyAllowed }
        #expect(try explicit("https://localhost:8443/up/abc"))
        #expect(try !explicit("https://localhost:8444/up/abc"))
        #expect(try explicit("https://127.0.0.1:9000/x"))
        #expect(try explicit("https://[::1]:9001/x"))
        #expect(try !explicit("https://a.example.net/x"), "a wildcard never admits a private address")
        #expect(try !explicit("https://push.example.org/x"), "a bare host admits port 443 but no private address")
        let target = try #require(OutboundTarget(url: "https://Push.Example.org/x?y", allowed: allowed))
        #expect(target.host == "push.example.org" && target.port == 443 && target.literalAddress == nil)
        #expect(OutboundTarget(url: "https://[::1]:9001/x", allowed: [])?.literalAddress == IPAddress("::1"))
        #expect(OutboundTarget(url: "http://localhost:8443/", allowed: allowed) == nil)
        #expect(OutboundTarget(url: "https://user@localhost:8443/", allowed: allowed) == nil)
    }

    @Test func aPinConnectsTheURLsHostAndPortToTheCheckedAddress() throws {
        let v4 = OutboundPin(host: "up.example.net", port: 443, address: try #require(IPAddress("203.0.113.7")))
        #expect(v4.connectTo == "up.example.net:443:203.0.113.7:443")
        let v6 = OutboundPin(host: "up.example.net", port: 8443, address: try #require(IPAddress("2001:db8::1")))
        #expect(v6.connectTo == "up.example.net:8443:[2001:db8::1]:8443")
    }

    @Test func aURLThatIsNoHandleIsCheckedByTheSameRulesAndNamedAsItsSubject() throws {
        let allowed = ["hooks.example.com", "localhost:9443"]
        #expect(
            try HandlePolicy.checkOutboundURL("https://HOOKS.example.com:443/in", allowed: allowed, subject: "webhook URL")
                == "https://hooks.example.com/in")
        #expect(
            try HandlePolicy.checkOutboundURL("https://localhost:9443/in", allowed: allowed, subject: "webhook URL")
                == "https://localhost:9443/in")
        for (url, words) in [
            ("http://hooks.example.com/in", "webhook URL must start with https://"),
            ("https://evil.example.com/in", "webhook URL host 'evil.example.com' is not on the allow-list"),
            ("https://hooks.example.com:8443/in", "webhook URL port 8443 is not allowed"),
            ("https://a@hooks.example.com/in", "webhook URL must not contain user information"),
        ] {
            #expect(throws: HandleError.self) { try HandlePolicy.checkOutboundURL(url, allowed: allowed, subject: "webhook URL") }
            do {
                _ = try HandlePolicy.checkOutboundURL(url, allowed: allowed, subject: "webhook URL")
            } catch {
                #expect(error.description.hasPrefix(words), "\(error)")
            }
        }
    }
}
