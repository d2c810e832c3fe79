import Foundation
import Pushgate
import PushgateGateway
import PushgateServer
import Synchronization
import Testing

/// Logins under a flood: unknown names cost no password check, one name gets a bounded share of
/// the pool and a backoff of its own, the verification cache survives reloads that leave a user
/// alone, and `$` names are nobody's. Every test holds checks and waits by hand (``CountedChecks``,
/// ``GatedClock``) instead of timing them.
@Suite struct LoginFloodTests {
    func basic(_ user: String, _ password: String) -> String { "Basic " + Data("\(user):\(password)".utf8).base64EncodedString() }

    func user(_ name: String) -> Authenticator.Verdict { .user(AuthenticatedUser(name: name, isAdmin: false)) }

    static let busy = Authenticator.Verdict.busy(retryAfterSeconds: PasswordCheckPool.retryAfterSeconds)

    /// The probe's case: one address (a carrier NAT) sends new random names as fast as it can, and
    /// alice, behind the same address, signs in for the first time. Only the first unknown name is
    /// checked (the dummy hash, timed); the rest wait without a check, so alice's check finds the
    /// pool free, and none of them is answered busy.
    @Test func aFloodOfUnknownNamesSpendsNoCheckAndNeverTakesAKnownUsersPlace() async throws {
        let hash = try PasswordHash.make(password: "right", iterations: 1000)
        let clock = GatedClock()
        let checks = CountedChecks()
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [UserCredential(name: "alice", passwordHash: hash)]),
            pool: PasswordCheckPool(threadCount: 1, capacity: 2), clock: clock, verify: checks.verify)
        let nat = "192.0.2.99"
        #expect(await authenticator.authenticate(basic("stranger", "guess"), from: nat) == .refused)
        #expect(checks.count == 1)

        let flood = 300
        let answers = Task {
            await withTaskGroup(of: Authenticator.Verdict.self) { group in
                for index in 0..<flood {
                    group.addTask {
                        let verdict = await authenticator.authenticate(basic("stranger-\(index)", "guess"), from: nat)
                        clock.note(.answered)
                        return verdict
                    }
                }
                return await group.reduce(into: [Authenticator.Verdict]()) { $0.append($1) }
            }
        }
        // Every request of the flood is either waiting (on the clock) or answered.
        let events = await clock.events(flood)
        #expect(events.allSatisfy { $0 == .sleep }, "answered before their wait: \(events.filter { $0 == .answered }.count)")
        #expect(checks.count == 1)
        #expect(await authenticator.authenticate(basic("alice", "right"), from: nat) == user("alice"))
        #expect(checks.count == 2)
        clock.release()
        let verdicts = await answers.value
        #expect(verdicts.count == flood)
        #expect(verdicts.allSatisfy { $0 == .refused }, "\(verdicts.filter { $0 != .refused }.prefix(3))")
    }

    /// An unknown name waits as long as a check at the largest configured iteration count takes, as
    /// measured: here a check advances the clock by a microsecond an iteration.
    @Test func anUnknownNameWaitsAsLongAsACheckAtTheLargestIterationCount() async throws {
        let clock = ManualClock(secondsSinceEpoch: 1000)
        let checks = CountedChecks { encoded in
            clock.advance(seconds: Double((try? PBKDF2PasswordHash(parsing: encoded))?.iterations ?? 0) * 1e-6)
        }
        let checked = { try checks.hashes.map { try PBKDF2PasswordHash(parsing: $0).iterations } }
        let users = [
            UserCredential(name: "light", passwordHash: try PasswordHash.make(password: "pw", iterations: 1000)),
            UserCredential(name: "heavy", passwordHash: try PasswordHash.make(password: "pw", iterations: 4000)),
        ]
        let authenticator = Authenticator(configuration: AuthConfiguration(users: users), clock: clock, verify: checks.verify)
        // The first unknown name: the dummy hash, at the largest count, checked once and timed.
        #expect(await authenticator.authenticate(basic("nobody-1", "x"), from: "10.4.0.1") == .refused)
        #expect(try checked() == [4000])
        #expect(clock.requestedSleeps.isEmpty)
        // The next: no check, a wait of one check at 4,000 iterations.
        #expect(await authenticator.authenticate(basic("nobody-2", "x"), from: "10.4.0.2") == .refused)
        #expect(try checked() == [4000])
        #expect(clock.requestedSleeps.count == 1 && abs(clock.requestedSleeps[0] - 0.004) < 1e-9, "\(clock.requestedSleeps)")
        // A known name is checked (at its own count, measured at the same rate), and the wait stays.
        #expect(await authenticator.authenticate(basic("light", "wrong"), from: "10.4.0.3") == .refused)
        #expect(try checked() == [4000, 1000])
        #expect(await authenticator.authenticate(basic("nobody-3", "x"), from: "10.4.0.4") == .refused)
        #expect(clock.requestedSleeps.count == 2 && abs(clock.requestedSleeps[1] - 0.004) < 1e-9, "\(clock.requestedSleeps)")
    }

    /// The dummy hash has the largest iteration count of all the users (one with fewer would
    /// answer faster than the slowest user's check), and follows a reload.
    @Test func theDummyHashHasTheLargestIterationCount() async throws {
        // A hundred users in no particular order, one of them with the most iterations.
        let counts = (1...100).map { $0 * 1000 }.shuffled()
        let users = try counts.enumerated().map { index, iterations in
            let hash = try PBKDF2PasswordHash(
                iterations: iterations, salt: Array(repeating: UInt8(index), count: 16), key: Array(repeating: 7, count: 32))
            return UserCredential(name: "user-\(index)", passwordHash: hash.encoded)
        }
        let checks = CountedChecks()
        let authenticator = Authenticator(configuration: AuthConfiguration(users: users), verify: checks.verify)
        #expect(await authenticator.authenticate(basic("nobody", "x")) == .refused)
        #expect(try checks.hashes.map { try PBKDF2PasswordHash(parsing: $0).iterations } == [100_000])

        let lighter = try users.filter { try PBKDF2PasswordHash(parsing: $0.passwordHash).iterations < 100_000 }
        await authenticator.reload(AuthConfiguration(users: lighter))
        #expect(await authenticator.authenticate(basic("nobody-else", "x")) == .refused)
        #expect(try checks.hashes.map { try PBKDF2PasswordHash(parsing: $0).iterations } == [100_000, 99_000])
    }

    /// At most so many unknown names wait at once: past that one is answered busy, while a known
    /// name is still checked.
    @Test func unknownNameWaitsAreCappedAndAKnownNameIsStillChecked() async throws {
        let hash = try PasswordHash.make(password: "right", iterations: 1000)
        let clock = GatedClock()
        let checks = CountedChecks()
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [UserCredential(name: "alice", passwordHash: hash)]),
            pool: PasswordCheckPool(threadCount: 1, capacity: 4), clock: clock, unknownNameWaitCapacity: 3, verify: checks.verify)
        #expect(await authenticator.authenticate(basic("stranger", "x"), from: "10.5.0.1") == .refused)
        let waiting = (1...3).map { index in
            Task {
                let verdict = await authenticator.authenticate(basic("stranger-\(index)", "x"), from: "10.5.0.1")
                clock.note(.answered)
                return verdict
            }
        }
        #expect(await clock.events(3).allSatisfy { $0 == .sleep })
        #expect(await authenticator.authenticate(basic("stranger-4", "x"), from: "10.5.0.1") == Self.busy)
        #expect(await authenticator.authenticate(basic("alice", "right"), from: "10.5.0.1") == user("alice"))
        clock.release()
        for task in waiting { #expect(await task.value == .refused) }
        #expect(checks.count == 2)
    }

    /// A name guessed at from more addresses than any per-address limit notices backs off as a
    /// name: a guess from an address never seen waits, credentials already verified still pass,
    /// and a new sign-in gets in once the backoff has passed. An unknown name backs off alike.
    @Test func aNameGuessedFromManyAddressesBacksOffButVerifiedSignInsPass() async throws {
        let clock = ManualClock(secondsSinceEpoch: 1000)
        let hash = try PasswordHash.make(password: "right", iterations: 1000)
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [UserCredential(name: "alice", passwordHash: hash)]), clock: clock)
        #expect(await authenticator.authenticate(basic("alice", "right"), from: "192.0.2.1") == user("alice"))
        for name in ["alice", "nobody"] {
            for guess in 0..<LoginThrottle.freeNameFailures {
                #expect(await authenticator.authenticate(basic(name, "guess-\(guess)"), from: "203.0.113.\(guess)") == .refused)
            }
            #expect(await authenticator.authenticate(basic(name, "guess"), from: "198.51.100.7") == .rateLimited(retryAfterSeconds: 1))
        }
        // Verified credentials pass, from any address.
        #expect(await authenticator.authenticate(basic("alice", "right"), from: "192.0.2.2") == user("alice"))
        // Each further failure doubles the name's backoff.
        clock.advance(seconds: 1.5)
        #expect(await authenticator.authenticate(basic("alice", "guess"), from: "198.51.100.8") == .refused)
        #expect(await authenticator.authenticate(basic("alice", "guess"), from: "198.51.100.9") == .rateLimited(retryAfterSeconds: 2))
        // Past the cache's time and the backoff, a new sign-in is checked, and gets in.
        clock.advance(seconds: Authenticator.cacheSeconds + 1)
        #expect(await authenticator.authenticate(basic("alice", "right"), from: "192.0.2.3") == user("alice"))
    }

    /// One name's checks take at most its share of the pool (a quarter of it): the next is
    /// answered busy while another name is still checked.
    @Test func oneNameTakesAtMostItsShareOfThePool() async throws {
        let users = [
            UserCredential(name: "carol", passwordHash: try PasswordHash.make(password: "right", iterations: 1000)),
            UserCredential(name: "dave", passwordHash: try PasswordHash.make(password: "right", iterations: 1000)),
        ]
        let checks = CountedChecks()
        let pool = PasswordCheckPool(threadCount: 4, capacity: 8)
        #expect(pool.capacityPerName == 2)
        let authenticator = Authenticator(configuration: AuthConfiguration(users: users), pool: pool, verify: checks.verify)
        let held = (1...2).map { index in
            Task { await authenticator.authenticate(basic("carol", "hold-\(index)"), from: "198.51.100.\(index)") }
        }
        await checks.held(2)
        #expect(await authenticator.authenticate(basic("carol", "guess"), from: "198.51.100.3") == Self.busy)
        #expect(await authenticator.authenticate(basic("dave", "right"), from: "198.51.100.4") == user("dave"))
        #expect(checks.count == 3)
        checks.release()
        for task in held { #expect(await task.value == .refused) }
        #expect(await authenticator.authenticate(basic("carol", "right"), from: "198.51.100.3") == user("carol"))
    }

    /// An unknown name is held to the same share: its waits count as checks of the name.
    @Test func anUnknownNameIsHeldToTheSameShareAsAKnownOne() async throws {
        let clock = GatedClock()
        let checks = CountedChecks()
        let hash = try PasswordHash.make(password: "right", iterations: 1000)
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [UserCredential(name: "carol", passwordHash: hash)]),
            pool: PasswordCheckPool(threadCount: 4, capacity: 8), clock: clock, verify: checks.verify)
        #expect(await authenticator.authenticate(basic("ghost", "calibrate"), from: "198.51.100.1") == .refused)
        let waiting = (1...2).map { index in
            Task {
                let verdict = await authenticator.authenticate(basic("ghost", "guess-\(index)"), from: "198.51.100.\(index + 1)")
                clock.note(.answered)
                return verdict
            }
        }
        #expect(await clock.events(2).allSatisfy { $0 == .sleep })
        #expect(await authenticator.authenticate(basic("ghost", "guess-3"), from: "198.51.100.4") == Self.busy)
        #expect(await authenticator.authenticate(basic("carol", "right"), from: "198.51.100.4") == user("carol"))
        clock.release()
        for task in waiting { #expect(await task.value == .refused) }
    }

    /// A reload forgets the verified credentials of users it changes (a new or removed hash, the
    /// demo rule switched off for names without one) and of no one else.
    @Test func aReloadKeepsUnchangedUsersSignedInAndDropsChangedOnes() async throws {
        let alice = UserCredential(name: "alice", passwordHash: try PasswordHash.make(password: "a-pw", iterations: 1000))
        let bob = UserCredential(name: "bob", passwordHash: try PasswordHash.make(password: "b-pw", iterations: 1000))
        let newBob = UserCredential(name: "bob", passwordHash: try PasswordHash.make(password: "b-new", iterations: 1000))
        let checks = CountedChecks()
        let authenticator = Authenticator(
            configuration: AuthConfiguration(users: [alice, bob], demoPasswordEqualsName: true), verify: checks.verify)
        #expect(await authenticator.authenticate(basic("alice", "a-pw")) == user("alice"))
        #expect(await authenticator.authenticate(basic("bob", "b-pw")) == user("bob"))
        #expect(await authenticator.authenticate(basic("carol", "carol")) == user("carol"))
        #expect(checks.count == 2)

        // Bob's hash changes: alice and carol stay signed in without a check, bob's old password is checked again.
        await authenticator.reload(AuthConfiguration(users: [alice, newBob], demoPasswordEqualsName: true))
        #expect(await authenticator.authenticate(basic("alice", "a-pw")) == user("alice"))
        #expect(await authenticator.authenticate(basic("carol", "carol")) == user("carol"))
        #expect(checks.count == 2)
        #expect(await authenticator.authenticate(basic("bob", "b-pw")) == .refused)
        #expect(await authenticator.authenticate(basic("bob", "b-new")) == user("bob"))
        #expect(checks.count == 4)

        // The demo rule switched off: carol goes, alice and bob stay.
        await authenticator.reload(AuthConfiguration(users: [alice, newBob]))
        #expect(await authenticator.authenticate(basic("alice", "a-pw")) == user("alice"))
        #expect(await authenticator.authenticate(basic("bob", "b-new")) == user("bob"))
        #expect(checks.count == 4)
        #expect(await authenticator.authenticate(basic("carol", "carol")) == .refused)

        // Alice removed: her credentials go with her.
        await authenticator.reload(AuthConfiguration(users: [newBob]))
        #expect(await authenticator.authenticate(basic("alice", "a-pw")) == .refused)
        #expect(await authenticator.authenticate(basic("bob", "b-new")) == user("bob"))
    }

    /// Names starting with `$` are the gateway's own owners and tags (`$hub`, `$InstallationId:{…}`):
    /// refused when the configuration loads, naming the user, and never signed in, by the demo
    /// rule or otherwise.
    @Test func namesStartingWithADollarSignAreRefused() async throws {
        let hash = try PasswordHash.make(password: "pw", iterations: 1000)
        let configurations = [
            (#"{"auth": {"users": [{"name": "$hub", "passwordHash": "\#(hash)"}]}, "apps": {}}"#, "$.auth.users[0].name"),
            (#"{"auth": {"admins": ["$InstallationId"], "demoPasswordEqualsName": true}, "apps": {}}"#, "$.auth.admins[0]"),
        ]
        for (text, path) in configurations {
            #expect {
                try PushgateConfiguration(json: Array(text.utf8), file: "config.json")
            } throws: { error in
                let error = error as! ConfigurationError
                return error.path == path && error.reason.contains("starts with '$', which is reserved")
            }
        }
        let demo = Authenticator(configuration: AuthConfiguration(demoPasswordEqualsName: true))
        #expect(await demo.authenticate(basic("$hub", "$hub")) == .refused)
        #expect(await demo.authenticate(basic("$InstallationId", "$InstallationId")) == .refused)
        #expect(await demo.authenticate(basic("hub", "hub")) == user("hub"))
        // Not even a user configured in code.
        let configured = Authenticator(configuration: AuthConfiguration(users: [UserCredential(name: "$hub", passwordHash: hash)]))
        #expect(await configured.authenticate(basic("$hub", "pw")) == .refused)
    }
}

