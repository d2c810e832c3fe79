/// A parsed JSON value that remembers where it stood in its source, so that errors can name a line
/// and column. Object members keep their order; numbers keep their exact source text.
public struct JSONValue: Sendable, Hashable {
    /// The kinds of JSON value.
    public indirect enum Kind: Sendable, Hashable {
        case null
        case bool(Bool)
        /// The number exactly as written (`"1.50"`, `"-3e2"`), so nothing is lost re-emitting it.
        case number(String)
        case string(String)
        case array([JSONValue])
        case object([JSONMember])
    }

    public var kind: Kind
    /// Byte offset of the value's first character in the source.
    public var offset: Int

    public init(_ kind: Kind, offset: Int = 0) {
        self.kind = kind
        self.offset = offset
    }
}

/// One `"key": value` pair of a JSON object.
public struct JSONMember: Sendable, Hashable {
    public var key: String
    /// Byte offset of the key's opening quote.
    public var keyOffset: Int
    public var value: JSONValue

    public init(key: String, keyOffset: Int = 0, value: JSONValue) {
        self.key = key
        self.keyOffset = keyOffset
        self.value = value
    }
}

extension JSONValue {
    /// A short name of the value's type, for error messages ("a string", "an object").
    public var typeDescription: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    public var stringValue: String? {
        if case .string(let s) = kind { return s }
        return nil
    }

    public var objectMembers: [JSONMember]? {
        if case .object(let members) = kind { return members }
        return nil
    }

    public var arrayElements: [JSONValue]? {
        if case .array(let elements) = kind { return elements }
        return nil
    }

    /// The value of the first member named `key`, if this is an object.
    public subscript(key: String) -> JSONValue? {
        objectMembers?.first(where: { $0.key == key })?.value
    }
}
