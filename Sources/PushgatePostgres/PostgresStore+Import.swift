import PostgresNIO
import Pushgate
import PushgateSQL

/// An import of registrations (an export's JSON lines): every batch written in one transaction.
extension PostgresStore {
    /// One transaction on one pooled connection, each batch written by the statements a restore
    /// uses (arrays unnested server-side: a few statements a batch, whatever its size) while the
    /// next batch is read. Other connections see none of it until the commit. Not retried after a
    /// deadlock, as other calls are: the batches already read cannot be read again.
    public func importRegistrations<Batches: AsyncSequence<[Registration], Failure> & Sendable, Failure: Error>(
        _ batches: Batches, now: Timestamp
    ) async throws(RegistrationImportFailure<Failure>) -> Int {
        let logger = self.logger
        let outcome: Result<Int, RegistrationImportFailure<Failure>>
        do throws(StoreError) {
            outcome = try await perform { connection in
                // Thrown before a batch is read (retrying it is safe); afterwards, a failure is an outcome.
                try await connection.query("BEGIN", logger: logger)
                let outcome: Result<Int, RegistrationImportFailure<Failure>>
                do throws(RegistrationImportFailure<Failure>) {
                    outcome = .success(
                        try await batches.writeEach { batch throws(StoreError) in
                            let templates = try batch.encodedTemplates()
                            do {
                                try await Self.write(batch, templates: templates, now: now, connection: connection, logger: logger)
                            } catch {
                                throw Self.storeError(error)
                            }
                        })
                } catch {
                    outcome = .failure(error)
                }
                switch outcome {
                case .success:
                    do { try await connection.query("COMMIT", logger: logger) } catch { return .failure(.store(Self.storeError(error))) }
                case .failure:
                    // A connection in an unknown state goes back to the pool closed.
                    do { try await connection.query("ROLLBACK", logger: logger) } catch { try? await connection.close() }
                }
                return outcome
            }
        } catch {
            throw .store(error)
        }
        return try outcome.get()
    }
}
