/// Why ``RegistrationStore/importRegistrations(_:now:)`` wrote nothing: its batches' sequence
/// threw (for a file, a bad line), or the store failed. Either way the import's transaction was
/// rolled back.
///
/// An enumeration rather than a struct over a private code: the two sides carry typed errors of
/// their own, and a caller reports each its own way (the lines' errors listed, a store error as
/// one message).
public enum RegistrationImportFailure<BatchFailure: Error>: Error, CustomStringConvertible {
    /// The sequence of batches threw this.
    case batches(BatchFailure)
    /// The store could not write or commit.
    case store(StoreError)

    public var description: String {
        switch self {
        case .batches(let failure): "\(failure)"
        case .store(let error): error.description
        }
    }
}
