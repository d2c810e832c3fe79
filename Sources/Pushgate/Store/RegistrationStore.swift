import Synchronization

/// Where registrations live. The gateway's only persistence seam; ``InMemoryRegistrationStore``
/// and the SQLite store implement it.
public protocol RegistrationStore: Sendable {
    /// A new registration id, reserved for `owner` until it is used or expires
    /// (`POST /api/register`). Fails with `.limitReached` when `owner` already holds
    /// `maximumReserved` unused reservations.
    /// `lifetime`: how long the reservation lasts, in seconds (nil: the store's
    /// `reservationLifetime`).
    func createRegistrationID(
        app: AppID, owner: String, maximumReserved: Int, lifetime: Double?, now: Timestamp
    ) async throws(StoreError)
        -> RegistrationID
    /// Ids of registrations holding `handle` (`POST /api/register?handle=`).
    func registrationIDs(handle: String, app: AppID) async throws(StoreError) -> [RegistrationID]
    /// Ids of the registrations whose handle begins with `handlePrefix` (byte for byte), in id
    /// order: the browser subscriptions of one endpoint
    /// (``WebPushSubscription/handlePrefix(endpoint:)``).
    func registrationIDs(handlePrefix: String, app: AppID) async throws(StoreError) -> [RegistrationID]
    /// Creates or replaces a registration. Fails with `.gone` when the id was never issued or has
    /// expired (the tutorial client re-registers on 410). With a `writer`, first checks what the
    /// writer may not take from another user (``WriterGuard``), in the write's own transaction: no
    /// other write comes between the check and the write, and the whole call is one trip to the
    /// store.
    func upsert(_ registration: Registration, now: Timestamp, writer: WriterGuard?) async throws(StoreError)
    func registration(id: RegistrationID, app: AppID) async throws(StoreError) -> Registration?
    /// How many registrations `app` has, counted up to `limit` (a hub's quota of devices).
    func registrationCount(app: AppID, upTo limit: Int) async throws(StoreError) -> Int
    /// Deletes a registration; false when there was none.
    func delete(id: RegistrationID, app: AppID) async throws(StoreError) -> Bool
    /// Registrations of every kind (devices and Live Activity tokens: a listing, an export) on
    /// `platforms` whose tags satisfy `expression` (every one when nil), ordered by id, after `after` when given, in batches of at most `batchSize` (never all at once).
    /// Expired ones are left out.
    func registrations(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, batchSize: Int, now: Timestamp,
        after: RegistrationID?
    )
        -> AsyncThrowingStream<[Registration], any Error>
    /// The delivery targets of a send: the id and handle of each registration that
    /// ``registrations(matching:platforms:app:batchSize:now:)`` would list, in the same order, one
    /// page of at most `pageSize` per step of the sequence. Pages are read only when asked for: a
    /// send pulls the next page when it has room for it, so nothing is read ahead of delivery and
    /// memory follows the page size, not the audience.
    /// `selector` says which kind of registration (devices for every ordinary send).
    func deliveryTargets(
        selecting selector: RegistrationSelector, platforms: PlatformSelection, app: AppID, pageSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[DispatchTarget], any Error>
    /// Writes `registrations` as they are, keeping their ids (no reservation needed): restoring an
    /// export. All or nothing: when one cannot be written, none is.
    func restore(_ registrations: [Registration], now: Timestamp) async throws(StoreError)
    /// Writes the registrations of every batch of `batches` as ``restore(_:now:)`` does, all in one
    /// transaction: an import of an export. Each batch is written as it comes (the next one is read
    /// while the last is written), so memory holds two batches whatever the import's size; nothing
    /// is visible to anyone else until the sequence has ended and the transaction committed. When
    /// the sequence throws (a bad line) or a write fails, the transaction is rolled back: nothing of
    /// the import is written, and the error says which side failed. Returns how many registrations
    /// were written.
    ///
    /// ```swift
    /// let written = try await store.importRegistrations(batches, now: now)  // batches: [Registration]s
    /// ```
    func importRegistrations<Batches: AsyncSequence<[Registration], Failure> & Sendable, Failure: Error>(
        _ batches: Batches, now: Timestamp
    ) async throws(RegistrationImportFailure<Failure>) -> Int
    /// Writes `registrations` as ``restore(_:now:)`` does and deletes the registrations `removing`
    /// of `app`, in one transaction: an installation and the templates it no longer has change
    /// together or not at all.
    func replace(_ registrations: [Registration], removing: [RegistrationID], app: AppID, now: Timestamp) async throws(StoreError)
    /// Writes and removes a hub write's registrations in one transaction, when its conditions hold
    /// there (``HubWrite``): `.changed` when a registration it read has changed since, `.conflict`
    /// when a new id is reserved by a user.
    func write(_ write: HubWrite, now: Timestamp) async throws(StoreError)
    /// Applies what the push services said about handles: removes gone ones (recording when, which
    /// handle and why) and replaces canonical ones. The webhook events `events` makes of each
    /// change are written in the same transaction (outbox rows, ``HandleChangeEvents``).
    func apply(_ changes: [StoredHandleChange], app: AppID, now: Timestamp, events: HandleChangeEvents) async throws(StoreError)
    /// The recorded removals, newest first.
    func removals(app: AppID, limit: Int) async throws(StoreError) -> [HandleRemoval]
    /// The templates of those of `ids` that have one (a page of a hub-API send: which targets are
    /// template registrations, and what each renders).
    func templates(of ids: [RegistrationID], app: AppID) async throws(StoreError) -> [RegistrationID: RegistrationTemplate]
}

extension RegistrationStore {
    /// Applies handle changes with no webhook events.
    public func apply(_ changes: [StoredHandleChange], app: AppID, now: Timestamp) async throws(StoreError) {
        try await apply(changes, app: app, now: now, events: .none)
    }

