/// A write through the Notification Hubs API: registrations written and removed together, on two
/// conditions every store checks in the write's own transaction (a compare-and-set), so that no
/// other write comes between what the hub's rules read and what they write.
///
/// - Each registration ``expected`` names must still be stored as it was read (nil: still not
///   stored); else ``StoreError/Kind/changed``, and the caller reads again and decides again. A
///   device key's write racing a backend's bind of the same installation cannot drop the binding.
/// - A registration id written that is not stored yet must not be reserved, unused, by a user of
///   the tutorial API (``refusal(id:reservedBy:)``): an id a user reserved is that user's to write.
public struct HubWrite: Sendable, Hashable {
    public var app: AppID
    public var registrations: [Registration]
    public var removing: [RegistrationID]
    /// The registrations as the hub's rules read them, by id; nil: not stored then.
    public var expected: [RegistrationID: Registration?]

    public init(app: AppID, registrations: [Registration], removing: [RegistrationID] = [], expected: [RegistrationID: Registration?]) {
        self.app = app
        self.registrations = registrations
        self.removing = removing
        self.expected = expected
    }

    /// The refusal of one expected registration found otherwise (`stored`).
    public func refusal(id: RegistrationID, stored: Registration?) -> StoreError? {
        guard let wanted = expected[id], wanted != stored else { return nil }
        return StoreError(.changed, "registration \(id) changed while it was being written; read it again")
    }

    /// The refusal of writing new id `id` that `reserver` holds reserved: only ids reserved through
    /// the hub API (any of its keys) or by nobody in particular (empty) are the hub's to take.
    public func refusal(id: RegistrationID, reservedBy reserver: String) -> StoreError? {
        guard !reserver.isEmpty, !RegistrationOwner.isHubKeyReservation(reserver) else { return nil }
        return StoreError(.conflict, "registration \(id) is reserved by a user of this gateway; reserve an id through POST registrationIDs")
    }
}
