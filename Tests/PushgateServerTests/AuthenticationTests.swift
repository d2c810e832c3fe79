import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Pushgate
import PushgateConfig
import PushgateGateway
import PushgateServer
import PushgateTesting
import Synchronization
import Testing

@Suite struct AuthenticationTests {
    func basic(_ user: String, _ password: String) -> String { "Basic " + Data("\(user):\(password)".utf8).base64EncodedString() }

    @Test func passwordHashesAreSaltedAndVerified() throws {
        let first = try PasswordHash.make(password: "s3cret", iterations: 1000)
        let second = try PasswordHash.make(password: "s3cret", iterations: 1000)
        #expect(first != second)
        #expect(first.hasPrefix("pbkdf2-sha256$1000$"))
        #expect(!first.contains("s3cret"))
        #expect(PasswordHash.verify(password: "s3cret", encoded: first))
        #expect(!PasswordHash.verify(password: "s3cret!", encoded: first))
        #expect(!PasswordHash.verify(password: "s3cret", encoded: "pbkdf2-sha256$1000$not-base64$x"))
        #expect(!PasswordHash.verify(password: "s3cret", encoded: "plain"))
        #expect(try PasswordHash.make(password: "x").hasPrefix("pbkdf2-sha256$210000$"))
        // A hash the configuration refuses never matches, and costs nothing: 2^32−1 iterations once held a core for ten minutes.
        let endless = first.replacingOccurrences(of: "$1000$", with: "$4294967295$")
        #expect(!PasswordHash.verify(password: "s3cret", encoded: endless))
        #expect(throws: PasswordHashError.self) { try PasswordHash.make(password: "x", iterations: 1) }
        #expect(throws: PasswordHashError.self) { try PasswordHash.make(password: "x", iterations: 10_000_001) }
    }

