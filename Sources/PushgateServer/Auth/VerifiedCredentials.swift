import Crypto
import Foundation

/// Credentials verified recently, each remembered until a time, as a value; bounded.
///
/// An entry's key is an HMAC-SHA256 of `name:password` under a random key of this table's own (one
/// per process), never a plain hash, so a table read from memory cannot be checked against
/// guessed passwords offline. Basic authentication ends the name at its first colon, so no two
/// (name, password) pairs share a message. Each entry keeps its user name, so a reload drops only
/// the users it changed (``removeAll(where:)``).
struct VerifiedCredentials {
    typealias Key = HashedAuthenticationCode<SHA256>

    private struct Entry {
        let name: String
        let until: Double
    }

    let capacity: Int
    private let secret = SymmetricKey(size: .bits256)
    private var entries: [Key: Entry] = [:]

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { entries.count }

    /// The key of `name` with `password`.
    func key(name: String, password: String) -> Key {
        HMAC<SHA256>.authenticationCode(for: Data("\(name):\(password)".utf8), using: secret)
    }

    /// Whether `key` was verified and is remembered at `now`.
    func contains(_ key: Key, now: Double) -> Bool { entries[key].map { now < $0.until } ?? false }

    /// Remembers `key`, of the user `name`, until `until`. When the table is full, expired entries
    /// go first, then all of them.
    mutating func insert(_ key: Key, name: String, until: Double, now: Double) {
        if entries[key] == nil, entries.count >= capacity {
            entries = entries.filter { $0.value.until > now }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
        }
        entries[key] = Entry(name: name, until: until)
    }

    /// Forgets the entries of every user `drop` names.
    mutating func removeAll(where drop: (String) -> Bool) {
        entries = entries.filter { !drop($0.value.name) }
    }
}
