/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// It rejects what lenient parsers accept and later code would trip over: invalid UTF-8, unpaired
/// surrogate escapes, control characters in strings, trailing commas, leading zeros, duplicate
/// object keys, trailing content, and nesting deeper than `maximumDepth`.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"aps":{"alert":"hi"}}"#.utf8))
/// ```
public struct JSONParser {
    /// Nesting deeper than this is rejected (protects the stack against hostile input).
    public static let maximumDepth = 512
    /// Objects with fewer members than this find a repeated key by comparing with each member
    /// (cheaper than hashing every key); larger ones keep a set.
    static let smallObjectMembers = 16

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses one JSON value that must span the whole input (surrounding white space allowed).
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index != bytes.count {
            throw parser.error("unexpected content after the JSON value")
        }
        return value
    }

    /// Parses a JSON text given as a Swift string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private func error(_ reason: String, at offset: Int? = nil) -> JSONParseError {
        let at = offset ?? index
        return JSONParseError(offset: at, location: SourceLocation(offset: at, in: bytes), reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func describeCurrent() -> String {
        guard index < bytes.count else { return "end of input" }
        let byte = bytes[index]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("expected a value, found end of input") }
        let start = index
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return JSONValue(.string(try parseString()), offset: start)
        case UInt8(ascii: "t"): try expectLiteral("true"); return JSONValue(.bool(true), offset: start)
        case UInt8(ascii: "f"): try expectLiteral("false"); return JSONValue(.bool(false), offset: start)
        case UInt8(ascii: "n"): try expectLiteral("null"); return JSONValue(.null, offset: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return JSONValue(.number(try parseNumber()), offset: start)
        default:
            throw error("expected a value, found \(describeCurrent())")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let count = literal.utf8CodeUnitCount
        let matches = literal.withUTF8Buffer { expected in
            index + count <= bytes.count && bytes[index..<index + count].elementsEqual(expected)
        }
        guard matches else { throw error("invalid literal, expected '\(literal)'", at: start) }
        index += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > Self.maximumDepth { throw error("nesting deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        let start = index
        try enter()
        index += 1
        var members: [JSONMember] = []
        // Keys already seen: looked up in `members` while the object is small, in a set beyond.
        var seen: Set<String> = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return JSONValue(.object(members), offset: start)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a string key, found \(describeCurrent())")
            }
            let keyOffset = index
            let key = try parseString()
            let duplicate: Bool
            if members.count < Self.smallObjectMembers {
                duplicate = members.contains { $0.key == key }
            } else {
                if seen.isEmpty { seen = Set(members.lazy.map(\.key)) }
                duplicate = !seen.insert(key).inserted
            }
            if duplicate { throw error("duplicate key \"\(key)\"", at: keyOffset) }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after key \"\(key)\", found \(describeCurrent())")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            members.append(JSONMember(key: key, keyOffset: keyOffset, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw error("expected ',' or '}', found end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
                    throw error("trailing comma before '}'")
                }
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return JSONValue(.object(members), offset: start)
            }
            throw error("expected ',' or '}' after an object member, found \(describeCurrent())")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        let start = index
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return JSONValue(.array(elements), offset: start)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("expected ',' or ']', found end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
                    throw error("trailing comma before ']'")
                }
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return JSONValue(.array(elements), offset: start)
            }
            throw error("expected ',' or ']' after an array element, found \(describeCurrent())")
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("expected a digit in number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count && isDigit(bytes[index]) { throw error("leading zeros are not allowed") }
        } else {
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error("expected a digit after the decimal point")
            }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("expected a digit in exponent") }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1
        var scalars = String.UnicodeScalarView()
        var runStart = index
        // Fast path: copy runs of plain bytes; validate UTF-8 when the run is closed.
        func flush(
            _ parser: JSONParser, into scalars: inout String.UnicodeScalarView, upTo end: Int
        )
            throws(JSONParseError)
        {
            if end == runStart { return }
            guard let run = String(validating: parser.bytes[runStart..<end], as: UTF8.self) else {
                let offset = firstInvalidUTF8(parser.bytes, runStart, end)
                throw parser.error("invalid UTF-8 in string: byte \(hexByte(parser.bytes[offset]))", at: offset)
            }
            scalars.append(contentsOf: run.unicodeScalars)
        }
        while true {
            guard index < bytes.count else { throw error("unterminated string", at: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                // No escape: the string is its bytes (most strings).
                if runStart == start + 1 {
                    guard let text = String(validating: bytes[runStart..<index], as: UTF8.self) else {
                        let offset = firstInvalidUTF8(bytes, runStart, index)
                        throw error("invalid UTF-8 in string: byte \(hexByte(bytes[offset]))", at: offset)
                    }
                    index += 1
                    return text
                }
                try flush(self, into: &scalars, upTo: index)
                index += 1
                return String(scalars)
            }
            if byte < 0x20 {
                throw error("unescaped control character 0x\(String(byte, radix: 16, uppercase: true)) in string")
            }
            if byte == UInt8(ascii: "\\") {
                try flush(self, into: &scalars, upTo: index)
                let escapeStart = index
                index += 1
                guard index < bytes.count else { throw error("unterminated escape sequence", at: escapeStart) }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    let unit = try parseHex4(escapeStart)
                    if (0xD800...0xDBFF).contains(unit) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate escape \\u\(hex(unit))", at: escapeStart) }
                        index += 2
                        let low = try parseHex4(escapeStart)
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw error("unpaired surrogate escape \\u\(hex(unit))", at: escapeStart)
                        }
                        let value = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        scalars.append(Unicode.Scalar(value)!)
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        throw error("unpaired surrogate escape \\u\(hex(unit))", at: escapeStart)
                    } else {
                        scalars.append(Unicode.Scalar(unit)!)
                    }
                default:
                    throw error("invalid escape sequence '\\\(Character(Unicode.Scalar(escaped)))'", at: escapeStart)
                }
                runStart = index
                continue
            }
            index += 1
        }
    }

    private func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private mutating func parseHex4(_ escapeStart: Int) throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("incomplete \\u escape", at: escapeStart) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - 0x41 + 10)
            default: throw error("invalid hex digit in \\u escape", at: escapeStart)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}

/// `0xFF`: a byte as error messages name it.
func hexByte(_ byte: UInt8) -> String {
    "0x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
}

/// The offset of the first byte in `bytes[start..<end]` that starts an invalid UTF-8 sequence,
/// or `end` if there is none.
func firstInvalidUTF8(_ bytes: [UInt8], _ start: Int, _ end: Int) -> Int {
    var offset = start
    var decoder = UTF8()
    var iterator = bytes[start..<end].makeIterator()
    while true {
        switch decoder.decode(&iterator) {
        case .scalarValue(let scalar): offset += UTF8.width(scalar)
        case .emptyInput: return end
        case .error: return offset
        }
    }
}