    /// Creates or replaces a registration, checking nobody's ownership.
    public func upsert(_ registration: Registration, now: Timestamp) async throws(StoreError) {
        try await upsert(registration, now: now, writer: nil)
    }

    /// One lookup per id; a database store answers a page in one query.
    public func templates(of ids: [RegistrationID], app: AppID) async throws(StoreError) -> [RegistrationID: RegistrationTemplate] {
        var found: [RegistrationID: RegistrationTemplate] = [:]
        for id in ids {
            if let template = try await registration(id: id, app: app)?.template { found[id] = template }
        }
        return found
    }
}

extension RegistrationStore {
    /// The devices a send with tag expression `expression` reaches (every device when nil).
    public func deliveryTargets(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, pageSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[DispatchTarget], any Error> {
        deliveryTargets(selecting: .devices(expression), platforms: platforms, app: app, pageSize: pageSize, now: now)
    }

    /// Every matching registration, from the first.
    public func registrations(
        matching expression: TagExpression?, platforms: PlatformSelection, app: AppID, batchSize: Int, now: Timestamp
    ) -> AsyncThrowingStream<[Registration], any Error> {
        registrations(matching: expression, platforms: platforms, app: app, batchSize: batchSize, now: now, after: nil)
    }

    /// A new registration id with no per-owner cap (tools and tests).
    public func createRegistrationID(app: AppID, now: Timestamp) async throws(StoreError) -> RegistrationID {
        try await createRegistrationID(app: app, owner: "", maximumReserved: .max, lifetime: nil, now: now)
    }

    /// A new registration id reserved for `owner` for the store's `reservationLifetime`.
    public func createRegistrationID(
        app: AppID, owner: String, maximumReserved: Int, now: Timestamp
    ) async throws(StoreError)
        -> RegistrationID
    {
        try await createRegistrationID(app: app, owner: owner, maximumReserved: maximumReserved, lifetime: nil, now: now)
    }
}

/// A handle change to store: remove the registration, or replace its handle.
public struct StoredHandleChange: Sendable, Hashable {
    public var registrationID: RegistrationID
    public var change: HandleChange
    public var outcome: Outcome
    public var reason: String?

    public init(registrationID: RegistrationID, change: HandleChange, outcome: Outcome, reason: String?) {
        self.registrationID = registrationID
        self.change = change
        self.outcome = outcome
        self.reason = reason
    }
}

/// A registration removed because its service said the handle is gone.
public struct HandleRemoval: Sendable, Hashable, Codable {
    public var registrationID: RegistrationID
    public var platform: Platform
    /// The handle, masked.
    public var handle: String
    public var outcome: Outcome
    public var reason: String?
    public var removedAt: Timestamp

