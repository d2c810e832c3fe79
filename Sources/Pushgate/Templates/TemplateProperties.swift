/// The values a template is rendered with. Names are case-insensitive (`Message` and `message` are
/// the same property).
///
/// ```swift
/// let properties = TemplateProperties(["message": "Hello", "user": "alice"])
/// ```
public struct TemplateProperties: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    private var values: [String: String]

    public init(_ values: [String: String] = [:]) {
        self.values = [:]
        self.values.reserveCapacity(values.count)
        for (name, value) in values { self.values[Self.key(name)] = value }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// Builds properties from raw bytes, rejecting invalid UTF-8 with an error naming the property.
    public init(validatingUTF8 values: [String: [UInt8]]) throws(TemplateRenderError) {
        var decoded: [String: String] = [:]
        for (name, bytes) in values {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw TemplateRenderError.invalidUTF8(property: name)
            }
            decoded[name] = text
        }
        self.init(decoded)
    }

    /// The lookup key for a property name (ASCII lower-case; names are ASCII by definition).
    public static func key(_ name: String) -> String {
        name.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? name.lowercased() : name
    }

    public subscript(name: String) -> String? {
        get { values[Self.key(name)] }
        set { values[Self.key(name)] = newValue }
    }

    /// Lookup by an already lower-cased key (the fast path used while rendering).
    subscript(key key: String) -> String? { values[key] }

    public var names: [String] { values.keys.sorted() }
}
