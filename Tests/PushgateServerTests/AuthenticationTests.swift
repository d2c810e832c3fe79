import Foundation
import Pushgate
import PushgateCore
import PushgateTesting
import Synchronization
import Testing

@testable import PushgateServer

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
        // Checks in flight count as failures: at most the free allowance was ever checked.
        #expect(verdicts.filter { $0 == .refused }.count <= LoginThrottle.freeFailures)
        #expect(verdicts.filter { if case .rateLimited = $0 { true } else { false } }.count >= 200 - LoginThrottle.freeFailures)
        #expect(!verdicts.contains { if case .user = $0 { true } else { false } })
    }

    /// Twenty times the table's capacity in distinct names (and addresses) leaves at most twice
    /// the capacity remembered; verified credentials are bounded the same way.
    @Test func twentyTimesTheCapacityInRandomUserNamesKeepsTheTablesBounded() async throws {
        let authenticator = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true), tableCapacity: 1_000)
        for index in 0..<20_000 {
            _ = await authenticator.authenticate(basic("user-\(index)", "wrong"), from: "10.1.\(index % 250).\(index % 199)")
        }
        #expect(await authenticator.rememberedEntries <= 2 * 1_000)
        // Verified credentials are bounded the same way (the demo rule accepts any name).
        for index in 0..<3_000 { _ = await authenticator.authenticate(basic("ok-\(index)", "ok-\(index)"), from: "10.2.0.1") }
        #expect(await authenticator.rememberedEntries <= 3 * 1_000)
    }

    @Test func malformedAuthorizationHeadersAreMissingCredentials() async throws {
        let authenticator = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true))
        #expect(await authenticator.authenticate("Basic " + Data("no-colon".utf8).base64EncodedString()) == .missing)
        #expect(await authenticator.authenticate("Basic %%%not-base64%%%") == .missing)
        #expect(await authenticator.authenticate("Basic " + String(repeating: "QUFB", count: 16_384)) == .missing)
        #expect(await authenticator.authenticate("Basic " + Data(":nouser".utf8).base64EncodedString()) == .missing)
        #expect(await authenticator.authenticate("Basic " + Data([0xFF, 0x3A, 0x41]).base64EncodedString()) == .missing)
    }

    /// An unknown name costs the same PBKDF2 check as a known name with a wrong password.
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
        // Without a check for unknown names: 2-3 ms unknown against 122-169 ms known.
        #expect(unknownMedian * 3 > knownMedian, "unknown \(unknown), known \(known)")
    }
}