/// A password check that counts its calls and the hashes it was given, runs `before` first (a
/// test advances its clock there), and holds the pool's thread for passwords starting with `hold`
/// until released.
final class CountedChecks: Sendable {
    private let given = Mutex<[String]>([])
    private let gate = DispatchSemaphore(value: 0)
    private let started: AsyncStream<Void>
    private let starts: AsyncStream<Void>.Continuation
    private let before: @Sendable (_ encoded: String) -> Void

    init(before: @escaping @Sendable (_ encoded: String) -> Void = { _ in }) {
        self.before = before
        (started, starts) = AsyncStream.makeStream()
    }

    var verify: @Sendable (String, String) -> Bool {
        { [self] password, encoded in
            given.withLock { $0.append(encoded) }
            before(encoded)
            if password.hasPrefix("hold") {
                starts.yield()
                gate.wait()
            }
            return PasswordHash.verify(password: password, encoded: encoded)
        }
    }

    /// The hashes checked so far, in order.
    var hashes: [String] { given.withLock { $0 } }
    var count: Int { hashes.count }

    /// Returns once `count` held checks have started.
    func held(_ count: Int) async {
        var seen = 0
        for await _ in started {
            seen += 1
            if seen == count { return }
        }
    }

    /// Lets every held check (and any later one) run.
    func release() {
        for _ in 0..<16 { gate.signal() }
    }
}