    @Test func configuredUsersAreCheckedAndTheDemoRuleIsOffByDefault() async throws {
        let hash = try PasswordHash.make(password: "pw", iterations: 1000)
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [UserCredential(name: "alice", passwordHash: hash)], admins: ["alice"]))
        #expect(await authenticator.authenticate(basic("alice", "pw")) == .user(AuthenticatedUser(name: "alice", isAdmin: true)))
        #expect(await authenticator.authenticate(basic("alice", "nope")) == .refused)
        #expect(await authenticator.authenticate(basic("bob", "bob")) == .refused)
        #expect(await authenticator.authenticate(nil) == .missing)
        #expect(await authenticator.authenticate("Bearer abc") == .missing)
        #expect(await authenticator.authenticate("Basic !!!") == .missing)

        let demo = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true))
        #expect(await demo.authenticate(basic("bob", "bob")) == .user(AuthenticatedUser(name: "bob", isAdmin: false)))
        #expect(await demo.authenticate(basic("bob", "bobby")) == .refused)
    }

    @Test func repeatedFailuresBackOffPerAddressAndUserWithAWayBack() async throws {
        let clock = ManualClock(secondsSinceEpoch: 1000)
        let authenticator = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true), clock: clock)
        for _ in 0..<LoginThrottle.freeFailures {
            #expect(await authenticator.authenticate(basic("eve", "guess"), from: "10.0.0.66") == .refused)
        }
        // The guessing address backs off, even with the right password...
        #expect(await authenticator.authenticate(basic("eve", "eve"), from: "10.0.0.66") == .rateLimited(retryAfterSeconds: 1))
        // ...but the same user from another address is not locked out, nor another user.
        #expect(
            await authenticator.authenticate(basic("eve", "eve"), from: "10.0.0.7") == .user(AuthenticatedUser(name: "eve", isAdmin: false))
        )
        #expect(
            await authenticator.authenticate(basic("alice", "alice"), from: "10.0.0.66")
                == .user(AuthenticatedUser(name: "alice", isAdmin: false)))
        // Each further failure doubles the wait, up to a minute.
        clock.advance(seconds: 1.5)
        #expect(await authenticator.authenticate(basic("eve", "guess"), from: "10.0.0.66") == .refused)
        #expect(await authenticator.authenticate(basic("eve", "guess"), from: "10.0.0.66") == .rateLimited(retryAfterSeconds: 2))
        // The way back: after the wait, the right password works.
        clock.advance(seconds: 61)
        #expect(
            await authenticator.authenticate(basic("eve", "eve"), from: "10.0.0.66")
                == .user(AuthenticatedUser(name: "eve", isAdmin: false)))
    }

    @Test func concurrentGuessesCannotSlipPastTheLimit() async throws {
        let hash = try PasswordHash.make(password: "right", iterations: 20_000)
        let authenticator = Authenticator(configuration: AuthConfiguration(users: [UserCredential(name: "carol", passwordHash: hash)]))
        let verdicts = await withTaskGroup(of: Authenticator.Verdict.self) { group in
            for index in 0..<200 {
                group.addTask { await authenticator.authenticate(self.basic("carol", "guess\(index)"), from: "10.0.0.9") }
            }
            return await group.reduce(into: [Authenticator.Verdict]()) { $0.append($1) }
        }
        // Checks in flight count as failures: at most the free allowance was ever checked. The rest
        // wait out the backoff, or find the name's share of the pool taken.
        #expect(verdicts.filter { $0 == .refused }.count <= LoginThrottle.freeFailures)
        let unchecked = verdicts.filter {
            switch $0 {
            case .rateLimited, .busy: true
            default: false
            }
        }
        #expect(unchecked.count >= 200 - LoginThrottle.freeFailures)
        #expect(!verdicts.contains { if case .user = $0 { true } else { false } })
    }

    /// Twenty times the table's capacity in distinct names (and addresses) leaves at most the
    /// capacity remembered in each of the three throttle tables (per client and user, per client,
    /// per name); verified credentials are bounded the same way.
    @Test func twentyTimesTheCapacityInRandomUserNamesKeepsTheTablesBounded() async throws {
        let authenticator = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true), tableCapacity: 1_000)
        for index in 0..<20_000 {
            _ = await authenticator.authenticate(basic("user-\(index)", "wrong"), from: "10.1.\(index % 250).\(index % 199)")
        }
        #expect(await authenticator.rememberedEntries <= 3 * 1_000)
        // Verified credentials are bounded the same way (the demo rule accepts any name).
        for index in 0..<3_000 { _ = await authenticator.authenticate(basic("ok-\(index)", "ok-\(index)"), from: "10.2.0.1") }
        #expect(await authenticator.rememberedEntries <= 4 * 1_000)
    }

    @Test func malformedAuthorizationHeadersAreMissingCredentials() async throws {
        let authenticator = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true))
        #expect(await authenticator.authenticate("Basic " + Data("no-colon".utf8).base64EncodedString()) == .missing)
        #expect(await authenticator.authenticate("Basic %%%not-base64%%%") == .missing)
        #expect(await authenticator.authenticate("Basic " + String(repeating: "QUFB", count: 16_384)) == .missing)
        #expect(await authenticator.authenticate("Basic " + Data(":nouser".utf8).base64EncodedString()) == .missing)
        #expect(await authenticator.authenticate("Basic " + Data([0xFF, 0x3A, 0x41]).base64EncodedString()) == .missing)
    }

    /// An unknown name takes as long as a known name with a wrong password: it waits as long as a
    /// check takes, as measured (`LoginFloodTests` checks the wait's length without a clock).
    @Test func unknownUsersTakeAsLongAsKnownOnes() async throws {
        let hash = try PasswordHash.make(password: "pw", iterations: 100_000)
        let authenticator = Authenticator(configuration: AuthConfiguration(users: [UserCredential(name: "dave", passwordHash: hash)]))
        _ = await authenticator.authenticate(basic("warm-up", "x"), from: "10.3.0.1")
        var known: [Duration] = []
        var unknown: [Duration] = []
        let clock = ContinuousClock()
        for round in 0..<4 {
            known.append(
                await clock.measure { _ = await authenticator.authenticate(basic("dave", "wrong\(round)"), from: "10.3.1.\(round)") })
            unknown.append(
                await clock.measure { _ = await authenticator.authenticate(basic("nobody\(round)", "x"), from: "10.3.2.\(round)") })
        }
        let knownMedian = known.sorted()[2]
        let unknownMedian = unknown.sorted()[2]
        // Answering unknown names at once: 2-3 ms unknown against 122-169 ms known.
        #expect(unknownMedian * 3 > knownMedian, "unknown \(unknown), known \(known)")
    }

    /// The issue's case: 110 wrong guesses from one address, then the right password of a user who
    /// has not failed from it. The unknown names wait out a check's time, the first of them
    /// checked against the dummy hash.
    @Test func theRightPasswordGetsInAfterAFloodOfWrongGuessesFromTheSameAddress() async throws {
        let hash = try PasswordHash.make(password: "right", iterations: 1000)
        let authenticator = Authenticator(configuration: AuthConfiguration(users: [UserCredential(name: "carol", passwordHash: hash)]))
        var verdicts: [Authenticator.Verdict] = []
        for guess in 0..<110 {
            verdicts.append(await authenticator.authenticate(basic("user-\(guess / 5)", "guess\(guess)"), from: "192.0.2.10"))
        }
        // 100 checked; past the client's limit, a name that failed from it waits.
        #expect(verdicts.filter { $0 == .refused }.count >= LoginThrottle.freeAddressFailures)
        #expect(verdicts.allSatisfy { if case .rateLimited = $0 { true } else { $0 == .refused } })
        #expect(
            await authenticator.authenticate(basic("carol", "right"), from: "192.0.2.10")
                == .user(AuthenticatedUser(name: "carol", isAdmin: false)))
    }

    /// Past a client's own limit, a name that has not failed from it is still checked (once at a
    /// time), and a name that has failed waits out the client's backoff, which always ends.
    @Test func aClientPastItsLimitGetsOneTryPerNameAndTheWaitEnds() async throws {
        let clock = ManualClock(secondsSinceEpoch: 1000)
        let authenticator = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true), clock: clock)
        let flood = "192.0.2.20"
        for name in 0..<20 {
            for _ in 0..<LoginThrottle.freeFailures {
                #expect(await authenticator.authenticate(basic("user-\(name)", "wrong"), from: flood) == .refused)
            }
        }
        // 100 failures: the client's limit.
        #expect(
            await authenticator.authenticate(basic("alice", "alice"), from: flood)
                == .user(AuthenticatedUser(name: "alice", isAdmin: false)))
        #expect(await authenticator.authenticate(basic("mallory", "wrong"), from: flood) == .refused)
        guard case .rateLimited = await authenticator.authenticate(basic("mallory", "mallory"), from: flood) else {
            Issue.record("a second try of a name that failed from a client past its limit was checked")
            return
        }
        guard case .rateLimited = await authenticator.authenticate(basic("user-3", "user-3"), from: flood) else {
            Issue.record("a name that failed from a client past its limit was checked")
            return
        }
        // Not from another client; and from this one once its backoff has passed.
        #expect(
            await authenticator.authenticate(basic("user-3", "user-3"), from: "192.0.2.21")
                == .user(AuthenticatedUser(name: "user-3", isAdmin: false)))
        clock.advance(seconds: LoginThrottle.maximumBackoffSeconds + 1)
        #expect(
            await authenticator.authenticate(basic("mallory", "mallory"), from: flood)
                == .user(AuthenticatedUser(name: "mallory", isAdmin: false)))
    }

    /// A check held on the pool's only thread, a pool that admits one: the next login is answered
    /// 503 with Retry-After, and the held one is still decided.
    @Test func aFullPasswordCheckPoolAnswers503WithRetryAfter() async throws {
        let hash = try PasswordHash.make(password: "pw", iterations: 1000)
        let held = HeldChecks()
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [UserCredential(name: "alice", passwordHash: hash)]),
            pool: PasswordCheckPool(threadCount: 1, capacity: 1), verify: held.verify)
        let application = Application(router: Self.router(authenticator))
        try await application.test(.router) { client in
            async let first = client.execute(uri: "/api/me", method: .get, headers: [.authorization: basic("alice", "wrong")])
            await held.firstStarted()
            let second = try await client.execute(uri: "/api/me", method: .get, headers: [.authorization: basic("bob", "x")])
            #expect(second.status == .serviceUnavailable)
            #expect(second.headers[.retryAfter] == "1")
            #expect(String(buffer: second.body).contains("too many password checks at once"))
            held.release()
            #expect(try await first.status == .unauthorized)
        }
        // With the pool free again, the right password gets in.
        #expect(await authenticator.authenticate(basic("alice", "pw")) == .user(AuthenticatedUser(name: "alice", isAdmin: false)))
    }

    /// A request waiting for a password check stops waiting when it is cancelled (at shutdown),
    /// while the check itself is still held on its thread.
    @Test func aCancelledLoginStopsWaitingForItsCheck() async throws {
        let hash = try PasswordHash.make(password: "pw", iterations: 1000)
        let held = HeldChecks()
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [UserCredential(name: "alice", passwordHash: hash)]),
            pool: PasswordCheckPool(threadCount: 1, capacity: 1), verify: held.verify)
        let first = Task { await authenticator.authenticate(basic("alice", "pw")) }
        await held.firstStarted()
        let same = Task { await authenticator.authenticate(basic("alice", "pw")) }
        same.cancel()
        #expect(await same.value == .busy(retryAfterSeconds: 1))
        first.cancel()
        #expect(await first.value == .busy(retryAfterSeconds: 1))
        held.release()
    }

    @Test func theClientIsThePeerUnlessATrustedProxyForwardedIt() throws {
        let none = ClientAddressResolver()
        #expect(none.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.7"]) == "127.0.0.1")
        #expect(none.client(peer: "unknown", forwardedFor: ["203.0.113.7"]) == "unknown")
        #expect(none.client(peer: "::ffff:192.0.2.1", forwardedFor: []) == "192.0.2.1")
        // An IPv6 client is its /64.
        #expect(none.client(peer: "2001:db8:1:2:3:4:5:6", forwardedFor: []) == "2001:db8:1:2::/64")

        let proxies = ClientAddressResolver(trustedProxies: [
            try IPAddressRange(parsing: "10.0.0.0/8"), try IPAddressRange(parsing: "fd00::/8"),
        ])
        // The rightmost address that is not a trusted proxy; what the client wrote, left of it, is never read.
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: ["198.51.100.9, 203.0.113.7, 10.0.0.2"]) == "203.0.113.7")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: ["198.51.100.9", "203.0.113.7 ,10.0.0.2"]) == "203.0.113.7")
        #expect(proxies.client(peer: "fd00::1", forwardedFor: ["203.0.113.7:5150"]) == "203.0.113.7")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: ["[2001:db8::7]:443"]) == "2001:db8::/64")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: ["2001:db8::7"]) == "2001:db8::/64")
        // From an untrusted peer the header is ignored.
        #expect(proxies.client(peer: "192.0.2.1", forwardedFor: ["203.0.113.7"]) == "192.0.2.1")
        // No header, or only proxies in it: the outermost proxy.
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: []) == "10.0.0.5")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: ["10.0.0.3, 10.0.0.2"]) == "10.0.0.3")
        // Garbage where a proxy writes: the proxy that passed it on.
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: ["203.0.113.7, 10.0.0.2, unknown"]) == "10.0.0.5")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: ["203.0.113.7, garbage, 10.0.0.2"]) == "10.0.0.2")
    }

    /// Over a real socket (the peer is loopback): X-Forwarded-For counts only from a trusted proxy.
    @Test(arguments: [false, true]) func loginThrottlingCountsByTheForwardedClientOnlyBehindATrustedProxy(trusted: Bool) async throws {
        let proxies = trusted ? [try IPAddressRange(parsing: "127.0.0.1"), try IPAddressRange(parsing: "::1")] : []
        // A clock that stands still: the backoff (1 s after the fifth failure) never runs out
        // between the requests, however slowly a loaded machine serves them.
        let authenticator = Authenticator(
            configuration: AuthConfiguration(demoPasswordEqualsName: true), trustedProxies: proxies, clock: ManualClock())
        let application = Application(
            router: Self.router(authenticator), configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil))
        try await application.test(.live) { client in
            for _ in 0..<LoginThrottle.freeFailures {
                let guess = try await Self.login(client, "eve", "guess", forwardedFor: "203.0.113.1")
                #expect(guess == .unauthorized)
            }
            let same = try await Self.login(client, "eve", "eve", forwardedFor: "203.0.113.1")
            #expect(same == .tooManyRequests)
            // Another client behind the proxy: its own count when the proxy is trusted, the proxy's otherwise.
            let other = try await Self.login(client, "eve", "eve", forwardedFor: "203.0.113.2")
            #expect(other == (trusted ? .ok : .tooManyRequests))
        }
    }

    static func login(
        _ client: some TestClientProtocol, _ user: String, _ password: String, forwardedFor: String
    ) async throws -> HTTPResponse.Status {
        let authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        let headers: HTTPFields = [.authorization: authorization, HTTPField.Name("X-Forwarded-For")!: forwardedFor]
        return try await client.execute(uri: "/api/me", method: .get, headers: headers).status
    }

    /// A reload with a hash the configuration refuses is refused, naming the user and the field;
    /// one of 1,000 iterations is taken with a warning, and its user logs in.
    @Test func aReloadChecksPasswordHashesAndAdmins() async throws {
        try await GatewayFixture.inProcess(adjust: { $0.listener.trustedProxies = [try! IPAddressRange(parsing: "10.0.0.0/8")] }) {
            fixture in
            #expect(fixture.local.server.settings.authenticator.clients.trustedProxies.map(\.description) == ["10.0.0.0/8"])
            let path = fixture.local.directory + "/config.json"
            let original = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
            func reload(users: [[String: String]], admins: [String]) async throws -> GatewayServer.ReloadReport {
                var config = original
                config["auth"] = ["users": users, "admins": admins, "demoPasswordEqualsName": false]
                try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
                return try await fixture.local.server.reload(try ConfigurationLoader.load(file: path))
            }
            for hash in [
                "pbkdf2-sha256$4294967295$c2FsdHNhbHQtc2FsdHNhbA==$AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "pbkdf2-sha256$1$x$y",
            ] {
                do {
                    _ = try await reload(users: [["name": "mallory", "passwordHash": hash]], admins: [])
                    Issue.record("a reload with the hash \(hash) was taken")
                } catch {
                    #expect("\(error)".contains("$.auth.users[0].passwordHash: user 'mallory'"), "\(error)")
                }
            }
            let hash = try PasswordHash.make(password: "s3cret", iterations: 1000)
            do {
                _ = try await reload(users: [["name": "carol", "passwordHash": hash]], admins: ["carol", "dave"])
                Issue.record("a reload naming an admin who is no user was taken")
            } catch {
                #expect("\(error)".contains("$.auth.admins[1]: 'dave' is not a configured user"), "\(error)")
            }
            // Refused reloads left the demo rule running.
            #expect(try await fixture.call("GET", "/api/me", user: "alice").status == 200)
            let report = try await reload(users: [["name": "carol", "passwordHash": hash]], admins: ["carol"])
            #expect(report.warnings.count == 1 && report.warnings[0].contains("user 'carol' has a hash of 1000 iterations"), "\(report)")
            #expect(try await fixture.call("GET", "/api/me", user: "carol", password: "s3cret").status == 200)
            #expect(try await fixture.call("GET", "/api/me", user: "alice").status == 401)
        }
    }

    /// `/api/me` behind the authentication middleware, as the gateway mounts it.
    static func router(_ authenticator: Authenticator) -> Router<GatewayContext> {
        let router = Router(context: GatewayContext.self)
        router.group("api").add(middleware: BasicAuthenticationMiddleware(authenticator: authenticator)).get("me") { _, context in
            context.user?.name ?? ""
        }
        return router
    }
}

/// A password check that holds the pool's thread until released, and says when it has started.
final class HeldChecks: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let started: AsyncStream<Void>
    private let starts: AsyncStream<Void>.Continuation

    init() { (started, starts) = AsyncStream.makeStream() }

    var verify: @Sendable (String, String) -> Bool {
        { [gate, starts] password, encoded in
            starts.yield()
            gate.wait()
            return PasswordHash.verify(password: password, encoded: encoded)
        }
    }

    func firstStarted() async {
        for await _ in started { return }
    }

    /// Lets every held check (and any later one) run.
    func release() {
        for _ in 0..<16 { gate.signal() }
    }
}
