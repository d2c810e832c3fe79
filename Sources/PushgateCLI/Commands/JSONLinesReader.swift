import Foundation

/// The lines of a file, read in chunks: a line longer than the limit is reported with its length
/// and skipped without being held in memory; a line that is not UTF-8 names its first bad byte.
struct JSONLinesReader: Sequence, IteratorProtocol {
    struct Line {
        enum Content {
            case text(String)
            case tooLong(bytes: Int)
            /// `offset` counts bytes from the start of the line.
            case invalidUTF8(offset: Int, byte: UInt8)
        }

        var number: Int
        var content: Content
    }

    private let input: FileHandle
    private let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    private var position = 0
    private var finished = false
    private var number = 0

    init(_ input: FileHandle, maximumLineBytes: Int) {
        self.input = input
        self.maximumLineBytes = maximumLineBytes
    }

    mutating func next() -> Line? {
        var line: [UInt8] = []
        var length = 0
        while true {
            if position == buffer.count {
                if finished { break }
                let chunk = input.readData(ofLength: 1 << 16)
                if chunk.isEmpty {
                    finished = true
                    break
                }
                buffer = Array(chunk)
                position = 0
            }
            let end = buffer[position...].firstIndex(of: 0x0A) ?? buffer.count
            length += end - position
            if length <= maximumLineBytes { line += buffer[position..<end] }
            if end < buffer.count {
                position = end + 1
                number += 1
                return Self.line(number, line, length: length, limit: maximumLineBytes)
            }
            position = end
        }
        guard length > 0 else { return nil }
        number += 1
        return Self.line(number, line, length: length, limit: maximumLineBytes)
    }

    static func line(_ number: Int, _ bytes: [UInt8], length: Int, limit: Int) -> Line {
        if length > limit { return Line(number: number, content: .tooLong(bytes: length)) }
        if let text = String(validating: bytes, as: UTF8.self) { return Line(number: number, content: .text(text)) }
        let offset = firstInvalidUTF8Offset(bytes) ?? 0
        return Line(number: number, content: .invalidUTF8(offset: offset, byte: bytes[offset]))
    }

    /// The offset of the first byte that cannot start or continue a UTF-8 sequence there.
    static func firstInvalidUTF8Offset(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            let count: Int
            switch lead {
            case 0x00...0x7F: count = 1
            case 0xC2...0xDF: count = 2
            case 0xE0...0xEF: count = 3
            case 0xF0...0xF4: count = 4
            default: return index
            }
            guard index + count <= bytes.count else { return index }
            for continuation in 1..<count where bytes[index + continuation] & 0xC0 != 0x80 {
                return index + continuation
            }
            let scalar = String(validating: bytes[index..<index + count], as: UTF8.self)
            if scalar == nil { return index }  // overlong, surrogate or out of range
            index += count
        }
        return nil
    }
}
