/// Validates the lines of a registrations import (JSON lines, as `pushgate registrations export`
/// writes them) one at a time, for a reader that does the I/O: each line on its own (size, UTF-8,
/// JSON, fields, handle, tags) and against the lines before it (no id twice). Every error names
/// the source and the line (and the column where it has one).
///
/// ```swift
/// var importer = RegistrationImport(source: "backup.jsonl", app: app.id, handles: app.configuration.handles)
/// for (number, bytes) in lines {  // 1-based numbers, each line's bytes without its newline
///     do {
///         if let registration = try importer.registration(line: bytes, number: number) { valid.append(registration) }
///     } catch {
///         errors.append(error.description)  // "backup.jsonl:9: id: duplicate of line 2"
///     }
/// }
/// ```
///
/// A reader that stops keeping a line's bytes once it is longer than ``maximumLineBytes`` reports it
/// with ``lineTooLong(number:bytes:)`` instead.
public struct RegistrationImport: Sendable {
    /// Longest line, in bytes (1 MiB): a registration's line is a few KB at most (4 KB of FCM
    /// token, 60 tags of 120 characters, a template body).
    public static let maximumLineBytes = 1 << 20
    /// Registrations per batch of an import (``RegistrationImportBatches``) unless told otherwise:
    /// a few MB in memory, few enough trips to the store that a trip costs nothing beside the
    /// writing, and enough rows that a store writing a batch in id order finds several on a page.
    public static let batchSize = 10_000

    /// The name errors give the input: a file name, or `stdin`.
    public let source: String
    public let app: AppID
    public let handles: HandlePolicy
    /// The line each id was first read on, by the id's digest: about 40 bytes a line whatever
    /// the ids' length, where the ids themselves would keep 100 (a million lines: 40 MB).
    private var firstLineOfID: [Digest: Int] = [:]

    /// One line of the input as a reader hands it over: its bytes without the `\n`, or only its
    /// length when it is longer than ``maximumLineBytes`` (the reader did not keep it).
    public struct Line: Sendable, Hashable {
        /// What the reader kept of a line.
        public enum Content: Sendable, Hashable {
            case bytes([UInt8])
            case tooLong(bytes: Int)
        }

        /// 1-based.
        public var number: Int
        public var content: Content

        public init(number: Int, content: Content) {
            self.number = number
            self.content = content
        }
    }

    public init(source: String, app: AppID, handles: HandlePolicy) {
        self.source = source
        self.app = app
        self.handles = handles
    }

    /// The registration on line `number` (1-based), or nil for a blank line (spaces, tabs, a `\r`).
    /// `line` is the line's bytes as read, without its `\n`.
    public mutating func registration(line: [UInt8], number: Int) throws(RegistrationLineError) -> Registration? {
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return nil }
        let registration: Registration
        do { registration = try Registration(jsonLine: line, app: app, handles: handles) } catch {
            throw placed(error, number)
        }
        let digest = Digest(registration.id)
        if let first = firstLineOfID[digest] { throw placed(RegistrationLineError(.duplicateID(firstLine: first)), number) }
        firstLineOfID[digest] = number
        return registration
    }

    /// The registration on `line`, or nil for a blank line; a line the reader did not keep is
    /// refused as too long.
    public mutating func registration(_ line: Line) throws(RegistrationLineError) -> Registration? {
        switch line.content {
        case .bytes(let bytes): try registration(line: bytes, number: line.number)
        case .tooLong(let bytes): throw lineTooLong(number: line.number, bytes: bytes)
        }
    }

    /// The error for line `number`, `bytes` long, which the reader did not keep because it is
    /// longer than ``maximumLineBytes``.
    public func lineTooLong(number: Int, bytes: Int) -> RegistrationLineError {
        placed(RegistrationLineError(.tooLong(bytes: bytes)), number)
    }

    /// 128 bits that stand for an id: two of the standard library's keyed hashes (SipHash, keyed
    /// at random per process) of it. Two ids of an import share a digest with a probability of
    /// about n²/2¹²⁹ (10⁻²⁵ for ten million lines), far below that of a memory error.
    struct Digest: Hashable {
        let high: Int
        let low: Int

        init(_ id: RegistrationID) {
            var high = Hasher()
            high.combine(0 as UInt8)
            high.combine(id.rawValue)
            var low = Hasher()
            low.combine(1 as UInt8)
            low.combine(id.rawValue)
            self.high = high.finalize()
            self.low = low.finalize()
        }
    }

    private func placed(_ error: RegistrationLineError, _ number: Int) -> RegistrationLineError {
        var error = error
        error.source = source
        error.line = number
        return error
    }
}
