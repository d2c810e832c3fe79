import Foundation
import Pushgate
import PushgatePostgres
import PushgateSQLite
import Testing

/// The rules about stored data a hostile client leans on, held on every store (in memory, SQLite,
/// PostgreSQL): each store checks them in its own SQL, so each is tested, not the in-memory one
/// alone.
@Suite struct HostileStoreRulesTests {
    func hubRegistration(_ id: RegistrationID, tags: [String] = ["news"], handle: String? = nil) throws -> Registration {
        try Registration(
            id: id, handle: DeviceHandle(uncheckedPlatform: .apns, value: handle ?? "h-\(id.rawValue)"), tags: tags.map { try Tag($0) },
            owner: .hub)
    }

    /// An id alice reserved through `/api/register` is hers: a hub write (any key) of it is
    /// refused with a conflict and writes nothing, and alice's own write then goes through. Ids
    /// reserved through the hub API, and ids nobody reserved, are the hub's to write.
    @Test(arguments: StoreKind.allCases)
    func aHubWriteRespectsAUsersReservation(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let alices = try await store.createRegistrationID(app: .default, owner: "alice", maximumReserved: 10, now: start)
        let refused = HubWrite(app: .default, registrations: [try hubRegistration(alices)], expected: [alices: nil])
        await #expect(throws: StoreError.self) { try await store.write(refused, now: start) }
        do {
            try await store.write(refused, now: start)
        } catch {
            #expect(error.kind == .conflict && error.message.contains("reserved by a user"), "\(error)")
        }
        #expect(try await store.registration(id: alices, app: .default) == nil)
        try await store.upsert(
            try registration(alices, tags: ["username:alice"]), now: start, writer: WriterGuard(owner: "alice", handle: "h-x"))
        #expect(try await store.registration(id: alices, app: .default)?.owner == .user("alice"))

        let keys = try await store.createRegistrationID(
            app: .default, owner: RegistrationOwner.hubKeyReservation(rule: "listen"), maximumReserved: 10, lifetime: nil, now: start)
        let free = RegistrationID.random()
        try await store.write(
            HubWrite(
                app: .default, registrations: [try hubRegistration(keys), try hubRegistration(free)], expected: [keys: nil, free: nil]),
            now: start)
        #expect(try await store.registration(id: keys, app: .default)?.owner == .hub)
        #expect(try await store.registration(id: free, app: .default)?.owner == .hub)
    }

    /// A hub write is a compare-and-set: when a registration it read has changed (or appeared)
    /// since, nothing of it is written and the store says so (`.changed`); as read, it writes and
    /// removes together.
    @Test(arguments: StoreKind.allCases)
    func aHubWriteIsACompareAndSet(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let (native, template, fresh) = (RegistrationID.random(), RegistrationID.random(), RegistrationID.random())
        let unbound = try hubRegistration(native, tags: ["news"])
        let bound = try hubRegistration(native, tags: ["$UserId:{alice}", "news"])
        try await store.write(HubWrite(app: .default, registrations: [unbound], expected: [native: nil]), now: start)
        try await store.restore([try hubRegistration(template)], now: start)

        // A backend bound the installation after a device key read it unbound: the device's
        // write, decided on what it read, is refused.
        try await store.write(HubWrite(app: .default, registrations: [bound], expected: [native: unbound]), now: start)
        let stale = HubWrite(
            app: .default, registrations: [try hubRegistration(native, tags: ["sports"])], removing: [template], expected: [native: unbound]
        )
        do {
            try await store.write(stale, now: start)
            Issue.record("a write decided on a stale read went through")
        } catch {
            #expect(error.kind == .changed, "\(error)")
        }
        #expect(try await store.registration(id: native, app: .default) == bound)
        #expect(try await store.registration(id: template, app: .default) != nil, "nothing of a refused write is written")

        // Read as absent, but written meanwhile: refused too.
        try await store.restore([try hubRegistration(fresh)], now: start)
        do {
            try await store.write(
                HubWrite(app: .default, registrations: [try hubRegistration(fresh, tags: ["x"])], expected: [fresh: nil]), now: start)
            Issue.record("a write expecting an absent registration overwrote one")
        } catch {
            #expect((error as? StoreError)?.kind == .changed, "\(error)")
        }

        // As read: written and removed together.
        let current = try #require(try await store.registration(id: template, app: .default))
        try await store.write(
            HubWrite(
                app: .default, registrations: [try hubRegistration(native, tags: ["$UserId:{alice}", "sports"])], removing: [template],
                expected: [native: bound, template: current]),
            now: start)
        #expect(try await store.registration(id: native, app: .default)?.tags.map(\.rawValue) == ["$UserId:{alice}", "sports"])
        #expect(try await store.registration(id: template, app: .default) == nil)
    }

