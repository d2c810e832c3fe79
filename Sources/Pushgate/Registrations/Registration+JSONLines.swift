/// Registrations as JSON lines, one object per line: the format of `pushgate registrations export`
/// and `import`.
///
/// ```
/// {"id":"3f2a…","platform":"apns","handle":"a1b2…","tags":["username:alice"],"owner":"alice"}
/// ```
///
/// `expiresAt` (seconds since the epoch) and `template` (`{"name", "body", "headers"}`) appear
/// when set. Handles are written in full: an export is a backup and holds device secrets.
extension Registration {
    /// The registration as one JSON line (no newline).
    public var jsonLine: String {
        var out: [UInt8] = []
        out.append(contentsOf: #"{"id":"#.utf8)
        Escaping.appendJSONString(id.rawValue, to: &out)
        out.append(contentsOf: #","platform":"#.utf8)
        Escaping.appendJSONString(platform.rawValue, to: &out)
        out.append(contentsOf: #","handle":"#.utf8)
        Escaping.appendJSONString(handle.value, to: &out)
        out.append(contentsOf: #","tags":["#.utf8)
        for (index, tag) in tags.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            Escaping.appendJSONString(tag.rawValue, to: &out)
        }
        out.append(contentsOf: #"],"owner":"#.utf8)
        Escaping.appendJSONString(owner.exportText, to: &out)
        if kind != .device {
            out.append(contentsOf: #","kind":"#.utf8)
            Escaping.appendJSONString(kind.stored, to: &out)
        }
        if let expiresAt {
            out.append(contentsOf: #","expiresAt":"#.utf8)
            out.append(contentsOf: String(expiresAt.secondsSinceEpoch).utf8)
        }
        if let template {
            out.append(contentsOf: #","template":{"body":"#.utf8)
            Escaping.appendJSONString(template.body, to: &out)
            out.append(contentsOf: #","headers":{"#.utf8)
            for (index, header) in template.headers.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Escaping.appendJSONString(header.key, to: &out)
                out.append(UInt8(ascii: ":"))
                Escaping.appendJSONString(header.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
            if let name = template.name {
                out.append(contentsOf: #","name":"#.utf8)
                Escaping.appendJSONString(name, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The fields of a JSON line.
    static let jsonLineFields = ["id", "platform", "handle", "tags", "owner", "kind", "expiresAt", "template"]

    /// Parses one JSON line of an export for `app`, validating the handle with `handles` and every
    /// tag. Errors name the field (and, for bad JSON, the column).
    public init(jsonLine line: String, app: AppID, handles: HandlePolicy) throws(RegistrationLineError) {
        try self.init(jsonLine: Array(line.utf8), app: app, handles: handles)
    }

    /// Parses one JSON line of an export, as read from a file: a line longer than
    /// ``RegistrationImport/maximumLineBytes`` is refused unread, and a line that is not UTF-8 is
    /// refused naming its first offending byte and that byte's 1-based column (in bytes), as they
    /// are in the file: give the bytes, not a `String` decoded from them, which would already have
    /// replaced the bad byte with U+FFFD (`0xEF 0xBF 0xBD`).
    public init(jsonLine bytes: [UInt8], app: AppID, handles: HandlePolicy) throws(RegistrationLineError) {
        guard bytes.count <= RegistrationImport.maximumLineBytes else { throw RegistrationLineError(.tooLong(bytes: bytes.count)) }
        // An ASCII line (most) needs no decoding to be valid.
        if bytes.contains(where: { $0 >= 0x80 }) {
            let invalid = firstInvalidUTF8(bytes, 0, bytes.count)
            if invalid < bytes.count { throw RegistrationLineError(.invalidUTF8(byte: bytes[invalid], offset: invalid)) }
        }
        let root: JSONValue
        do { root = try JSONParser.parse(bytes) } catch {
            throw RegistrationLineError("invalid JSON at column \(error.location.column): \(error.reason)")
        }
        guard let members = root.objectMembers else { throw RegistrationLineError("expected a JSON object, found \(root.typeDescription)") }
        if let unknown = members.first(where: { !Self.jsonLineFields.contains($0.key) }) {
            throw RegistrationLineError("unknown field '\(unknown.key)' (known: \(Self.jsonLineFields.sorted().joined(separator: ", ")))")
        }
        func string(_ key: String) throws(RegistrationLineError) -> String {
            guard let value = root[key] else { throw RegistrationLineError("'\(key)' is required") }
            guard let text = value.stringValue else {
                throw RegistrationLineError("'\(key)' must be a string, found \(value.typeDescription)")
            }
            return text
        }
        let idText = try string("id")
        let id: RegistrationID
        do { id = try RegistrationID(idText) } catch { throw RegistrationLineError("'id': \(error)") }
        let platformText = try string("platform")
        guard let platform = Platform(rawValue: platformText) else {
            throw RegistrationLineError("'platform': '\(platformText.prefix(40))' is not one of \(Platform.names)")
        }
        // A browser's subscription may be its handle string or the object its page gives.
        guard let handleValue = root["handle"] else { throw RegistrationLineError("'handle' is required") }
        guard let handleText = DeviceHandle.text(fromJSON: handleValue) else {
            throw RegistrationLineError(
                "'handle' must be a string (or a browser's subscription object), found \(handleValue.typeDescription)")
        }
        let handle: DeviceHandle
        do { handle = try handles.validate(handleText, for: platform) } catch { throw RegistrationLineError("'handle': \(error)") }
        let ownerText = try string("owner")
        guard let owner = RegistrationOwner(exportText: ownerText) else {
            throw RegistrationLineError(
                ownerText.isEmpty
                    ? "'owner' must not be empty"
                    : "'owner': a user name may not begin with $ (only \(RegistrationOwner.exportName), the hub's registrations)")
        }
        var tags: [Tag] = []
        if let value = root["tags"] {
            guard let elements = value.arrayElements else { throw RegistrationLineError("'tags' must be an array of strings") }
            for (index, element) in elements.enumerated() {
                guard let text = element.stringValue else { throw RegistrationLineError("'tags'[\(index)] must be a string") }
                do { tags.append(try Tag(text)) } catch { throw RegistrationLineError("'tags'[\(index)]: \(error)") }
            }
        }
        var expiresAt: Timestamp?
        if let value = root["expiresAt"], value.kind != .null {
            guard case .number(let text) = value.kind, let seconds = Double(text) else {
                throw RegistrationLineError("'expiresAt' must be a number (seconds since the epoch)")
            }
            expiresAt = Timestamp(secondsSinceEpoch: seconds)
        }
        var template: RegistrationTemplate?
        if let value = root["template"], value.kind != .null {
            guard value.objectMembers != nil, let body = value["body"]?.stringValue else {
                throw RegistrationLineError("'template' must be an object with a string 'body'")
            }
            var headers: [String: String] = [:]
            for member in value["headers"]?.objectMembers ?? [] {
                guard let headerValue = member.value.stringValue else {
                    throw RegistrationLineError("'template'.'headers'.'\(member.key)' must be a string")
                }
                headers[member.key] = headerValue
            }
            template = RegistrationTemplate(name: value["name"]?.stringValue, body: body, headers: headers)
        }
        var kind = RegistrationKind.device
        if let value = root["kind"], value.kind != .null {
            guard let text = value.stringValue, let parsed = RegistrationKind(stored: text), parsed.admits(handle.platform) else {
                throw RegistrationLineError("'kind' must be start:<attributes type> or activity:<name>, on an apns handle")
            }
            kind = parsed
        }
        do {
            self = try Registration(
                app: app, id: id, handle: handle, tags: tags, template: template, expiresAt: expiresAt, owner: owner, kind: kind)
        } catch {
            throw RegistrationLineError("'tags': \(error)")
        }
    }
}

/// A line of a registrations export could not be read; says what is wrong with it and, once
/// ``RegistrationImport`` has placed it, where: `backup.jsonl:3:52: invalid UTF-8: byte 0xFF at
/// byte 52`, `backup.jsonl:7: 'handle': …`, `backup.jsonl:9: id: duplicate of line 2`.
public struct RegistrationLineError: PushgateInputError, Hashable {
    package enum Code: Hashable {
        /// The message names the field.
        case invalid(String)
        case tooLong(bytes: Int)
        /// `offset` counts bytes from the start of the line.
        case invalidUTF8(byte: UInt8, offset: Int)
        case duplicateID(firstLine: Int)
    }

    package let code: Code
    /// The file (or other source) the line was read from, when known.
    public internal(set) var source: String?
    /// The 1-based line number, when known.
    public internal(set) var line: Int?

    package init(_ code: Code) {
        self.code = code
    }

    public init(_ description: String) {
        self.init(.invalid(description))
    }

    /// The 1-based byte column of the problem, when it has one (invalid UTF-8).
    public var column: Int? {
        if case .invalidUTF8(_, let offset) = code { return offset + 1 }
        return nil
    }

    /// What is wrong, without the location.
    public var reason: String {
        switch code {
        case .invalid(let message):
            return message
        case .tooLong(let bytes):
            return "the line is \(bytes) bytes long; the limit is \(RegistrationImport.maximumLineBytes) bytes (1 MiB)"
        case .invalidUTF8(let byte, let offset):
            return "invalid UTF-8: byte \(hexByte(byte)) at byte \(offset + 1)"
        case .duplicateID(let firstLine):
            return "id: duplicate of line \(firstLine)"
        }
    }

    /// `source:line:column: reason`, with the parts that are known.
    public var description: String {
        var location = ""
        if let source { location = source + ":" }
        if let line { location += (source == nil ? "line " : "") + "\(line):" }
        if let column, line != nil { location += "\(column):" }
        return location.isEmpty ? reason : location + " " + reason
    }
}
