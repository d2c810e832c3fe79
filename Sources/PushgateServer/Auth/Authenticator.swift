import Crypto
import Foundation
import Pushgate
import PushgateCore

/// Basic authentication against configured users (PBKDF2 hashes), or — only when explicitly
/// configured, for demos — the tutorials' "password equals user name" rule.
///
/// Successful verifications are remembered for a few minutes (the tutorial client sends its Basic
/// header on every call, and each PBKDF2 check costs tens of milliseconds); identical checks in
/// flight are made once. Checks run on a ``PasswordCheckPool`` of their own, never on the threads
/// that serve requests; when it holds all it admits, the answer is ``Verdict/busy(retryAfterSeconds:)``.
/// Failures are throttled per (client, user) with backoff, and per client (``LoginThrottle``);
/// who the client is, ``clients`` decides. An unknown user name costs a PBKDF2 check against a
/// dummy hash, so the answer's timing does not tell which names exist. Every table is bounded.
public actor Authenticator {
    public enum Verdict: Sendable, Equatable {
        case user(AuthenticatedUser)
        /// No or malformed `Authorization` header.
        case missing
        /// Wrong user name or password.
        case refused
        /// Too many failures for this user from this client recently: try again after the delay.
        case rateLimited(retryAfterSeconds: Int)
        /// Every password check the pool admits is taken: try again after the delay.
        case busy(retryAfterSeconds: Int)
    }

    /// Who may log in, as the configuration says (a reload replaces it).
    private struct Accounts {
        let users: [String: String]
        let admins: Set<String>
        let demoPasswordEqualsName: Bool

        init(_ configuration: AuthConfiguration) {
            users = Dictionary(configuration.users.map { ($0.name, $0.passwordHash) }, uniquingKeysWith: { first, _ in first })
            admins = Set(configuration.admins)
            demoPasswordEqualsName = configuration.demoPasswordEqualsName
        }
    }
    private var accounts: Accounts
    /// Who a request comes from: the peer, or the address a trusted proxy forwarded.
    public nonisolated let clients: ClientAddressResolver
    private let pool: PasswordCheckPool
    private let verify: @Sendable (_ password: String, _ encoded: String) -> Bool
    private let clock: any PushgateClock
    private var verified: [String: Double] = [:]
    /// Checks admitted to the pool, by credentials digest, with the requests waiting for each.
    private var checks: [String: [Int: CheckedContinuation<Bool?, Never>]] = [:]
    private var nextWaiter = 0
    private var throttle: LoginThrottle
    private var dummyHash: String?
    private let tableCapacity: Int

    public static let cacheSeconds = 300.0
    /// Longest `Authorization` header looked at; longer ones are refused unread.
    public static let maximumHeaderBytes = 4096

    public init(
        configuration: AuthConfiguration, trustedProxies: [IPAddressRange] = [], pool: PasswordCheckPool = PasswordCheckPool(),
        tableCapacity: Int = 10_000, clock: any PushgateClock = SystemClock()
    ) {
        self.init(
            configuration: configuration, trustedProxies: trustedProxies, pool: pool, tableCapacity: tableCapacity, clock: clock,
            verify: PasswordHash.verify)
    }

    /// With the password check given (tests hold one on the pool's thread).
    package init(
        configuration: AuthConfiguration, trustedProxies: [IPAddressRange] = [], pool: PasswordCheckPool = PasswordCheckPool(),
        tableCapacity: Int = 10_000, clock: any PushgateClock = SystemClock(),
        verify: @escaping @Sendable (_ password: String, _ encoded: String) -> Bool
    ) {
        accounts = Accounts(configuration)
        clients = ClientAddressResolver(trustedProxies: trustedProxies)
        self.pool = pool
        self.verify = verify
        self.clock = clock
        self.tableCapacity = tableCapacity
        throttle = LoginThrottle(capacity: tableCapacity)
    }

    /// Takes reloaded users and admins; credentials verified before are verified again, and the
    /// unknown users' dummy hash follows the new users' iterations.
    public func reload(_ configuration: AuthConfiguration) {
        accounts = Accounts(configuration)
        verified.removeAll()
        dummyHash = nil
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
        let user = AuthenticatedUser(name: name, isAdmin: accounts.admins.contains(name))
        // Hex by hand: String(format:) per byte cost more than the hash, on every request.
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for byte in SHA256.hash(data: Data("\(name)\u{0}\(password)".utf8)) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        let cacheKey = String(decoding: hex, as: UTF8.self)
        let time = clock.now.secondsSinceEpoch
        if let until = verified[cacheKey], time < until { return .user(user) }

        // The same credentials already being checked: the same guess, answered once.
        if checks[cacheKey] != nil { return Self.verdict(await outcome(of: cacheKey), user) }

        let key = LoginThrottle.Key(address: address, user: name)
        if case .wait(let seconds) = throttle.decision(key, now: time) { return .rateLimited(retryAfterSeconds: seconds) }
        let hash = accounts.users[name]
        if hash == nil, accounts.demoPasswordEqualsName {
            // No hash, no pool: the demo rule is a comparison.
            let accepted = PasswordHash.constantTimeEqual(Array(name.utf8), Array(password.utf8))
            settle(cacheKey, key, accepted: accepted)
            return Self.verdict(accepted, user)
        }
        guard checks.count < pool.capacity else { return .busy(retryAfterSeconds: PasswordCheckPool.retryAfterSeconds) }
        throttle.begin(key, now: time)
        checks[cacheKey] = [:]
        // An unknown name costs a check against a dummy hash of the same cost, so both take as long.
        let encoded = hash ?? dummyHashForUnknownUsers()
        let verify = self.verify
        let known = hash != nil
        Task { [pool] in
            let matched = await pool.run { verify(password, encoded) }
            settle(cacheKey, key, accepted: matched.map { $0 && known })
        }
        return Self.verdict(await outcome(of: cacheKey), user)
    }

    private static func verdict(_ accepted: Bool?, _ user: AuthenticatedUser) -> Verdict {
        switch accepted {
        case true?: .user(user)
        case false?: .refused
        case nil: .busy(retryAfterSeconds: PasswordCheckPool.retryAfterSeconds)
        }
    }

    /// Records a decided check (nil: never made) and answers every request waiting for it.
    private func settle(_ cacheKey: String, _ key: LoginThrottle.Key, accepted: Bool?) {
        let settled = clock.now.secondsSinceEpoch
        if let accepted {
            throttle.finish(key, succeeded: accepted, now: settled)
        } else {
            throttle.abandon(key, now: settled)
        }
        if accepted == true {
            if verified[cacheKey] == nil, verified.count >= tableCapacity {
                verified = verified.filter { $0.value > settled }
                if verified.count >= tableCapacity { verified.removeAll(keepingCapacity: true) }
            }
            verified[cacheKey] = settled + Self.cacheSeconds
        }
        for waiter in (checks.removeValue(forKey: cacheKey) ?? [:]).values { waiter.resume(returning: accepted) }
    }

    /// The outcome of the check in flight for `cacheKey`; nil when the waiting request is
    /// cancelled (shutdown does not wait for a password check).
    private func outcome(of cacheKey: String) async -> Bool? {
        let waiter = nextWaiter
        nextWaiter += 1
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard !Task.isCancelled, checks[cacheKey] != nil else { return continuation.resume(returning: nil) }
                checks[cacheKey]?[waiter] = continuation
            }
        } onCancel: {
            Task { await self.stopWaiting(cacheKey, waiter) }
        }
    }

    private func stopWaiting(_ cacheKey: String, _ waiter: Int) {
        checks[cacheKey]?.removeValue(forKey: waiter)?.resume(returning: nil)
    }

    /// A hash with the iterations of a configured user's, made once per set of users: a random
    /// key, which no password derives, with a random salt.
    private func dummyHashForUnknownUsers() -> String {
        if let dummyHash { return dummyHash }
        let iterations =
            accounts.users.values.lazy.compactMap { try? PBKDF2PasswordHash(parsing: $0).iterations }.first
            ?? PasswordHash.defaultIterations
        var generator = SystemRandomNumberGenerator()
        let random = { (count: Int) in (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) } }
        let made = (try? PBKDF2PasswordHash(iterations: iterations, salt: random(16), key: random(PasswordHash.keyLength)).encoded) ?? ""
        dummyHash = made
        return made
    }
}