    /// The hub owns its registrations as a kind: a user, whatever the name, is not the hub. A
    /// user named `$hub` (the name the hub's registrations were owned by) may neither take the
    /// hub's registration nor its device.
    @Test(arguments: StoreKind.allCases)
    func theHubsOwnershipIsAKindNoNameMatches(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let hubs = RegistrationID.random()
        try await store.restore([try hubRegistration(hubs, handle: "hub-device")], now: start)
        #expect(try await store.registration(id: hubs, app: .default)?.owner == .hub)
        for name in [RegistrationOwner.exportName, ""] {
            do {
                try await store.upsert(
                    try registration(hubs, tags: ["news"], owner: name), now: start,
                    writer: WriterGuard(owner: name, handle: "h-\(hubs.rawValue)"))
                Issue.record("user '\(name)' took the hub's registration")
            } catch {
                #expect((error as? StoreError)?.kind == .forbidden, "\(error)")
            }
            let mine = try await store.createRegistrationID(app: .default, owner: name, maximumReserved: 10, now: start)
            do {
                try await store.upsert(
                    try registration(mine, handle: "hub-device", tags: ["news"], owner: name), now: start,
                    writer: WriterGuard(owner: name, handle: "hub-device"))
                Issue.record("user '\(name)' took the hub's device")
            } catch {
                #expect((error as? StoreError)?.kind == .conflict, "\(error)")
            }
        }
        #expect(try await store.registration(id: hubs, app: .default)?.owner == .hub)
    }

    /// A reservation lasts as long as its caller says (the hub's: an hour by default), else the
    /// store's lifetime.
    @Test(arguments: StoreKind.allCases)
    func aReservationLastsTheLifetimeItWasGiven(kind: StoreKind) async throws {
        let (store, path) = try await kind.make(reservationLifetime: 86400)
        defer { cleanUp(path) }
        let short = try await store.createRegistrationID(app: .default, owner: "alice", maximumReserved: 10, lifetime: 60, now: start)
        let long = try await store.createRegistrationID(app: .default, owner: "alice", maximumReserved: 10, now: start)
        let later = start.adding(seconds: 61)
        do {
            try await store.upsert(try registration(short, tags: ["username:alice"]), now: later)
            Issue.record("an expired reservation was used")
        } catch {
            #expect((error as? StoreError)?.kind == .gone, "\(error)")
        }
        try await store.upsert(try registration(long, tags: ["username:alice"]), now: later)
        // Expired reservations no longer count against the holder's cap.
        for _ in 0..<2 {
            _ = try await store.createRegistrationID(app: .default, owner: "bob", maximumReserved: 2, lifetime: 60, now: start)
        }
        _ = try await store.createRegistrationID(app: .default, owner: "bob", maximumReserved: 2, lifetime: 60, now: later)
    }

    /// A user's own tag is on at most the cap's registrations: one more new one is refused, an
    /// update of one they have is not.
    @Test(arguments: StoreKind.allCases)
    func aUserAddsNoRegistrationPastTheirCap(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        var ids: [RegistrationID] = []
        for index in 0..<3 {
            let id = try await store.createRegistrationID(app: .default, owner: "alice", maximumReserved: 10, now: start)
            ids.append(id)
            let writer = WriterGuard(owner: "alice", handle: "h-\(id.rawValue)", maximumRegistrations: 2)
            do {
                try await store.upsert(try registration(id, tags: ["username:alice"]), now: start, writer: writer)
                #expect(index < 2, "registration \(index + 1) of a cap of 2 was written")
            } catch {
                #expect(index == 2 && (error as? StoreError)?.kind == .limitReached, "\(error)")
            }
        }
        #expect(try await store.registration(id: ids[2], app: .default) == nil)
        let writer = WriterGuard(owner: "alice", handle: "h-\(ids[0].rawValue)", maximumRegistrations: 2)
        try await store.upsert(try registration(ids[0], tags: ["username:alice", "vip"]), now: start, writer: writer)
    }