/// A clock that stands still, whose sleeps wait until ``release()``; it reports each sleep as it
/// starts, and what the test notes beside them, in one stream of ``Event``s.
final class GatedClock: PushgateClock {
    enum Event: Sendable, Equatable {
        case sleep
        case answered
    }

    private struct State {
        var released = false
        var sleepers: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let stream: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    let now: Timestamp

    init(secondsSinceEpoch: Double = 1000) {
        now = Timestamp(secondsSinceEpoch: secondsSinceEpoch)
        (stream, continuation) = AsyncStream.makeStream()
    }

    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: Timestamp, tolerance: Duration? = nil) async throws {
        await withCheckedContinuation { (sleeper: CheckedContinuation<Void, Never>) in
            let held = state.withLock { state in
                guard !state.released else { return false }
                state.sleepers.append(sleeper)
                return true
            }
            continuation.yield(.sleep)
            if !held { sleeper.resume() }
        }
    }

    /// Adds `event` to the stream.
    func note(_ event: Event) { continuation.yield(event) }

    /// The next `count` events.
    func events(_ count: Int) async -> [Event] {
        var events: [Event] = []
        for await event in stream {
            events.append(event)
            if events.count == count { break }
        }
        return events
    }

    /// Ends every sleep, and every later one at once.
    func release() {
        let sleepers = state.withLock { state in
            state.released = true
            defer { state.sleepers.removeAll() }
            return state.sleepers
        }
        for sleeper in sleepers { sleeper.resume() }
    }
}
