/// A `multipart/mixed` body as the Notification Hubs SDKs send a `$batch`: its parts by their
/// `Content-Disposition` name. Parsed on the bytes: a Swift `String` sees `\r\n` as one
/// character, which is not how MIME counts.
package struct MultipartBody: Sendable {
    package struct Part: Sendable, Hashable {
        package var name: String
        package var body: [UInt8]
    }

    package let parts: [Part]

    /// The boundary of a `Content-Type`: `multipart/mixed; boundary=x` (.NET) or
    /// `boundary = "x"` (the JavaScript SDK: spaces and quotes); nil when it is not multipart/mixed
    /// or names no boundary of 1 to 70 characters (RFC 2046).
    package static func boundary(contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/mixed") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pieces = parameter.split(separator: "=", maxSplits: 1)
            guard pieces.count == 2, trimmed(pieces[0], " ").lowercased() == "boundary" else { continue }
            let value = trimmed(Substring(trimmed(pieces[1], " ")), "\"")
            return value.isEmpty || value.count > 70 ? nil : value
        }
        return nil
    }

    private static func trimmed(_ text: Substring, _ character: Character) -> String {
        String(text.drop(while: { $0 == character }).reversed().drop(while: { $0 == character }).reversed())
    }

    /// The parts of `bytes` delimited by `--boundary`, up to the closing `--boundary--`.
    package init(_ bytes: [UInt8], boundary: String) throws(HubParseError) {
        let delimiter = Array(("--" + boundary).utf8)
        func find(_ needle: [UInt8], from start: Int) -> Int? {
            guard needle.count <= bytes.count - start else { return nil }
            var index = start
            while index <= bytes.count - needle.count {
                if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
                index += 1
            }
            return nil
        }
        var parts: [Part] = []
        guard var cursor = find(delimiter, from: 0) else {
            throw HubParseError("the body has no part delimited by --\(boundary.prefix(70))")
        }
        while true {
            cursor += delimiter.count
            // "--" after the delimiter ends the body.
            if bytes.count >= cursor + 2, bytes[cursor] == UInt8(ascii: "-"), bytes[cursor + 1] == UInt8(ascii: "-") { break }
            guard let next = find(delimiter, from: cursor) else {
                throw HubParseError("the multipart body does not end with --\(boundary.prefix(70))--")
            }
            var part = Array(bytes[cursor..<next])
            // The CRLF before the next delimiter belongs to the delimiter (RFC 2046).
            if part.last == UInt8(ascii: "\n") { part.removeLast() }
            if part.last == UInt8(ascii: "\r") { part.removeLast() }
            if let (head, body) = Self.headAndBody(part) {
                let text = String(decoding: part[..<head], as: UTF8.self).lowercased()
                for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
                where line.hasPrefix("content-disposition") {
                    guard let nameRange = line.range(of: "name=") else { continue }
                    let name = Self.trimmed(Substring(Self.trimmed(line[nameRange.upperBound...].prefix { $0 != ";" }, " ")), "\"")
                    parts.append(Part(name: name, body: Array(part[body...])))
                }
            }
            cursor = next
        }
        self.parts = parts
    }

    /// Where a part's head ends and its body starts: after the first blank line (CRLF or LF).
    private static func headAndBody(_ part: [UInt8]) -> (head: Int, body: Int)? {
        let blank = [UInt8]("\r\n\r\n".utf8)
        let bare = [UInt8]("\n\n".utf8)
        for index in part.indices {
            if part[index...].starts(with: blank) { return (index, index + 4) }
            if part[index...].starts(with: bare) { return (index, index + 2) }
        }
        return nil
    }

    /// The first part named `name`.
    package func part(named name: String) -> Part? { parts.first { $0.name == name } }
}
