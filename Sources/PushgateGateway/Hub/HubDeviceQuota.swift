import Pushgate

/// A hub's quota of active devices (`limits.maxHubDevices`), as a value: whether one more
/// registration may be created, decided from a count of the hub's registrations and the creations
/// since, so that a creation costs no count of a store of millions.
///
/// The count is taken when the quota is first asked, and again (at most every
/// ``recountSeconds``) once what was counted plus what was created since comes within a tenth of
/// the quota: deletions are seen at the next count. Registrations written through the tutorial API
/// count too; it has its own per-user cap.
struct HubDeviceQuota: Sendable {
    /// What to do with a creation.
    enum Decision: Equatable, Sendable {
        case admit
        /// Count the hub's registrations (up to the quota) and ask again with ``counted(_:at:)``.
        case count
        case refuse
    }

    let maximum: Int
    static let recountSeconds = 60.0
    private(set) var counted: Int?
    private var countedAt = 0.0
    private(set) var createdSince = 0

    init(maximum: Int) { self.maximum = max(1, maximum) }

    func decide(now: Double) -> Decision {
        guard let counted else { return .count }
        let estimate = counted + createdSince
        if estimate < maximum - max(1, maximum / 10) { return .admit }
        if now - countedAt >= Self.recountSeconds { return .count }
        return estimate < maximum ? .admit : .refuse
    }

    /// Takes a count made at `now`.
    mutating func counted(_ count: Int, at now: Double) {
        counted = count
        countedAt = now
        createdSince = 0
    }

    /// A creation admitted.
    mutating func created() { createdSince += 1 }
}
