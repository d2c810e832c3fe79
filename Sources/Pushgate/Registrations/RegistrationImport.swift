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

    /// The name errors give the input: a file name, or `stdin`.
    public let source: String
    public let app: AppID
    public let handles: HandlePolicy
    /// The line each id was first read on.
    private var firstLineOfID: [RegistrationID: Int] = [:]

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
        if let first = firstLineOfID[registration.id] { throw placed(RegistrationLineError(.duplicateID(firstLine: first)), number) }
        firstLineOfID[registration.id] = number
        return registration
    }

    /// The error for line `number`, `bytes` long, which the reader did not keep because it is
    /// longer than ``maximumLineBytes``.
    public func lineTooLong(number: Int, bytes: Int) -> RegistrationLineError {
        placed(RegistrationLineError(.tooLong(bytes: bytes)), number)
    }

    private func placed(_ error: RegistrationLineError, _ number: Int) -> RegistrationLineError {
        var error = error
        error.source = source
        error.line = number
        return error
    }
}
