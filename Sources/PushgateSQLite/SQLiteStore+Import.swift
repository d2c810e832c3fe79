import Pushgate
import PushgateSQL

/// An import of registrations (an export's JSON lines): every batch written in one transaction.
extension SQLiteStore {
    /// Holds the store's gate from `BEGIN` to `COMMIT`: no other operation of this store runs in
    /// between, and another process's writes wait for the database's write lock (readers see the
    /// registrations as they were until the commit). Each batch is written on the store's thread
    /// while the next one is read; the page cache is enlarged meanwhile (``importCacheKiB``), so
    /// that the tables' pages are read from the file once, not once per row.
    public func importRegistrations<Batches: AsyncSequence<[Registration], Failure> & Sendable, Failure: Error>(
        _ batches: Batches, now: Timestamp
    ) async throws(RegistrationImportFailure<Failure>) -> Int {
        await gate.acquire()
        defer { gate.release() }
        let cache: Int
        do {
            cache = try await onThread(endsOperation: false) { connection throws(StoreError) -> Int in
                let statement = try connection.prepare("PRAGMA cache_size")
                let cache = try statement.step() ? Int(statement.int64(0)) : -2000
                try connection.execute("PRAGMA cache_size = \(-Self.importCacheKiB)")
                do throws(StoreError) { try connection.beginTransaction() } catch {
                    try? connection.execute("PRAGMA cache_size = \(cache)")
                    throw error
                }
                return cache
            }
        } catch {
            throw .store(error)
        }
        let outcome: Result<Int, RegistrationImportFailure<Failure>>
        do {
            outcome = .success(
                try await batches.writeEach { batch throws(StoreError) in
                    // In id order, each batch's rows go to neighbouring pages of the table and its
                    // tags' index (ids of a file may be in any order). Stable: a repeated id's last
                    // write still wins.
                    let batch = batch.enumerated().sorted { ($0.element.id, $0.offset) < ($1.element.id, $1.offset) }.map(\.element)
                    let templates = try batch.encodedTemplates()
                    try await self.onThread(endsOperation: false) { [templates] connection throws(StoreError) in
                        try RegistrationWriter(connection).write(batch, templates: templates, now: now)
                    }
                })
        } catch {
            outcome = .failure(error)
        }
        do {
            try await onThread { connection throws(StoreError) in
                defer { try? connection.execute("PRAGMA cache_size = \(cache)") }
                let commit = (try? outcome.get()) != nil
                try connection.endTransaction(commit: commit)
                // The import's pages go from the log into the database file before the call
                // returns (without waiting for readers), not at some later write: a process that
                // exits now leaves no log of the import's size for the next one to read.
                if commit { try? connection.execute("PRAGMA wal_checkpoint(PASSIVE)") }
            }
        } catch {
            if case .failure(let failure) = outcome { throw failure }
            throw .store(error)
        }
        return try outcome.get()
    }

    /// The page cache of an import, in KiB (the connection's default is 2,000; pages are taken
    /// as they are needed, so a small import uses little of it). When the ids come in no order,
    /// rows go to pages all over the tables (a million registrations fill about 350 MB): a page
    /// that falls out of the cache is written to the log, and read back when a row lands on it
    /// again. Importing a million such registrations on two cores took 28 s with 64 MiB, 15 s
    /// with 128 MiB and 13 s with 256 MiB.
    package static let importCacheKiB = 131_072
}
