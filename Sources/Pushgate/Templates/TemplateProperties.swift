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

extension TemplateProperties {
    /// What a send body may be, as the API that takes it says: the tutorial API's notify send takes
    /// a JSON string (the message) or an object that must carry `message`; Notification Hubs'
    /// template sends take an object of any properties.
    public struct BodyRules: Sendable, Hashable {
        /// A JSON string is this property's value (nil: the body must be an object).
        public var stringIs: String?
        /// Properties an object must carry.
        public var required: [String]

        public init(stringIs: String? = nil, required: [String] = []) {
            self.stringIs = stringIs
            self.required = required
        }

        /// The tutorial API's: `"text"` is the message, an object must carry `message`.
        public static let message = BodyRules(stringIs: "message", required: ["message"])
        /// Notification Hubs' template sends: an object of properties.
        public static let anyProperties = BodyRules()
    }

    /// The one parser of template properties from a JSON send body (both APIs): an object's members
    /// are properties named as a template names them (letters, digits and `_`, at most
    /// ``TemplateExpression/maximumPropertyNameLength`` characters), each a string, number or
    /// boolean; errors name the member by its JSON path.
    public static func parse(json body: [UInt8], rules: BodyRules) throws(TemplatePropertiesError) -> TemplateProperties {
        let value: JSONValue
        do { value = try JSONParser.parse(body) } catch { throw TemplatePropertiesError(error.description) }
        if case .string(let text) = value.kind, let name = rules.stringIs { return TemplateProperties([name: text]) }
        guard let members = value.objectMembers else {
            let expected = rules.stringIs.map { "a JSON string (the \($0)) or an object of properties" } ?? "a JSON object of properties"
            throw TemplatePropertiesError("must be \(expected), not \(value.typeDescription)")
        }
        var properties = TemplateProperties()
        for member in members {
            let name = member.key
            guard !name.isEmpty, name.count <= TemplateExpression.maximumPropertyNameLength,
                name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            else {
                throw TemplatePropertiesError(
                    "property name '\(name.prefix(40))' must be 1 to \(TemplateExpression.maximumPropertyNameLength) letters, digits and _ "
                        + "(as a template names it)")
            }
            switch member.value.kind {
            case .string(let text): properties[name] = text
            case .number(let text): properties[name] = text
            case .bool(let flag): properties[name] = flag ? "true" : "false"
            default: throw TemplatePropertiesError("$.\(name) must be a string, number or boolean")
            }
        }
        if let missing = rules.required.first(where: { properties[$0] == nil }) {
            throw TemplatePropertiesError("the object must contain \"\(missing)\"")
        }
        return properties
    }
}

/// A send body that is not template properties; the message names the member or the problem.
public struct TemplatePropertiesError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
