/// Failed-login throttling, as a value: per (client, user) with exponential backoff, plus a
/// looser limit per client and one per user name across all clients, in tables of bounded size.
///
/// - A guess from one client never blocks the same user from another client: a real user is
///   never locked out by someone else's guesses unless they share an address, and then only for
///   the backoff (at most ``maximumBackoffSeconds``), never for good.
/// - A client past its own limit (many names guessed) is not refused outright: a name that has
///   not failed from it is still checked, so the right password gets in at its first try however
///   much its neighbours behind the same address guess; a name that has failed from it (or is
///   being checked) waits out the client's backoff. A guesser gets one try per name, not five.
/// - A name past its own limit (guessed at from many clients) backs off for every client: each
///   check of it that the verification cache does not answer waits out the name's backoff, so
///   guesses at one name from any number of addresses get one check per backoff. The cost, which
///   the name's real user bears: while the guessing lasts, a new sign-in waits at most
///   ``maximumBackoffSeconds`` a try (and shares each check with the guesses); sign-ins already
///   verified are not slowed. A success does not clear a name's failures, so signing in does not
///   hand a guesser a fresh allowance.
/// - Checks in flight count as failures until they are decided (``begin(_:now:)`` reserves,
///   ``finish(_:succeeded:now:)`` settles), so concurrent guesses cannot slip past the limit;
///   ``pendingChecks(ofName:)`` bounds a name's share of the checks in flight.
/// - Each table holds at most `capacity` entries: when full, forgotten entries and then the least
///   recently seen half of those under their limit are dropped (those backing off go last), so a
///   stream of random user names keeps memory flat and cannot wash out a name's backoff.
package struct LoginThrottle: Sendable {
    struct Key: Hashable, Sendable {
        var address: String
        var user: String
    }

    struct Record: Sendable {
        var failures = 0
        var pending = 0
        var lastFailure = 0.0
        var lastSeen = 0.0
    }

    /// What to do with an attempt.
    enum Decision: Equatable, Sendable {
        case proceed
        case wait(seconds: Int)
    }

    /// Failures per (address, user) before backoff starts.
    package static let freeFailures = 5
    /// Failures per address (any user) before that address backs off.
    package static let freeAddressFailures = 100
    /// Failures per user name (from any address) before that name backs off.
    package static let freeNameFailures = 20
    package static let maximumBackoffSeconds = 60.0
    /// A record with no failure for this long is forgotten.
    static let memorySeconds = 900.0

    let capacity: Int
    private(set) var byUser: [Key: Record] = [:]
    private(set) var byAddress: [String: Record] = [:]
    private(set) var byName: [String: Record] = [:]

    init(capacity: Int = 10_000) { self.capacity = max(2, capacity) }

    var count: Int { byUser.count + byAddress.count + byName.count }

    /// Whether `key` may try now.
    func decision(_ key: Key, now: Double) -> Decision {
        let user = byUser[key] ?? Record()
        if let wait = Self.wait(user, free: Self.freeFailures, now: now) { return .wait(seconds: Self.seconds(wait)) }
        // Past the client's limit only names that failed from it (or are being checked) wait.
        if Self.failures(user, now: now) + user.pending > 0, let address = byAddress[key.address],
            let wait = Self.wait(address, free: Self.freeAddressFailures, now: now)
        {
            return .wait(seconds: Self.seconds(wait))
        }
        if let name = byName[key.user], let wait = Self.wait(name, free: Self.freeNameFailures, now: now) {
            return .wait(seconds: Self.seconds(wait))
        }
        return .proceed
    }

    /// Checks of `name` reserved and not yet settled, from every address.
    func pendingChecks(ofName name: String) -> Int { byName[name]?.pending ?? 0 }

    /// Reserves a pending check for `key` (after ``decision(_:now:)`` said to proceed).
    mutating func begin(_ key: Key, now: Double) {
        Self.touch(&byUser, key, free: Self.freeFailures, capacity: capacity, now: now) { $0.pending += 1 }
        Self.touch(&byAddress, key.address, free: Self.freeAddressFailures, capacity: capacity, now: now) { $0.pending += 1 }
        Self.touch(&byName, key.user, free: Self.freeNameFailures, capacity: capacity, now: now) { $0.pending += 1 }
    }

    /// Releases a check reserved by ``begin(_:now:)`` that was never decided (no thread took it).
    mutating func abandon(_ key: Key, now: Double) {
        Self.touch(&byUser, key, free: Self.freeFailures, capacity: capacity, now: now) { $0.pending = max(0, $0.pending - 1) }
        Self.touch(&byAddress, key.address, free: Self.freeAddressFailures, capacity: capacity, now: now) {
            $0.pending = max(0, $0.pending - 1)
        }
        Self.touch(&byName, key.user, free: Self.freeNameFailures, capacity: capacity, now: now) { $0.pending = max(0, $0.pending - 1) }
    }

    /// Settles a check reserved by ``begin(_:now:)``.
    mutating func finish(_ key: Key, succeeded: Bool, now: Double) {
        let settle = { (record: inout Record) in
            record.pending = max(0, record.pending - 1)
            if !succeeded {
                record.failures += 1
                record.lastFailure = now
            }
        }
        Self.touch(&byAddress, key.address, free: Self.freeAddressFailures, capacity: capacity, now: now, settle)
        Self.touch(&byName, key.user, free: Self.freeNameFailures, capacity: capacity, now: now, settle)
        if succeeded {
            byUser[key] = nil
            return
        }
        Self.touch(&byUser, key, free: Self.freeFailures, capacity: capacity, now: now, settle)
    }

    /// Failures not yet forgotten.
    static func failures(_ record: Record, now: Double) -> Int { now - record.lastFailure > memorySeconds ? 0 : record.failures }

    static func seconds(_ wait: Double) -> Int { max(1, Int(wait.rounded(.up))) }

    /// Seconds to wait, or nil. Pending checks count as failures (they may be).
    static func wait(_ record: Record, free: Int, now: Double) -> Double? {
        let failures = failures(record, now: now)
        if failures + record.pending < free { return nil }
        if failures < free { return 1 }  // only pending checks over the limit: wait for them
        let backoff = min(maximumBackoffSeconds, Double(1 << min(failures - free, 16)))
        let remaining = record.lastFailure + backoff - now
        return remaining > 0 ? remaining : nil
    }

    static func touch<K: Hashable>(
        _ table: inout [K: Record], _ key: K, free: Int, capacity: Int, now: Double, _ change: (inout Record) -> Void
    ) {
        if table[key] == nil, table.count >= capacity { shrink(&table, free: free, capacity: capacity, now: now) }
        var record = table[key] ?? Record()
        if now - record.lastFailure > memorySeconds, record.pending == 0 { record.failures = 0 }
        change(&record)
        record.lastSeen = now
        table[key] = record
    }

    /// Drops forgotten records, then keeps half the capacity: records with checks in flight, then
    /// those at or past their limit of `free` failures (a flood of fresh names cannot wash out a
    /// backoff), then the most recently seen.
    static func shrink<K: Hashable>(_ table: inout [K: Record], free: Int, capacity: Int, now: Double) {
        table = table.filter { $0.value.pending > 0 || now - $0.value.lastFailure <= memorySeconds }
        guard table.count >= capacity else { return }
        let keep = table.sorted { lhs, rhs in
            let (left, right) = (failures(lhs.value, now: now) >= free, failures(rhs.value, now: now) >= free)
            return left != right ? left : lhs.value.lastSeen > rhs.value.lastSeen
        }
        .prefix(capacity / 2)
        var kept = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        for (key, record) in table where record.pending > 0 { kept[key] = record }
        table = kept
    }
}
