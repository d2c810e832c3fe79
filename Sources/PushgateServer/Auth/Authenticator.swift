import Crypto
import Foundation
import Pushgate
import PushgateCore

/// Basic authentication against configured users (PBKDF2 hashes), or — only when explicitly
/// configured, for demos — the tutorials' "password equals user name" rule.
///
/// Successful verifications are remembered for a few minutes (the tutorial client sends its Basic
/// header on every call, and each PBKDF2 check costs tens of milliseconds); identical checks in
/// flight are made once. Failures are throttled per (address, user) with backoff
/// (``LoginThrottle``). An unknown user name costs a PBKDF2 check against a dummy hash, so the
/// answer's timing does not tell which names exist. Every table is bounded.
public actor Authenticator {
    public enum Verdict: Sendable, Equatable {
        case user(AuthenticatedUser)
        /// No or malformed `Authorization` header.
        case missing
        /// Wrong user name or password.
        case refused
        /// Too many failures for this user from this address recently: try again after the delay.
        case rateLimited(retryAfterSeconds: Int)
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
    private let clock: any PushgateClock
    private var verified: [String: Double] = [:]
    private var checks: [String: Task<Bool, Never>] = [:]
    private var throttle: LoginThrottle
    private var dummyHash: String?
    private let tableCapacity: Int

    public static let cacheSeconds = 300.0
    /// Longest `Authorization` header looked at; longer ones are refused unread.
    public static let maximumHeaderBytes = 4096

    public init(
        configuration: AuthConfiguration, tableCapacity: Int = 10_000, clock: any PushgateClock = SystemClock()
    ) {
        accounts = Accounts(configuration)
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

    /// Checks an `Authorization` header value sent from `address`.
    public func authenticate(_ header: String?, from address: String = "local") async -> Verdict {
        guard let header, header.utf8.count <= Self.maximumHeaderBytes, header.count > 6, header.prefix(6).lowercased() == "basic ",
            let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
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
        if let running = checks[cacheKey] { return await running.value ? .user(user) : .refused }

        let key = LoginThrottle.Key(address: address, user: name)
        if case .wait(let seconds) = throttle.begin(key, now: time) { return .rateLimited(retryAfterSeconds: seconds) }
        let check = verification(name: name, password: password)
        checks[cacheKey] = check
        let accepted = await check.value
        checks[cacheKey] = nil
        let settled = clock.now.secondsSinceEpoch
        throttle.finish(key, succeeded: accepted, now: settled)
        guard accepted else { return .refused }
        if verified[cacheKey] == nil, verified.count >= tableCapacity {
            verified = verified.filter { $0.value > settled }
            if verified.count >= tableCapacity { verified.removeAll(keepingCapacity: true) }
        }
        verified[cacheKey] = settled + Self.cacheSeconds
        return .user(user)
    }

    /// The password check, off the actor: PBKDF2 against the user's hash, or against a dummy hash
    /// of the same cost when the name is unknown (so both take as long).
    private func verification(name: String, password: String) -> Task<Bool, Never> {
        if let hash = accounts.users[name] {
            return Task.detached { PasswordHash.verify(password: password, encoded: hash) }
        }
        if accounts.demoPasswordEqualsName {
            let accepted = PasswordHash.constantTimeEqual(Array(name.utf8), Array(password.utf8))
            return Task { accepted }
        }
        let dummy = dummyHashForUnknownUsers()
        return Task.detached {
            _ = PasswordHash.verify(password: password, encoded: dummy)
            return false
        }
    }

    /// A hash with the iterations of the configured users' (the first one's), made once per set of users.
    private func dummyHashForUnknownUsers() -> String {
        if let dummyHash { return dummyHash }
        let iterations =
            accounts.users.values.first.flatMap { Int($0.split(separator: "$").dropFirst().first ?? "") } ?? PasswordHash.defaultIterations
        let made = (try? PasswordHash.make(password: UUID().uuidString, iterations: iterations)) ?? ""
        dummyHash = made
        return made
    }
}
