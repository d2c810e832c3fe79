import Foundation
import Pushgate
import PushgatePostgres
import PushgateStore
import Testing

/// Registrations at the rate apps register: concurrent writes share transactions, each answered
/// after the commit that covers it, one failing write rolled back alone.
@Suite struct GroupCommitTests {
    @Test(arguments: StoreKind.allCases)
    func concurrentRegistrationsAreEachStoredAndOneRefusalTouchesNoOther(_ kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let now = Timestamp(secondsSinceEpoch: 1_800_000_000)
        let count = 300
        // The tutorial client's two steps, 300 devices at once: reserve an id, then register.
        let ids = try await withThrowingTaskGroup(of: RegistrationID.self) { group in
            for index in 0..<count {
                group.addTask {
                    try await store.createRegistrationID(app: .default, owner: "u\(index % 10)", maximumReserved: 1000, now: now)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(ids).count == count)
        let never = RegistrationID.random()  // never reserved: its upsert must fail, alone
        let outcomes = await withTaskGroup(of: (RegistrationID, Bool).self) { group in
            for (index, id) in (ids + [never]).enumerated() {
                group.addTask {
                    let registration = try! Registration(
                        id: id, handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", index)),
                        tags: [try! Tag.username("u\(index % 10)")], owner: "u\(index % 10)")
                    do {
                        try await store.upsert(registration, now: now)
                        return (id, true)
                    } catch {
                        return (id, false)
                    }
                }
            }
            return await group.reduce(into: [RegistrationID: Bool]()) { $0[$1.0] = $1.1 }
        }
        #expect(outcomes[never] == false)
        #expect(outcomes.filter { $0.value }.count == count)
        for id in ids { #expect(try await store.registration(id: id, app: .default) != nil) }
        #expect(try await store.registration(id: never, app: .default) == nil)

        if let sqlite = store as? SQLiteStore, let path {
            // Fewer transactions than writes: they were shared.
            let counts = sqlite.groupCommitCounts
            #expect(counts.writes == 2 * count + 1)
            #expect(counts.commits < counts.writes, "\(counts)")
            // On disk: a second connection reads every acknowledged write.
            let reopened = try await SQLiteStore.open(path: path)
            for id in ids { #expect(try await reopened.registration(id: id, app: .default) != nil) }
        }
    }
}
