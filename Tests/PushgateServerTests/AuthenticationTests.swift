import Foundation
import Pushgate
import PushgateServer
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

    @Test func repeatedFailuresAreRateLimitedForAMinute() async throws {
        let clock = Mutex<Double>(1000)
        let authenticator = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true), now: { clock.withLock { $0 } })
        for _ in 0..<Authenticator.maximumFailures {
            #expect(await authenticator.authenticate(basic("eve", "guess")) == .refused)
        }
        #expect(await authenticator.authenticate(basic("eve", "eve")) == .rateLimited)
        #expect(await authenticator.authenticate(basic("alice", "alice")) == .user(AuthenticatedUser(name: "alice", isAdmin: false)))
        clock.withLock { $0 += 61 }
        #expect(await authenticator.authenticate(basic("eve", "eve")) == .user(AuthenticatedUser(name: "eve", isAdmin: false)))
    }
}
