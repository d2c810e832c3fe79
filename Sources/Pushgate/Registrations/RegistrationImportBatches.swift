/// An import's lines as batches of registrations, for
/// ``RegistrationStore/importRegistrations(_:now:)``: each line is parsed once
/// (``RegistrationImport``) and its registration added to the batch being filled, and a full batch
/// is handed on. From the first bad line on no batch is handed on any more, but the lines are
/// still read to the end so that every error can be counted; the sequence then throws
/// ``RegistrationLineErrors`` (the first ones listed), and the store rolls the import back.
///
/// ```swift
/// let batches = RegistrationImportBatches(lines, importer: RegistrationImport(source: "backup.jsonl", app: app, handles: handles))
/// let written = try await store.importRegistrations(batches, now: now)
/// ```
///
/// Without a store (a dry run), reading it to the end validates every line.
public struct RegistrationImportBatches<Lines: Sequence & Sendable>: AsyncSequence, Sendable
where Lines.Element == RegistrationImport.Line {
    public typealias Element = [Registration]
    public typealias Failure = RegistrationLineErrors

    let lines: Lines
    let importer: RegistrationImport
    let batchSize: Int

    /// The batches of `lines`, read by `importer`, of `batchSize` registrations (the last one
    /// fewer).
    public init(_ lines: Lines, importer: RegistrationImport, batchSize: Int = RegistrationImport.batchSize) {
        self.lines = lines
        self.importer = importer
        self.batchSize = Swift.max(1, batchSize)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(lines: lines.makeIterator(), importer: importer, batchSize: batchSize)
    }

    /// Reads lines until a batch is full or the lines end.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = [Registration]
        public typealias Failure = RegistrationLineErrors

        var lines: Lines.Iterator
        var importer: RegistrationImport
        let batchSize: Int
        var errors = RegistrationLineErrors()
        var ended = false

        public mutating func next() async throws(RegistrationLineErrors) -> [Registration]? {
            try nextBatch()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(RegistrationLineErrors) -> [Registration]? {
            try nextBatch()
        }

        /// The lines are read synchronously: a batch's worth of a file is read and parsed in one go.
        mutating func nextBatch() throws(RegistrationLineErrors) -> [Registration]? {
            guard !ended else { return nil }
            var batch: [Registration] = []
            batch.reserveCapacity(batchSize)
            while let line = lines.next() {
                do {
                    guard let registration = try importer.registration(line), errors.count == 0 else { continue }
                    batch.append(registration)
                    if batch.count == batchSize { return batch }
                } catch {
                    errors.append(error)
                }
            }
            ended = true
            if errors.count > 0 { throw errors }
            return batch.isEmpty ? nil : batch
        }
    }
}

/// The lines of an import that are wrong: the first ``listedLimit`` errors, each naming its
/// line, and how many there were in all. Nothing of such an import is written.
public struct RegistrationLineErrors: Error, Hashable, Sendable, CustomStringConvertible {
    /// At most this many errors are kept (and shown): the rest are only counted.
    public static var listedLimit: Int { 20 }

    /// The first errors, in line order.
    public private(set) var listed: [RegistrationLineError] = []
    /// How many lines were wrong.
    public private(set) var count = 0

    public init() {}

    /// Counts `error`, keeping it when fewer than ``listedLimit`` are kept.
    public mutating func append(_ error: RegistrationLineError) {
        count += 1
        if listed.count < Self.listedLimit { listed.append(error) }
    }

    /// `3 invalid lines`.
    public var description: String { "\(count) invalid line\(count == 1 ? "" : "s")" }
}
