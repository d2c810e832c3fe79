import Foundation
import Pushgate
import PushgatePostgres
import PushgateSQLite
import Testing

/// Makes a fresh store of each kind; the same behaviour is expected of all three. PostgreSQL's
/// runs when `PUSHGATE_TEST_POSTGRES` names a server (scripts/test.sh starts one), each test in a
/// database of its own.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, sqlite, postgres

    static var allCases: [StoreKind] { PostgresTesting.isAvailable ? [.memory, .sqlite, .postgres] : [.memory, .sqlite] }

    var testDescription: String { rawValue }

    func make(reservationLifetime: Double = 3600) async throws -> (any GatewayStore, String?) {
        switch self {
        case .memory:
            return (InMemoryRegistrationStore(reservationLifetime: reservationLifetime), nil)
        case .sqlite:
            let path = NSTemporaryDirectory() + "pushgate-store-\(UUID().uuidString).sqlite"
            return (try await SQLiteStore.open(path: path, reservationLifetime: reservationLifetime), path)
        case .postgres:
            return (try await PostgresTesting.freshStore(reservationLifetime: reservationLifetime), nil)
        }
    }
}

func cleanUp(_ path: String?) {
    guard let path else { return }
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

let start = Timestamp(secondsSinceEpoch: 1_800_000_000)

func registration(
    _ id: RegistrationID, _ platform: Platform = .apns, handle: String? = nil, tags: [String], owner: String = "alice",
    expiresAt: Timestamp? = nil
) throws
    -> Registration
{
    try Registration(
        id: id, handle: DeviceHandle(uncheckedPlatform: platform, value: handle ?? "h-\(id.rawValue)"), tags: tags.map { try Tag($0) },
        expiresAt: expiresAt, owner: owner)
}

func collect(_ stream: AsyncThrowingStream<[Registration], any Error>) async throws -> [[Registration]] {
    var batches: [[Registration]] = []
    for try await batch in stream { batches.append(batch) }
    return batches
}

@Suite struct RegistrationStoreTests {
    /// A user's write checks, in its own transaction, that the id is unused or theirs and that no
    /// other user's registration holds the device (a handle, or another subscription of the same
    /// browser endpoint); without a writer (an admin) nothing is checked. Refusals name what is
    /// wrong and write nothing.
    @Test(arguments: StoreKind.allCases)
    func aWritersUpsertRefusesAnotherUsersIdOrDevice(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let aliceID = try await store.createRegistrationID(app: .default, owner: "alice", maximumReserved: 10, now: start)
        let bobID = try await store.createRegistrationID(app: .default, owner: "bob", maximumReserved: 10, now: start)
        let alice = WriterGuard(owner: "alice", handle: "device-1")
        try await store.upsert(try registration(aliceID, handle: "device-1", tags: ["a"]), now: start, writer: alice)

        func refusal(_ body: () async throws(StoreError) -> Void) async -> StoreError? {
            do { try await body() } catch { return error }
            return nil
        }
        // Bob may not take alice's id, nor her device under his own id.
        let forbidden = await refusal { () throws(StoreError) in
            try await store.upsert(
                try! registration(aliceID, handle: "device-2", tags: ["b"], owner: "bob"), now: start,
                writer: WriterGuard(owner: "bob", handle: "device-2"))
        }
        #expect(forbidden?.kind == .forbidden && forbidden?.message == "registration \(aliceID) belongs to another user")
        let conflict = await refusal { () throws(StoreError) in
            try await store.upsert(
                try! registration(bobID, handle: "device-1", tags: ["b"], owner: "bob"), now: start,
                writer: WriterGuard(owner: "bob", handle: "device-1"))
        }
        #expect(conflict?.kind == .conflict && conflict?.message.hasPrefix("Handle: this device is registered by another user") == true)
        #expect(try await store.registration(id: aliceID, app: .default)?.handle.value == "device-1", "nothing written")
        #expect(try await store.registration(id: bobID, app: .default) == nil)

        // Another subscription of alice's browser endpoint is her device too.
        let endpoint = "https://fcm.googleapis.com/fcm/send/abc"
        func subscription(_ auth: UInt8) -> String {
            WebPushSubscription(endpoint: endpoint, p256dh: Array(repeating: 4, count: 65), auth: Array(repeating: auth, count: 16))
                .handleValue
        }
        let browserID = try await store.createRegistrationID(app: .default, owner: "alice", maximumReserved: 10, now: start)
        try await store.upsert(
            try registration(browserID, .browser, handle: subscription(1), tags: ["a"]), now: start,
            writer: WriterGuard(owner: "alice", handle: subscription(1)))
        let prefix = WebPushSubscription.handlePrefix(endpoint: endpoint)
        let browserConflict = await refusal { () throws(StoreError) in
            try await store.upsert(
                try! registration(bobID, .browser, handle: subscription(2), tags: ["b"], owner: "bob"), now: start,
                writer: WriterGuard(owner: "bob", handle: subscription(2), handlePrefixes: [prefix]))
        }
        #expect(browserConflict?.kind == .conflict)

        // Bob's own device under his own id; alice rewriting her own registration; an admin (no
        // writer) rewriting anyone's.
        try await store.upsert(
            try registration(bobID, handle: "device-3", tags: ["b"], owner: "bob"), now: start,
            writer: WriterGuard(owner: "bob", handle: "device-3"))
        try await store.upsert(try registration(aliceID, handle: "device-1", tags: ["a2"]), now: start, writer: alice)
        try await store.upsert(try registration(bobID, handle: "device-1", tags: ["admin"], owner: "bob"), now: start, writer: nil)
        #expect(try await store.registration(id: bobID, app: .default)?.tags.map(\.rawValue) == ["admin"])
        // An id never issued is gone, checked or not.
        let unknown = await refusal { () throws(StoreError) in
            try await store.upsert(
                try! registration(RegistrationID.random(), handle: "device-9", tags: []), now: start,
                writer: WriterGuard(owner: "alice", handle: "device-9"))
        }
        #expect(unknown?.kind == .gone)
    }

    @Test(arguments: StoreKind.allCases)
    func restoreKeepsIDsWithoutReservationsAndListingWithoutAnExpressionReturnsEveryLiveRegistration(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let ids = (0..<7).map { _ in RegistrationID.random() }.sorted()
        var restored = try ids.enumerated().map { index, id in
            try registration(id, index.isMultiple(of: 2) ? .apns : .fcm, tags: ["username:u\(index)"], owner: "u\(index)")
        }
        restored[6].expiresAt = start.adding(seconds: -1)
        restored[5].template = RegistrationTemplate(
            name: "custom", body: #"{"aps":{"alert":"$(message)"}}"#, headers: ["apns-priority": "5"])
        try await store.restore(restored, now: start)
        // Every id was written as given, with its template, though none was ever reserved.
        for original in restored {
            #expect(try await store.registration(id: original.id, app: .default) == original)
        }
        // A page's templates in one call: only the ids that have one (an unknown id, another app: none).
        let templates = try await store.templates(of: ids + [RegistrationID.random()], app: .default)
        #expect(templates == [ids[5]: restored[5].template!])
        #expect(try await store.templates(of: ids, app: try AppID("other")).isEmpty)
        #expect(try await store.templates(of: [], app: .default).isEmpty)
        // Replacing: writes and deletions together (an installation and its dropped templates).
        var renamed = restored[1]
        try renamed.setTags([try Tag("username:u1"), try Tag("moved")])
        try await store.replace([renamed], removing: [ids[2], ids[3]], app: .default, now: start)
        #expect(try await store.registration(id: ids[1], app: .default)?.tags.map(\.rawValue) == ["moved", "username:u1"])
        #expect(try await store.registration(id: ids[2], app: .default) == nil)
        #expect(try await store.registration(id: ids[3], app: .default) == nil)
        #expect(
            try await collect(
                store.registrations(matching: .tag(try Tag("username:u2")), platforms: .all, app: .default, batchSize: 10, now: start)
            ).flatMap { $0 }.isEmpty)
        try await store.restore([restored[2], restored[3]], now: start)
        // nil expression: all live ones (the expired one is left out), ordered by id, in batches.
        let all = try await collect(store.registrations(matching: nil, platforms: .all, app: .default, batchSize: 4, now: start))
        #expect(all.map(\.count) == [4, 2])
        #expect(all.flatMap { $0 }.map(\.id) == Array(ids.prefix(6)))
        let fcm = try await collect(
            store.registrations(matching: nil, platforms: try PlatformSelection(parsing: "fcm"), app: .default, batchSize: 10, now: start))
        #expect(fcm.flatMap { $0 }.map(\.id) == [ids[1], ids[3], ids[5]])
        // Restoring again replaces (an import over an existing store), it does not duplicate.
        var changed = restored[0]
        try changed.setTags([try Tag("username:u0"), try Tag("vip")])
        try await store.restore([changed], now: start)
        #expect(try await store.registration(id: ids[0], app: .default)?.tags.map(\.rawValue) == ["username:u0", "vip"])
        #expect(
            try await collect(
                store.registrations(matching: .tag(try Tag("vip")), platforms: .all, app: .default, batchSize: 10, now: start)
            ).flatMap { $0 }.map(\.id) == [ids[0]])
    }

    @Test(arguments: StoreKind.allCases)
    func registrationsAreCreatedFromReservedIDsReadAndReplaced(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let id = try await store.createRegistrationID(app: .default, now: start)
        try await store.upsert(try registration(id, tags: ["username:alice", "news"]), now: start)
        var stored = try #require(try await store.registration(id: id, app: .default))
        #expect(stored.tags.map(\.rawValue) == ["news", "username:alice"])
        #expect(stored.owner == .user("alice"))
        // Replacing keeps the id and swaps the tags and handle.
        try await store.upsert(
            try registration(id, .wns, handle: "https://x.notify.windows.com/?token=1", tags: ["username:alice"]), now: start)
        stored = try #require(try await store.registration(id: id, app: .default))
        #expect(stored.platform == .wns)
        #expect(stored.tags.map(\.rawValue) == ["username:alice"])
        #expect(try await store.registrationIDs(handle: "https://x.notify.windows.com/?token=1", app: .default) == [id])
        #expect(try await store.registration(id: id, app: try AppID("other")) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func unknownAndExpiredIDsAreGoneAndNothingIsWritten(kind: StoreKind) async throws {
        let (store, path) = try await kind.make(reservationLifetime: 60)
        defer { cleanUp(path) }
        let never = RegistrationID.random()
        await #expect(throws: StoreError.gone(never)) { try await store.upsert(try registration(never, tags: ["a"]), now: start) }
        #expect(try await store.registration(id: never, app: .default) == nil)

        let reserved = try await store.createRegistrationID(app: .default, now: start)
        await #expect(throws: StoreError.gone(reserved)) {
            try await store.upsert(try registration(reserved, tags: ["a"]), now: start.adding(seconds: 61))
        }
        #expect(try await store.registration(id: reserved, app: .default) == nil)
        let batches = try await collect(
            store.registrations(matching: try TagExpression(parsing: "a"), platforms: .all, app: .default, batchSize: 10, now: start))
        #expect(batches.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func deletingRemovesTheRegistrationAndItsTags(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let id = try await store.createRegistrationID(app: .default, now: start)
        try await store.upsert(try registration(id, tags: ["a"]), now: start)
        #expect(try await store.delete(id: id, app: .default))
        #expect(try await !store.delete(id: id, app: .default))
        #expect(try await store.registration(id: id, app: .default) == nil)
        #expect(
            try await collect(store.registrations(matching: .tag(try Tag("a")), platforms: .all, app: .default, batchSize: 5, now: start))
                .isEmpty)
        // A deleted id is gone: it cannot be upserted again.
        await #expect(throws: StoreError.self) { try await store.upsert(try registration(id, tags: ["a"]), now: start) }
    }

    @Test(arguments: StoreKind.allCases)
    func tagExpressionsSelectTheRightRegistrationsInBatches(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let layout: [(Platform, [String], Timestamp?)] = [
            (.apns, ["username:alice", "sports"], nil),
            (.fcm, ["username:alice"], nil),
            (.wns, ["username:bob", "sports"], nil),
            (.gcm, ["username:carol"], nil),
            (.apns, ["username:alice", "muted"], nil),
            (.apns, ["username:alice"], start.adding(seconds: -1)),  // expired
        ]
        var ids: [RegistrationID] = []
        for (platform, tags, expiry) in layout {
            let id = try await store.createRegistrationID(app: .default, now: start)
            try await store.upsert(try registration(id, platform, tags: tags, expiresAt: expiry), now: start)
            ids.append(id)
        }
        func match(_ text: String, _ platforms: PlatformSelection = .all, batch: Int = 100) async throws -> Set<RegistrationID> {
            let batches = try await collect(
                store.registrations(
                    matching: try TagExpression(parsing: text), platforms: platforms, app: .default, batchSize: batch, now: start))
            #expect(batches.allSatisfy { $0.count <= batch })
            return Set(batches.flatMap { $0.map(\.id) })
        }
        #expect(try await match("username:alice") == [ids[0], ids[1], ids[4]])
        #expect(try await match("username:alice || username:bob") == [ids[0], ids[1], ids[2], ids[4]])
        #expect(try await match("username:alice && !muted") == [ids[0], ids[1]])
        #expect(try await match("sports && (username:alice || username:bob)") == [ids[0], ids[2]])
        #expect(try await match("!username:alice") == [ids[2], ids[3]])
        #expect(try await match("username:alice", try PlatformSelection(parsing: "apns")) == [ids[0], ids[4]])
        #expect(try await match("username:alice", batch: 1) == [ids[0], ids[1], ids[4]])
        #expect(try await match("nobody") == [])
    }

    @Test(arguments: StoreKind.allCases)
    func serviceAnswersRemoveAndReplaceHandlesAndRemovalsAreRecorded(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let gone = try await store.createRegistrationID(app: .default, now: start)
        try await store.upsert(try registration(gone, handle: String(repeating: "ab", count: 32), tags: ["a"]), now: start)
        let moved = try await store.createRegistrationID(app: .default, now: start)
        try await store.upsert(try registration(moved, .gcm, handle: "old-token-0123456789", tags: ["a"]), now: start)
        try await store.apply(
            [
                StoredHandleChange(registrationID: gone, change: .remove, outcome: .expiredChannel, reason: "Unregistered"),
                StoredHandleChange(registrationID: moved, change: .replace(with: "new-token-0123456789"), outcome: .success, reason: nil),
                StoredHandleChange(registrationID: .random(), change: .remove, outcome: .expiredChannel, reason: nil),
            ], app: .default, now: start.adding(seconds: 5))
        #expect(try await store.registration(id: gone, app: .default) == nil)
        #expect(try await store.registration(id: moved, app: .default)?.handle.value == "new-token-0123456789")
        let removals = try await store.removals(app: .default, limit: 10)
        #expect(removals.count == 1)
        #expect(removals.first?.registrationID == gone)
        #expect(removals.first?.handle == "ababab…abab")
        #expect(removals.first?.reason == "Unregistered")
        #expect(removals.first?.removedAt == start.adding(seconds: 5))
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentWritersAllLand(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let ids = try await withThrowingTaskGroup(of: RegistrationID.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let id = try await store.createRegistrationID(app: .default, now: start)
                    try await store.upsert(try registration(id, tags: ["bulk", "n\(index)"]), now: start)
                    return id
                }
            }
            return try await group.reduce(into: Set<RegistrationID>()) { $0.insert($1) }
        }
        #expect(ids.count == 100)
        let found = try await collect(
            store.registrations(matching: .tag(try Tag("bulk")), platforms: .all, app: .default, batchSize: 30, now: start))
        #expect(found.map(\.count) == [30, 30, 30, 10])
        #expect(Set(found.flatMap { $0.map(\.id) }) == ids)
    }
}

