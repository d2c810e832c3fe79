import Foundation
import Pushgate
import PushgateSQLite
import Synchronization
import Testing

/// `importRegistrations`: one transaction for the whole import, on every store kind.
@Suite struct RegistrationImportStoreTests {
    let policy = HandlePolicy(wnsChannelHosts: [])

    /// A registration of the import (tags `imported` and `username:u`), its APNs token `number`.
    func imported(_ number: Int) throws -> Registration {
        try registration(
            try RegistrationID(String(format: "i%05d", number)), handle: String(format: "%064x", number), tags: ["imported", "username:u"],
            owner: "u")
    }

    /// Three registrations already in the store, tagged `old`.
    func seed(_ store: any RegistrationStore) async throws -> [Registration] {
        let existing = try (0..<3).map {
            try registration(try RegistrationID("existing-\($0)"), handle: String(format: "%064x", 1000 + $0), tags: ["old"])
        }
        try await store.restore(existing, now: start)
        return existing
    }

    /// The ids tagged `tag`.
    func tagged(_ tag: String, in store: any RegistrationStore) async throws -> [RegistrationID] {
        try await collect(store.registrations(matching: .tag(try Tag(tag)), platforms: .all, app: .default, batchSize: 100, now: start))
            .flatMap { $0 }.map(\.id)
    }

    /// `batches`, one a step; `before(index)` runs before batch `index` is handed on, and the
    /// sequence throws instead of handing on batch `failingAt`.
    func sequence(
        _ batches: [[Registration]], failingAt failure: Int? = nil, before: @escaping @Sendable (Int) async throws -> Void = { _ in }
    ) -> AsyncThrowingStream<[Registration], any Error> {
        let next = Mutex(0)
        return AsyncThrowingStream(unfolding: {
            let index = next.withLock { index in
                defer { index += 1 }
                return index
            }
            try await before(index)
            if index == failure { throw CancellationError() }
            return index < batches.count ? batches[index] : nil
        })
    }

    /// A file's lines, one bad (`not an id`) after two batches' worth of good ones, through
    /// ``RegistrationImportBatches``: two batches were written inside the transaction, then rolled
    /// back; the registrations there before are as they were, and the error names the line.
    @Test(arguments: StoreKind.allCases)
    func aBadLineAfterSeveralBatchesWritesNothingAndLeavesTheStoreAsItWas(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let existing = try await seed(store)
        var lines = try (1...25).map { number in
            RegistrationImport.Line(number: number, content: .bytes(Array(try imported(number).jsonLine.utf8)))
        }
        // The first registration there before, now with other tags: replaced only if the import commits.
        var replaced = existing[0]
        try replaced.setTags([try Tag("imported")])
        lines[20] = RegistrationImport.Line(number: 21, content: .bytes(Array(replaced.jsonLine.utf8)))
        lines[22] = RegistrationImport.Line(number: 23, content: .bytes(Array(#"{"id":"not an id"}"#.utf8)))
        let batches = RegistrationImportBatches(
            lines, importer: RegistrationImport(source: "backup.jsonl", app: .default, handles: policy), batchSize: 10)
        do {
            _ = try await store.importRegistrations(batches, now: start)
            Issue.record("an import with a bad line was written")
        } catch {
            guard case .batches(let errors) = error else { throw error }
            #expect(
                errors.listed.map(\.description) == [
                    "backup.jsonl:23: 'id': registration id 'not an id' is malformed; expected 1 to 64 letters, digits or '-'"
                ])
        }
        #expect(try await tagged("imported", in: store).isEmpty)
        #expect(try await store.registration(id: try imported(1).id, app: .default) == nil)
        for registration in existing { #expect(try await store.registration(id: registration.id, app: .default) == registration) }

        // The same lines without the bad one: all written, the existing one replaced.
        lines.remove(at: 22)
        let good = RegistrationImportBatches(
            lines, importer: RegistrationImport(source: "backup.jsonl", app: .default, handles: policy), batchSize: 10)
        #expect(try await store.importRegistrations(good, now: start) == 24)
        #expect(try await tagged("imported", in: store).count == 24)
        #expect(try await store.registration(id: existing[0].id, app: .default) == replaced)
        #expect(try await tagged("old", in: store) == [existing[1].id, existing[2].id])
    }

    /// While an import runs, another reader (for SQLite, another connection to the file) sees
    /// none of it, though its first batches are written; once it returns, all of it.
    @Test(arguments: StoreKind.allCases)
    func anImportIsSeenByOthersOnlyWholeOnceItCommitted(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let reader: any RegistrationStore = if let path { try await SQLiteStore.open(path: path) } else { store }
        let existing = try await seed(store)
        let registrations = try (1...9).map(imported)
        let batches = [Array(registrations[0..<3]), Array(registrations[3..<6]), Array(registrations[6...])]
        let seenMidway = Mutex<[RegistrationID]?>(nil)
        let written = try await store.importRegistrations(
            sequence(batches) { index in
                guard index == 2 else { return }
                let seen = try await tagged("imported", in: reader)
                seenMidway.withLock { $0 = seen }
            }, now: start)
        #expect(written == 9)
        #expect(seenMidway.withLock { $0 } == [])
        #expect(try await tagged("imported", in: reader) == registrations.map(\.id))
        #expect(try await tagged("old", in: reader) == existing.map(\.id))
    }

    /// A sequence that throws midway (the reader of a file failing) rolls back what was written.
    @Test(arguments: StoreKind.allCases)
    func anImportWhoseBatchesFailMidwayIsRolledBack(kind: StoreKind) async throws {
        let (store, path) = try await kind.make()
        defer { cleanUp(path) }
        let existing = try await seed(store)
        let registrations = try (1...9).map(imported)
        let batches = [Array(registrations[0..<3]), Array(registrations[3..<6]), Array(registrations[6...])]
        do {
            _ = try await store.importRegistrations(sequence(batches, failingAt: 2), now: start)
            Issue.record("a failed import was written")
        } catch {
            guard case .batches(let failure) = error, failure is CancellationError else { throw error }
        }
        #expect(try await tagged("imported", in: store).isEmpty)
        #expect(try await tagged("old", in: store) == existing.map(\.id))
        // The store goes on working (no transaction left open, for SQLite no gate left held).
        #expect(try await store.importRegistrations(sequence(batches), now: start) == 9)
        #expect(try await store.importRegistrations(sequence([]), now: start) == 0)
        #expect(try await tagged("imported", in: store).count == 9)
    }
}
