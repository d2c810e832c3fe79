/// Context escaping for rendered values: whatever a property contains, the payload stays well
/// formed and the value cannot end the string or element it is written into.
public enum Escaping {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `text` to `output` as the inside of a JSON string: `"` and `\` escaped, control
    /// characters as `\n`, `\t`… or `\u00XX`, and U+2028 / U+2029 as `\u2028` / `\u2029` (so the
    /// result is also safe inside JavaScript).
    public static func appendJSONStringContent(_ text: some StringProtocol, to output: inout [UInt8]) {
        var text = String(text)
        text.withUTF8 { bytes in
            var runStart = 0
            var index = 0
            let count = bytes.count
            while index < count {
                let byte = bytes[index]
                let replacement: StaticString?
                var width = 1
                switch byte {
                case UInt8(ascii: "\""): replacement = "\\\""
                case UInt8(ascii: "\\"): replacement = "\\\\"
                case 0x0A: replacement = "\\n"
                case 0x0D: replacement = "\\r"
                case 0x09: replacement = "\\t"
                case 0x08: replacement = "\\b"
                case 0x0C: replacement = "\\f"
                case 0x00..<0x20, 0x7F:
                    output.append(contentsOf: bytes[runStart..<index])
                    output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    output.append(hexDigits[Int(byte >> 4)])
                    output.append(hexDigits[Int(byte & 0x0F)])
                    index += 1
                    runStart = index
                    continue
                case 0xE2 where index + 2 < count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9):
                    replacement = bytes[index + 2] == 0xA8 ? "\\u2028" : "\\u2029"
                    width = 3
                default:
                    replacement = nil
                }
                if let replacement {
                    output.append(contentsOf: bytes[runStart..<index])
                    replacement.withUTF8Buffer { output.append(contentsOf: $0) }
                    index += width
                    runStart = index
                } else {
                    index += 1
                }
            }
            output.append(contentsOf: bytes[runStart..<count])
        }
    }

    /// `text` as a complete JSON string literal, quotes included.
    public static func jsonString(_ text: some StringProtocol) -> String {
        var bytes: [UInt8] = []
        appendJSONString(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `text` as a complete JSON string literal, quotes included.
    public static func appendJSONString(_ text: some StringProtocol, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        appendJSONStringContent(text, to: &output)
        output.append(UInt8(ascii: "\""))
    }

    /// Appends `text` escaped for XML character data or a double-quoted attribute value: `& < > " '`
    /// as entities; tab, line feed and carriage return in attributes (and carriage return in text) as
    /// character references so they survive attribute-value normalisation.
    ///
    /// - Throws: ``XMLCharacterError`` for characters XML 1.0 cannot carry at all (other C0 controls,
    ///   U+FFFE, U+FFFF); `offset` is the character's 1-based position in `text`.
    public static func appendXML(_ text: some StringProtocol, attribute: Bool, to output: inout [UInt8]) throws(XMLCharacterError) {
        var text = String(text)
        let failure: XMLCharacterError? = text.withUTF8 { bytes in
            var runStart = 0
            var index = 0
            let count = bytes.count
            while index < count {
                let byte = bytes[index]
                let replacement: StaticString?
                switch byte {
                case UInt8(ascii: "&"): replacement = "&amp;"
                case UInt8(ascii: "<"): replacement = "&lt;"
                case UInt8(ascii: ">"): replacement = "&gt;"
                case UInt8(ascii: "\""): replacement = "&quot;"
                case UInt8(ascii: "'"): replacement = "&apos;"
                case 0x0D: replacement = "&#13;"
                case 0x09: replacement = attribute ? "&#9;" : nil
                case 0x0A: replacement = attribute ? "&#10;" : nil
                case 0x00..<0x20:
                    return XMLCharacterError(scalar: UInt32(byte), offset: characterOffset(bytes, index))
                case 0xEF where index + 2 < count && bytes[index + 1] == 0xBF && (bytes[index + 2] == 0xBE || bytes[index + 2] == 0xBF):
                    return XMLCharacterError(scalar: bytes[index + 2] == 0xBE ? 0xFFFE : 0xFFFF, offset: characterOffset(bytes, index))
                default:
                    replacement = nil
                }
                if let replacement {
                    output.append(contentsOf: bytes[runStart..<index])
                    replacement.withUTF8Buffer { output.append(contentsOf: $0) }
                    index += 1
                    runStart = index
                } else {
                    index += 1
                }
            }
            output.append(contentsOf: bytes[runStart..<count])
            return nil
        }
        if let failure { throw failure }
    }

    private static func characterOffset(_ bytes: UnsafeBufferPointer<UInt8>, _ byteIndex: Int) -> Int {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[..<byteIndex]), as: UTF8.self).count + 1
    }
}

/// A value holds a character that XML 1.0 cannot represent, not even as a character reference.
public struct XMLCharacterError: Error, Hashable, Sendable, CustomStringConvertible {
    public let scalar: UInt32
    /// 1-based character position in the value.
    public let offset: Int

    public var description: String {
        let hex = String(scalar, radix: 16, uppercase: true)
        return "character U+\(String(repeating: "0", count: max(0, 4 - hex.count)) + hex) at position \(offset) cannot appear in XML"
    }
}