@Suite struct SecureMessageStoreTests {
    func make(_ kind: StoreKind) async throws -> (any SecureMessageStore, String?) {
        try await kind.make()
    }

    @Test(arguments: StoreKind.allCases)
    func onlyTheRecipientReadsAndOnlyBeforeExpiry(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        let message = SecureMessage(
            id: "m1", app: .default, recipient: "alice", sender: "bob", payload: "the secret", createdAt: start,
            expiresAt: start.adding(seconds: 60))
        try await store.storeSecureMessage(message)
        #expect(try await store.readSecureMessage(id: "m1", app: .default, recipient: "mallory", now: start) == nil)
        let first = try await store.readSecureMessage(id: "m1", app: .default, recipient: "alice", now: start)
        #expect(first?.payload == "the secret")
        #expect(first?.sender == "bob")
        #expect(first?.read == false)
        #expect(try await store.readSecureMessage(id: "m1", app: .default, recipient: "alice", now: start)?.read == true)
        #expect(try await store.readSecureMessage(id: "m1", app: .default, recipient: "alice", now: start.adding(seconds: 61)) == nil)
        #expect(try await store.readSecureMessage(id: "m1", app: try AppID("other"), recipient: "alice", now: start) == nil)
    }
}

@Suite struct SQLiteStoreTests {
    /// Two connections to one file, as a gateway and `pushgate registrations` in another process:
    /// each sees the other's writes at once and can still write after them.
    @Test func twoConnectionsSeeEachOthersWritesAndKeepWriting() async throws {
        let path = NSTemporaryDirectory() + "pushgate-store-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let gateway = try await SQLiteStore.open(path: path)
        let operator_ = try await SQLiteStore.open(path: path)
        let ids = (0..<3).map { _ in RegistrationID.random() }
        try await gateway.restore(try ids.map { try registration($0, tags: ["username:alice"]) }, now: start)
        // Reads that stop on a row (a lookup by id, the schema version) must not pin a snapshot.
        #expect(try await gateway.registration(id: ids[0], app: .default) != nil)
        #expect(try await gateway.schemaVersion() == 11)
        #expect(try await gateway.registrationIDs(handle: "h-\(ids[1].rawValue)", app: .default) == [ids[1]])
        #expect(try await operator_.delete(id: ids[0], app: .default))
        #expect(try await gateway.registration(id: ids[0], app: .default) == nil)
        let reserved = try await gateway.createRegistrationID(app: .default, now: start)
        try await gateway.upsert(try registration(reserved, tags: ["username:bob"]), now: start)
        #expect(try await operator_.registration(id: reserved, app: .default)?.owner == .user("alice"))
        try await operator_.restore([try registration(ids[1], tags: ["vip"])], now: start)
        #expect(try await gateway.registration(id: ids[1], app: .default)?.tags.map(\.rawValue) == ["vip"])
        #expect(try await gateway.delete(id: ids[2], app: .default))
    }

