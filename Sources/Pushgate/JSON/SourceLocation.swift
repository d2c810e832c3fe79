/// A 1-based line and column in a text, computed from a byte offset.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// The line and column of `offset` in `bytes`; columns count characters, not bytes.
    public init(offset: Int, in bytes: some Collection<UInt8>) {
        var line = 1
        var column = 1
        var index = 0
        for byte in bytes {
            if index >= offset { break }
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        self.line = line
        self.column = column
    }

    public var description: String { "line \(line), column \(column)" }
}
