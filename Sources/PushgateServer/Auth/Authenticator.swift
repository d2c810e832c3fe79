import Crypto
import Foundation
import Pushgate
import PushgateGateway

/// Basic authentication against configured users (PBKDF2 hashes), or — only when explicitly
/// configured, for demos — the tutorials' "password equals user name" rule.
///
/// Successful verifications are remembered for a few minutes (the tutorial client sends its Basic
/// header on every call, and each PBKDF2 check costs tens of milliseconds), keyed by an HMAC of
/// this process's own (``VerifiedCredentials``); a reload forgets only the users it changed.
/// Identical checks in flight are made once. Checks run on a ``PasswordCheckPool`` of their own,
/// never on the threads that serve requests; when it holds all it admits, or all it admits of one
/// name, the answer is ``Verdict/busy(retryAfterSeconds:)``. Failures are throttled per (client,
/// user), per client and per user name (``LoginThrottle``); who the client is, ``clients`` decides.
///
/// An unknown user name costs no check: it waits as long as a check at the largest configured
/// iteration count takes (``CheckDurationEstimate``, measured on the known names' checks and on
/// one check of a dummy hash each time the largest count changes), behind as many turns as the
/// checks already on the pool would give it, and is answered as a check would be (busy when the
/// pool or the name's share is full), so a flood of made-up names spends no CPU and never takes a
/// known user's place on the pool. At most ``unknownNameWaitCapacity`` such waits at once. Names
/// starting with `$` are reserved (`$hub`, `$InstallationId:{…}`), never a user's, and refused at
/// once. Every table is bounded.
public actor Authenticator {
    public enum Verdict: Sendable, Equatable {
        case user(AuthenticatedUser)
        /// No or malformed `Authorization` header.
        case missing
        /// Wrong user name or password.
        case refused
        /// Too many failures for this user from this client, or for this user name, recently: try
        /// again after the delay.
        case rateLimited(retryAfterSeconds: Int)
        /// Every password check the pool admits (or admits of this name) is taken: try again after the delay.
        case busy(retryAfterSeconds: Int)
    }

    /// A configured user's hash, read once per set of users.
    private struct Account: Equatable {
        let hash: String
        /// The hash's PBKDF2 iterations; 0 for a hash that never matches (and costs nothing).
        let iterations: Int
    }

    /// Who may log in, as the configuration says (a reload replaces it).
    private struct Accounts {
        let users: [String: Account]
        let admins: Set<String>
        let demoPasswordEqualsName: Bool
        /// The largest iteration count among the users: what an unknown name's check would cost.
        let largestIterations: Int

        init(_ configuration: AuthConfiguration) {
            users = Dictionary(
                configuration.users.map { user in
                    let iterations = (try? PBKDF2PasswordHash(parsing: user.passwordHash))?.iterations ?? 0
                    return (user.name, Account(hash: user.passwordHash, iterations: iterations))
                }, uniquingKeysWith: { first, _ in first })
            admins = Set(configuration.admins)
            demoPasswordEqualsName = configuration.demoPasswordEqualsName
            largestIterations = users.values.lazy.map(\.iterations).filter { $0 > 0 }.max() ?? PasswordHash.defaultIterations
        }
    }

    /// Whether the dummy hash at the current largest iteration count has been timed.
    private enum Calibration: Equatable {
        case needed
        /// By the check numbered so.
        case running(Int)
        case done
    }

    /// A check's outcome and how long it ran on its thread.
    private struct TimedCheck: Sendable {
        let matched: Bool
        let seconds: Double
    }

    private var accounts: Accounts
    /// Counts reloads: a check begun before one is not remembered as verified.
    private var generation = 0
    /// Who a request comes from: the peer, or the address a trusted proxy forwarded.
    public nonisolated let clients: ClientAddressResolver
    private let pool: PasswordCheckPool
    private let verify: @Sendable (_ password: String, _ encoded: String) -> Bool
    private let clock: any PushgateClock
    private var verified: VerifiedCredentials
    /// Checks and waits in flight, by credentials, with the requests waiting for each.
    private var checks: [VerifiedCredentials.Key: [Int: CheckedContinuation<Bool?, Never>]] = [:]
    private var nextWaiter = 0
    /// Checks admitted to the pool, running or queued.
    private var poolChecks = 0
    /// Unknown names waiting out a check's time.
    private var unknownNameWaits = 0
    private let waitCapacity: Int
    private var throttle: LoginThrottle
    private var dummyHash: String?
    private var estimate = CheckDurationEstimate()
    private var calibration = Calibration.needed
    private var calibrationRuns = 0
    /// Unknown names that arrived before any check was measured, waiting for the calibration.
    private var calibrationWaiters: [CheckedContinuation<Void, Never>] = []

    public static let cacheSeconds = 300.0
    /// Longest `Authorization` header looked at; longer ones are refused unread.
    public static let maximumHeaderBytes = 4096
    /// Unknown names waiting at once; past that one is answered busy (known names are not).
    public static let unknownNameWaitCapacity = 4096

    public init(
        configuration: AuthConfiguration, trustedProxies: [IPAddressRange] = [], pool: PasswordCheckPool = PasswordCheckPool(),
        tableCapacity: Int = 10_000, clock: any PushgateClock = SystemClock()
    ) {
        self.init(
            configuration: configuration, trustedProxies: trustedProxies, pool: pool, tableCapacity: tableCapacity, clock: clock,
            verify: PasswordHash.verify)
    }

    /// With the password check given (tests hold one on the pool's thread) and the cap on
    /// unknown names' waits.
    package init(
        configuration: AuthConfiguration, trustedProxies: [IPAddressRange] = [], pool: PasswordCheckPool = PasswordCheckPool(),
        tableCapacity: Int = 10_000, clock: any PushgateClock = SystemClock(), unknownNameWaitCapacity: Int = unknownNameWaitCapacity,
        verify: @escaping @Sendable (_ password: String, _ encoded: String) -> Bool
    ) {
        accounts = Accounts(configuration)
        clients = ClientAddressResolver(trustedProxies: trustedProxies)
        self.pool = pool
        self.verify = verify
        self.clock = clock
        waitCapacity = max(1, unknownNameWaitCapacity)
        verified = VerifiedCredentials(capacity: tableCapacity)
        throttle = LoginThrottle(capacity: tableCapacity)
    }

    /// Takes reloaded users and admins. Verified credentials stay verified unless their user's
    /// hash changed or was removed, or (for names without a hash) the demo rule was switched off;
    /// the unknown names' dummy hash follows the largest iteration count, and is timed again when
    /// that changes.
    public func reload(_ configuration: AuthConfiguration) {
        let previous = accounts
        let next = Accounts(configuration)
        accounts = next
        generation += 1
        verified.removeAll { name in
            previous.users[name] != next.users[name] || next.users[name] == nil && !next.demoPasswordEqualsName
        }
        if next.largestIterations != previous.largestIterations {
            dummyHash = nil
            calibration = .needed
        }
    }

    /// Entries held in the verification cache and the throttle tables (bounded by the capacity).
    public var rememberedEntries: Int { verified.count + throttle.count }

    /// Checks an `Authorization` header value sent from `address` (the client, as ``clients`` names it).
    public func authenticate(_ header: String?, from address: String = "local") async -> Verdict {
        guard let header, header.utf8.count <= Self.maximumHeaderBytes, header.count > 6, header.prefix(6).lowercased() == "basic ",
            let decoded = Data(base64Encoded: header.dropFirst(6).trimmed(of: " \t")),
            let credentials = String(data: decoded, encoding: .utf8), let colon = credentials.firstIndex(of: ":")
        else { return .missing }
        let name = String(credentials[..<colon])
        let password = String(credentials[credentials.index(after: colon)...])
        guard !name.isEmpty else { return .missing }
        // Reserved for the gateway's own owners and tags: no user has such a name (the configuration
        // refuses one, and the demo rule takes none), so refusing it at once tells nothing.
        guard !name.hasPrefix("$") else { return .refused }
        let user = AuthenticatedUser(name: name, isAdmin: accounts.admins.contains(name))
        let verifiedKey = verified.key(name: name, password: password)
        let time = clock.now.secondsSinceEpoch
        if verified.contains(verifiedKey, now: time) { return .user(user) }

        // The same credentials already being checked: the same guess, answered once.
        if checks[verifiedKey] != nil { return Self.verdict(await outcome(of: verifiedKey), user) }

        let key = LoginThrottle.Key(address: address, user: name)
        if case .wait(let seconds) = throttle.decision(key, now: time) { return .rateLimited(retryAfterSeconds: seconds) }
        let account = accounts.users[name]
        if account == nil, accounts.demoPasswordEqualsName {
            // No hash, no pool: the demo rule is a comparison.
            let accepted = PasswordHash.constantTimeEqual(Array(name.utf8), Array(password.utf8))
            settle(verifiedKey, key, accepted: accepted, generation: generation)
            return Self.verdict(accepted, user)
        }
        // Known or not, a name is answered as its check would be: busy when the name has its share
        // of the pool, or the pool is full.
        let busy = Verdict.busy(retryAfterSeconds: PasswordCheckPool.retryAfterSeconds)
        guard throttle.pendingChecks(ofName: name) < pool.capacityPerName, poolChecks < pool.capacity else { return busy }
        if let account {
            throttle.begin(key, now: time)
            startCheck(verifiedKey, key, password: password, encoded: account.hash, iterations: account.iterations, calibration: nil)
        } else if calibration == .needed {
            // Once per set of users: the dummy hash checked for real, and timed.
            calibrationRuns += 1
            calibration = .running(calibrationRuns)
            throttle.begin(key, now: time)
            startCheck(
                verifiedKey, key, password: password, encoded: dummyHashForUnknownUsers(), iterations: accounts.largestIterations,
                calibration: calibrationRuns)
        } else {
            guard unknownNameWaits < waitCapacity else { return busy }
            throttle.begin(key, now: time)
            // The turn a check admitted now would get: behind those already on the pool's threads.
            startWait(verifiedKey, key, from: time, turns: poolChecks / pool.threadCount + 1)
        }
        return Self.verdict(await outcome(of: verifiedKey), user)
    }

    private static func verdict(_ accepted: Bool?, _ user: AuthenticatedUser) -> Verdict {
        switch accepted {
        case true?: .user(user)
        case false?: .refused
        case nil: .busy(retryAfterSeconds: PasswordCheckPool.retryAfterSeconds)
        }
    }

    /// Runs a check on the pool, timing it on its thread; `calibration` numbers a check of the
    /// dummy hash (which never accepts).
    private func startCheck(
        _ verifiedKey: VerifiedCredentials.Key, _ key: LoginThrottle.Key, password: String, encoded: String, iterations: Int,
        calibration run: Int?
    ) {
        checks[verifiedKey] = [:]
        poolChecks += 1
        let generation = self.generation
        let (verify, clock) = (self.verify, self.clock)
        // Not a child of any request's task: every request with the same credentials waits for
        // it (``outcome(of:)``), and a request that goes away must not cancel the others' check.
        // It ends itself: `pool.run` returns once the one check has run on a pool thread (tens of
        // milliseconds), or at once when the pool has stopped. Nobody else ends it.
        Task { [pool] in
            let timed = await pool.run {
                let start = clock.now
                let matched = verify(password, encoded)
                return TimedCheck(matched: matched, seconds: start.duration(to: clock.now).seconds)
            }
            poolChecks -= 1
            if let timed { estimate.record(seconds: timed.seconds, iterations: iterations) }
            if let run {
                if calibration == .running(run) { calibration = estimate.secondsPerIteration == nil ? .needed : .done }
                for waiter in calibrationWaiters { waiter.resume() }
                calibrationWaiters.removeAll()
            }
            settle(verifiedKey, key, accepted: timed.map { run == nil && $0.matched }, generation: generation)
        }
    }

    /// An unknown name's stand-in for a check: waits from `start` for `turns` checks at the
    /// largest iteration count, as measured, then fails.
    private func startWait(_ verifiedKey: VerifiedCredentials.Key, _ key: LoginThrottle.Key, from start: Double, turns: Int) {
        checks[verifiedKey] = [:]
        unknownNameWaits += 1
        let generation = self.generation
        // Unstructured for the reason ``startCheck`` gives. It ends itself: the calibration check
        // it may wait for resumes it when that check ends, and its sleep is bounded (`turns`
        // checks' measured time, on `clock`). Nobody else ends it.
        Task {
            if estimate.secondsPerIteration == nil, case .running = calibration {
                await withCheckedContinuation { calibrationWaiters.append($0) }
            }
            let seconds = estimate.seconds(iterations: accounts.largestIterations)
            if let seconds {
                try? await clock.sleep(until: Timestamp(secondsSinceEpoch: start + seconds * Double(turns)), tolerance: nil)
            }
            unknownNameWaits -= 1
            settle(verifiedKey, key, accepted: seconds.map { _ in false }, generation: generation)
        }
    }

    /// Records a decided check (nil: never made) and answers every request waiting for it. A check
    /// begun before a reload is not remembered: its user may have changed.
    private func settle(_ verifiedKey: VerifiedCredentials.Key, _ key: LoginThrottle.Key, accepted: Bool?, generation: Int) {
        let settled = clock.now.secondsSinceEpoch
        if let accepted {
            throttle.finish(key, succeeded: accepted, now: settled)
        } else {
            throttle.abandon(key, now: settled)
        }
        if accepted == true, generation == self.generation {
            verified.insert(verifiedKey, name: key.user, until: settled + Self.cacheSeconds, now: settled)
        }
        for waiter in (checks.removeValue(forKey: verifiedKey) ?? [:]).values { waiter.resume(returning: accepted) }
    }

    /// The outcome of the check in flight for `verifiedKey`; nil when the waiting request is
    /// cancelled (shutdown does not wait for a password check).
    private func outcome(of verifiedKey: VerifiedCredentials.Key) async -> Bool? {
        let waiter = nextWaiter
        nextWaiter += 1
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard !Task.isCancelled, checks[verifiedKey] != nil else { return continuation.resume(returning: nil) }
                checks[verifiedKey]?[waiter] = continuation
            }
        } onCancel: {
            // The cancellation handler cannot wait for the actor: this hop does, and ends as soon
            // as the waiter is resumed. Nobody else ends it.
            Task { await self.stopWaiting(verifiedKey, waiter) }
        }
    }

    private func stopWaiting(_ verifiedKey: VerifiedCredentials.Key, _ waiter: Int) {
        checks[verifiedKey]?.removeValue(forKey: waiter)?.resume(returning: nil)
    }

    /// A hash with the largest iterations among the configured users', made once per largest count
    /// (one with fewer would answer faster than the slowest user's check): a random key, which no
    /// password derives, with a random salt.
    private func dummyHashForUnknownUsers() -> String {
        if let dummyHash { return dummyHash }
        var generator = SystemRandomNumberGenerator()
        let random = { (count: Int) in (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) } }
        let made =
            (try? PBKDF2PasswordHash(iterations: accounts.largestIterations, salt: random(16), key: random(PasswordHash.keyLength)).encoded)
            ?? ""
        dummyHash = made
        return made
    }
}
