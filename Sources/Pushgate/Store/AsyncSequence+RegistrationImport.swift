/// How a store consumes the batches of an import (``RegistrationStore/importRegistrations(_:now:)``).
extension AsyncSequence where Element == [Registration] {
    /// Hands every batch to `write`, in order, reading the next batch while `write` has the last
    /// one: parsing a file and writing to a database go on at the same time (the store writes on
    /// its own thread or connection), and at most two batches are in memory. Stops at the first
    /// error: a batch that `write` refused, or the sequence throwing (once the batch being
    /// written is done). Returns how many registrations `write` took.
    public func writeEach(
        _ write: @escaping @Sendable ([Registration]) async throws(StoreError) -> Void
    ) async throws(RegistrationImportFailure<Failure>) -> Int {
        var iterator = makeAsyncIterator()
        var next: [Registration]?
        do { next = try await iterator.next(isolation: #isolation) } catch { throw .batches(error) }
        var written = 0
        while let batch = next {
            async let writing = Self.attempt(write, batch)
            let following: Result<[Registration]?, Failure>
            do { following = .success(try await iterator.next(isolation: #isolation)) } catch { following = .failure(error) }
            if case .failure(let error) = await writing { throw .store(error) }
            written += batch.count
            switch following {
            case .success(let batch): next = batch
            case .failure(let error): throw .batches(error)
            }
        }
        return written
    }

    /// `write(batch)`'s outcome as a value (a child task's result).
    private static func attempt(
        _ write: @Sendable ([Registration]) async throws(StoreError) -> Void, _ batch: [Registration]
    ) async -> Result<Void, StoreError> {
        do throws(StoreError) {
            try await write(batch)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
