/// A JSON text could not be parsed: what was wrong, and where.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Byte offset of the problem in the input.
    public let offset: Int
    /// Line and column of the problem.
    public let location: SourceLocation
    /// What was wrong, for example `expected ',' or '}' after an object member`.
    public let reason: String

    public init(offset: Int, location: SourceLocation, reason: String) {
        self.offset = offset
        self.location = location
        self.reason = reason
    }

    public var description: String { "invalid JSON at \(location): \(reason)" }
}
