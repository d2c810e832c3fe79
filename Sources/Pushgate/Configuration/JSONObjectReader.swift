/// Reads one JSON object of a configuration key by key, remembering which keys were read so that
/// ``finish()`` can report every unknown key instead of silently ignoring it.
struct JSONObjectReader {
    let path: String
    let value: JSONValue
    let members: [JSONMember]
    let source: [UInt8]
    private var consumed: Set<String> = []

    init(_ value: JSONValue, path: String, source: [UInt8]) throws(ConfigurationError) {
        guard let members = value.objectMembers else {
            throw ConfigurationError(
                path: path, location: SourceLocation(offset: value.offset, in: source),
                reason: "expected an object, found \(value.typeDescription)")
        }
        self.path = path
        self.value = value
        self.members = members
        self.source = source
    }

    func error(_ reason: String, key: String? = nil, at offset: Int? = nil) -> ConfigurationError {
        let path = key.map { jsonPath(self.path, $0) } ?? self.path
        let offset = offset ?? key.flatMap { key in members.first(where: { $0.key == key })?.value.offset } ?? value.offset
        return ConfigurationError(path: path, location: SourceLocation(offset: offset, in: source), reason: reason)
    }

    /// An error about element `index` of the array at `key` (`$.listener.trustedProxies[1]`), located at the element.
    func error(_ reason: String, key: String, index: Int) -> ConfigurationError {
        let element = members.first(where: { $0.key == key })?.value.arrayElements?[index]
        return ConfigurationError(
            path: "\(jsonPath(path, key))[\(index)]", location: SourceLocation(offset: element?.offset ?? value.offset, in: source),
            reason: reason)
    }

    mutating func raw(_ key: String) -> JSONValue? {
        consumed.insert(key)
        guard let value = members.first(where: { $0.key == key })?.value else { return nil }
        if case .null = value.kind { return nil }
        return value
    }

    mutating func string(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = raw(key) else { return nil }
        guard let text = value.stringValue else { throw error("expected a string, found \(value.typeDescription)", key: key) }
        return text
    }

    mutating func requiredString(_ key: String) throws(ConfigurationError) -> String {
        guard let text = try string(key) else { throw error("missing required key '\(key)' (a string)") }
        if text.isEmpty { throw error("must not be empty", key: key) }
        return text
    }

    mutating func int(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let value = raw(key) else { return nil }
        guard case .number(let digits) = value.kind else {
            throw error("expected a whole number, found \(value.typeDescription)", key: key)
        }
        guard let number = Int(digits) else { throw error("expected a whole number, found \(digits)", key: key) }
        guard range.contains(number) else { throw error("\(number) is out of range \(range.lowerBound)…\(range.upperBound)", key: key) }
        return number
    }

    mutating func number(_ key: String, in range: ClosedRange<Double>) throws(ConfigurationError) -> Double? {
        guard let value = raw(key) else { return nil }
        guard case .number(let digits) = value.kind, let number = Double(digits) else {
            throw error("expected a number, found \(value.typeDescription)", key: key)
        }
        guard range.contains(number) else { throw error("\(digits) is out of range \(range.lowerBound)…\(range.upperBound)", key: key) }
        return number
    }

    mutating func bool(_ key: String) throws(ConfigurationError) -> Bool? {
        guard let value = raw(key) else { return nil }
        guard case .bool(let flag) = value.kind else { throw error("expected true or false, found \(value.typeDescription)", key: key) }
        return flag
    }

    mutating func object(_ key: String) throws(ConfigurationError) -> JSONObjectReader? {
        guard let value = raw(key) else { return nil }
        return try JSONObjectReader(value, path: jsonPath(path, key), source: source)
    }

    mutating func stringArray(_ key: String) throws(ConfigurationError) -> [String]? {
        guard let value = raw(key) else { return nil }
        guard let elements = value.arrayElements else {
            throw error("expected an array of strings, found \(value.typeDescription)", key: key)
        }
        var result: [String] = []
        for (index, element) in elements.enumerated() {
            guard let text = element.stringValue else {
                throw ConfigurationError(
                    path: "\(jsonPath(path, key))[\(index)]", location: SourceLocation(offset: element.offset, in: source),
                    reason: "expected a string, found \(element.typeDescription)")
            }
            result.append(text)
        }
        return result
    }

    /// A secret source: `{"file": …}`, `{"env": …}` or `{"value": …}`.
    mutating func secret(_ key: String) throws(ConfigurationError) -> SecretSource? {
        guard var reader = try object(key) else { return nil }
        let keys = reader.members.map(\.key)
        guard keys.count == 1 else {
            throw reader.error(
                "a secret needs exactly one of \"file\", \"env\" or \"value\", found \(keys.isEmpty ? "none" : keys.joined(separator: ", "))"
            )
        }
        let source: SecretSource
        if let path = try reader.string("file") {
            source = .file(path)
        } else if let name = try reader.string("env") {
            source = .environment(name)
        } else if let value = try reader.string("value") {
            source = .inline(value)
        } else {
            source = .inline("")
        }
        try reader.finish(expected: ["file", "env", "value"])
        if case .inline(let value) = source, value.isEmpty { throw reader.error("the secret's value is empty") }
        return source
    }

    mutating func requiredSecret(_ key: String) throws(ConfigurationError) -> SecretSource {
        guard let source = try secret(key) else {
            throw error("missing required key '\(key)' (a secret: {\"file\": …}, {\"env\": …} or {\"value\": …})")
        }
        return source
    }

    /// Fails on the first key that was never read, naming the keys that are accepted.
    func finish(expected: [String]) throws(ConfigurationError) {
        for member in members where !consumed.contains(member.key) {
            var reason = "unknown key '\(member.key)'; expected one of: \(expected.joined(separator: ", "))"
            if let suggestion = expected.first(where: { $0.lowercased() == member.key.lowercased() || editDistance($0, member.key) <= 2 }) {
                reason += " (did you mean '\(suggestion)'?)"
            }
            throw ConfigurationError(
                path: jsonPath(path, member.key), location: SourceLocation(offset: member.keyOffset, in: source), reason: reason)
        }
    }
}

/// Levenshtein distance, for "did you mean" suggestions.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.lowercased()), b = Array(b.lowercased())
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}
