import Foundation
import Pushgate

/// The lines of a file as bytes, read in chunks: a line longer than the limit is reported with
/// its length and skipped without being held in memory. What the bytes mean is the domain's
/// business (`RegistrationImport`). It is its own iterator: iterate one copy only (the copies
/// share the file's position).
struct JSONLinesReader: Sequence, IteratorProtocol, Sendable {
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

    mutating func next() -> RegistrationImport.Line? {
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

    static func line(_ number: Int, _ bytes: [UInt8], length: Int, limit: Int) -> RegistrationImport.Line {
        RegistrationImport.Line(number: number, content: length > limit ? .tooLong(bytes: length) : .bytes(bytes))
    }
}