    /// A sender has at most the cap's scheduled notifications waiting: one more is refused and
    /// not stored; another sender is not held back by them.
    @Test(arguments: StoreKind.allCases)
    func aSenderSchedulesNoMoreThanTheCap(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        func scheduled(_ sender: String) -> OutboxNotification {
            var notification = OutboxNotification(
                id: UUID().uuidString.lowercased(), app: .default, sender: sender, selection: PlatformSelection([.apns]),
                audience: .everyone,
                payloads: [
                    .apns: RenderedNotification(
                        platform: .apns, body: Array(#"{"aps":{"alert":"hi"}}"#.utf8), headers: [], contentType: "application/json")
                ], secureID: nil, enqueuedAt: start, deliverAt: start.adding(seconds: 3600))
            notification.maximumScheduledPerSender = 2
            return notification
        }
        for _ in 0..<2 { _ = try await store.enqueue(scheduled("alice"), lease: nil) }
        let third = scheduled("alice")
        do {
            _ = try await store.enqueue(third, lease: nil)
            Issue.record("a third scheduled notification was stored past a cap of 2")
        } catch {
            #expect(error.kind == .limitReached, "\(error)")
        }
        #expect(try await store.notificationRecord(id: third.id, app: .default) == nil)
        _ = try await store.enqueue(scheduled("bob"), lease: nil)
    }

    /// The count behind a hub's device quota: every registration of the app, up to the limit.
    @Test(arguments: StoreKind.allCases)
    func registrationsAreCountedUpToTheLimit(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        #expect(try await store.registrationCount(app: .default, upTo: 10) == 0)
        try await store.restore(try (0..<5).map { _ in try hubRegistration(RegistrationID.random()) }, now: start)
        #expect(try await store.registrationCount(app: .default, upTo: 10) == 5)
        #expect(try await store.registrationCount(app: .default, upTo: 3) == 3)
    }
}

/// The migration of the rows stored before ownership was a kind: a registration owned by the
/// name `$hub` becomes the hub's, on both database stores.
@Suite struct OwnerKindMigrationTests {
    @Test func sqliteMigratesTheHubsRowsToTheHubKind() async throws {
        let path = NSTemporaryDirectory() + "pushgate-store-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let (hubs, alices) = (RegistrationID.random(), RegistrationID.random())
        var store: SQLiteStore? = try await SQLiteStore.open(path: path)
        try await store!.restore([try registration(hubs, tags: ["news"]), try registration(alices, tags: ["username:alice"])], now: start)
        // As version 7 wrote them: no kind, the hub's named `$hub`.
        try await store!.executeUnchecked(
            "DROP TABLE live_activities; DROP TABLE apns_channels; DROP INDEX registrations_by_kind; ALTER TABLE registrations DROP COLUMN kind; "
                + "DROP TABLE outbox_rows; ALTER TABLE registrations DROP COLUMN owner_kind; UPDATE registrations SET owner = '$hub' WHERE id = '\(hubs.rawValue)'; PRAGMA user_version = 7"
        )
        store = nil
        let reopened = try await SQLiteStore.open(path: path)
        #expect(try await reopened.schemaVersion() == 11)
        #expect(try await reopened.registration(id: hubs, app: .default)?.owner == .hub)
        #expect(try await reopened.registration(id: alices, app: .default)?.owner == .user("alice"))
    }

    @Test(.enabled(if: PostgresTesting.isAvailable)) func postgresMigratesTheHubsRowsToTheHubKind() async throws {
        let store = try await PostgresTesting.freshStore()
        let (hubs, alices) = (RegistrationID.random(), RegistrationID.random())
        try await store.restore([try registration(hubs, tags: ["news"]), try registration(alices, tags: ["username:alice"])], now: start)
        try await store.executeUnchecked(
            """
            DROP TABLE live_activities;
            DROP TABLE apns_channels;
            ALTER TABLE registrations DROP COLUMN kind;
            DROP TABLE outbox_rows;
            ALTER TABLE registrations DROP COLUMN owner_kind;
            UPDATE registrations SET owner = '$hub' WHERE id = '\(hubs.rawValue)';
            DELETE FROM pushgate_schema WHERE version >= 5;
            """)
        #expect(try await store.migrate() == [5, 6, 7, 8])
        #expect(try await store.registration(id: hubs, app: .default)?.owner == .hub)
        #expect(try await store.registration(id: alices, app: .default)?.owner == .user("alice"))
    }
}