    public init(registrationID: RegistrationID, platform: Platform, handle: String, outcome: Outcome, reason: String?, removedAt: Timestamp)
    {
        self.registrationID = registrationID
        self.platform = platform
        self.handle = handle
        self.outcome = outcome
        self.reason = reason
        self.removedAt = removedAt
    }
}

/// A store operation failed.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The registration id is unknown or expired (HTTP 410 Gone).
        case gone
        /// The storage failed (disk, corruption, locking).
        case storage
        /// A per-user limit was reached (HTTP 429).
        case limitReached
        /// The database cannot be reached (down, restarting, or no connection free in time): HTTP
        /// 503, and the call may be retried.
        case unavailable
        /// The write would take another user's registration (HTTP 403).
        case forbidden
        /// The write would take a device another user's registration holds, or an id another user
        /// reserved (HTTP 409).
        case conflict
        /// A registration changed between the read a write was decided on and the write (a
        /// compare-and-set lost, ``HubWrite``): read again and decide again (HTTP 409 if it keeps
        /// changing).
        case changed
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public static func gone(_ id: RegistrationID) -> StoreError { StoreError(.gone, "registration \(id) is unknown or has expired") }

    public static func tooManyReservations(_ limit: Int) -> StoreError {
        StoreError(
            .limitReached,
            "too many unused registration ids: at most \(limit) held at once by one user or key; use one or wait until they expire")
    }

    public var description: String { message }
}

/// What a user writing a registration may not take from another user: a registration id that is
/// theirs, or a device (a handle, or a browser endpoint's subscriptions) that their registration
/// holds. Every store checks it in the write's own transaction, by this one rule
/// (``refusal(id:idOwner:handleHeldByAnother:)``).
public struct WriterGuard: Sendable, Hashable {
    /// The user writing.
    public var owner: String
    /// The handle as it is stored: no other user's registration may hold it.
    public var handle: String
    /// No other user's registration may hold a handle beginning with one of these (the
    /// subscriptions of a browser's endpoint, ``WebPushSubscription/handlePrefix(endpoint:)``).
    public var handlePrefixes: [String]
    /// The most registrations the user's own tag (`username:<owner>`, which only they and admins
    /// give) may be on when this write adds a registration; nil: no cap.
    public var maximumRegistrations: Int?

    public init(owner: String, handle: String, handlePrefixes: [String] = [], maximumRegistrations: Int? = nil) {
        self.owner = owner
        self.handle = handle
        self.handlePrefixes = handlePrefixes
        self.maximumRegistrations = maximumRegistrations
    }

    /// The user's own tag, whose registrations ``maximumRegistrations`` counts.
    public var ownTag: String { "username:" + owner }

    /// The refusal of adding a registration when `count` registrations (counted up to
    /// ``maximumRegistrations``) carry the user's own tag.
    public func refusal(registrationsTagged count: Int) -> StoreError? {
        guard let maximumRegistrations, count >= maximumRegistrations else { return nil }
        return StoreError(
            .limitReached,
            "too many registrations: at most \(maximumRegistrations) per user (limits.maxRegistrationsPerUser); delete one first")
    }

    /// The refusal of taking reserved id `id` that `reserver` reserved (empty for ids reserved
    /// before reservations kept their owner): an id one user reserved is that user's to write.
    public func refusal(id: RegistrationID, reservedBy reserver: String) -> StoreError? {
        guard !reserver.isEmpty, reserver != owner else { return nil }
        return StoreError(.forbidden, "registration \(id) is reserved by another user; reserve an id of your own")
    }

    /// The refusal of writing registration `id`, whose stored owner is `idOwner` (nil: not stored
    /// yet), when another user's registration other than `id` holds the handle
    /// (`handleHeldByAnother`); nil when the write may go on.
    public func refusal(id: RegistrationID, idOwner: RegistrationOwner?, handleHeldByAnother: Bool) -> StoreError? {
        if let idOwner, !idOwner.isUser(owner) { return StoreError(.forbidden, "registration \(id) belongs to another user") }
        if handleHeldByAnother {
            return StoreError(
                .conflict,
                "Handle: this device is registered by another user; that user must delete that registration first")
        }
        return nil
    }
}

/// Where a paged walk of registrations stands: after which id it goes on, or finished. Each
/// store's page sequence advances one; its steps run one at a time, the lock makes that safe to
/// share with the sequence's `@Sendable` closure.
public final class PageCursor: Sendable {
    private struct State: Sendable {
        var after: RegistrationID?
        var finished = false
    }

    private let state = Mutex(State())

    public init() {}

    /// nil once the walk is finished; otherwise `.some(nil)` at the start, or the last id read.
    public var position: RegistrationID?? {
        state.withLock { $0.finished ? nil : .some($0.after) }
    }

    /// Records a page: the walk goes on after `last`, and ends with a page that was not full.
    public func advance(past last: RegistrationID?, full: Bool) {
        state.withLock {
            if let last { $0.after = last }
            if !full { $0.finished = true }
        }
    }
}