    @Test func dataSurvivesReopeningAndTheSchemaIsVersioned() async throws {
        let path = NSTemporaryDirectory() + "pushgate-store-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        var store: SQLiteStore? = try await SQLiteStore.open(path: path)
        let id = try await store!.createRegistrationID(app: .default, now: start)
        try await store!.upsert(try registration(id, tags: ["username:alice"]), now: start)
        #expect(try await store!.schemaVersion() == 11)
        store = nil
        let reopened = try await SQLiteStore.open(path: path)
        #expect(try await reopened.registration(id: id, app: .default)?.tags.map(\.rawValue) == ["username:alice"])
        #expect(try await reopened.schemaVersion() == 11)
    }

    @Test func anUnreadableFileIsAClearError() async throws {
        await #expect(
            performing: {
                try await SQLiteStore.open(path: "/nonexistent-dir/pushgate.sqlite")
            },
            throws: { error in
                (error as? StoreError)?.description.contains("cannot open SQLite database /nonexistent-dir/pushgate.sqlite") == true
            })
    }

    @Test func tagLookupsUseTheIndexOverManyRegistrations() async throws {
        let path = NSTemporaryDirectory() + "pushgate-store-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let store = try await SQLiteStore.open(path: path)
        // Written as an import writes them: one transaction (2,000 single writes are 2,000 fsyncs).
        try await store.restore(
            try (0..<2000).map { index in
                try registration(try RegistrationID(String(format: "t%06d", index)), tags: ["username:user\(index % 500)", "all"])
            }, now: start)
        let batches = try await collect(
            store.registrations(
                matching: try TagExpression(parsing: "username:user7 || username:user8"), platforms: .all, app: .default, batchSize: 3,
                now: start))
        #expect(batches.flatMap { $0 }.count == 8)
        #expect(batches.flatMap { $0 }.allSatisfy { $0.tags.contains(try! Tag("all")) })
    }

    @Test func theDatabaseAndItsJournalAreReadableByTheOwnerOnly() async throws {
        let path = NSTemporaryDirectory() + "pushgate-store-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let store = try await SQLiteStore.open(path: path)
        let id = try await store.createRegistrationID(app: .default, now: start)
        try await store.upsert(try registration(id, tags: ["a"]), now: start)
        for file in [path, path + "-wal"] {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file): \(String(mode ?? 0, radix: 8))")
        }
    }
}

@Suite struct ReservationLimitTests {
    @Test(arguments: StoreKind.allCases) func eachUserHoldsAtMostTheConfiguredUnusedIDs(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        var ids: [RegistrationID] = []
        for _ in 0..<3 { ids.append(try await store.createRegistrationID(app: .default, owner: "mallory", maximumReserved: 3, now: start)) }
        await #expect(throws: StoreError.tooManyReservations(3)) {
            try await store.createRegistrationID(app: .default, owner: "mallory", maximumReserved: 3, now: start)
        }
        // Other users are not affected; using a reservation frees its place.
        _ = try await store.createRegistrationID(app: .default, owner: "alice", maximumReserved: 3, now: start)
        try await store.upsert(try registration(ids[0], tags: ["a"], owner: "mallory"), now: start)
        _ = try await store.createRegistrationID(app: .default, owner: "mallory", maximumReserved: 3, now: start)
        // Expired reservations do not count.
        _ = try await store.createRegistrationID(app: .default, owner: "mallory", maximumReserved: 3, now: start.adding(seconds: 7200))
    }
}
