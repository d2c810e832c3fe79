/// One template value in the Notification Hubs template expression language.
///
/// A JSON string value, an XML text node or an XML attribute value is either a literal, or (when its
/// first non-blank character is `$`, `.`, `%`, `#` or `{`) exactly one expression:
///
/// | form | result |
/// |---|---|
/// | `$(p)` | the property `p`, or the empty string when missing |
/// | `$(p:{fallback})` | the property, or `fallback` when missing (`\}` escapes a brace) |
/// | `$(p, n)` | the property clipped to `n` characters |
/// | `.(p, n)` | clipped to `n` characters including a `...` suffix when longer |
/// | `%(p)` | the property percent-encoded (RFC 3986 unreserved characters kept) |
/// | `#(p)` | JSON only, the whole value: a JSON number when the property is numeric |
/// | `{e1 + e2 + …}` | concatenation of expressions and `'literals'` / `"literals"` |
///
/// Property names are `[A-Za-z0-9_]`, at most 120 characters, and case-insensitive. Inside a literal a
/// quote is escaped by doubling it (`'it''s'`). To emit text that starts with one of the expression
/// characters, write it as a literal: `{'$5 off'}`.
public struct TemplateExpression: Sendable, Hashable {
    /// What a value evaluates to.
    public enum Kind: Sendable, Hashable {
        /// Plain text, emitted as is (escaped for its context).
        case literal(String)
        /// Text built from terms.
        case text([Term])
        /// `#(p)`: a JSON number when the value is numeric, else a JSON string.
        case numeric(PropertyReference)
    }

    /// A piece of a text expression.
    public enum Term: Sendable, Hashable {
        case literal(String)
        case property(PropertyReference)
    }

    public let kind: Kind

    public init(kind: Kind) { self.kind = kind }

    /// Whether the value contains any expression at all.
    public var isLiteral: Bool {
        if case .literal = kind { return true }
        return false
    }

    /// The value as text (a header value): literals as they are, properties evaluated.
    public func evaluateText(in properties: TemplateProperties) -> String {
        switch kind {
        case .literal(let text): text
        case .numeric(let reference): reference.evaluate(in: properties)
        case .text(let terms):
            terms.map {
                switch $0 {
                case .literal(let text): text
                case .property(let reference): reference.evaluate(in: properties)
                }
            }.joined()
        }
    }

    /// The lower-cased names of every property the value reads.
    public var propertyKeys: [String] {
        switch kind {
        case .literal: []
        case .numeric(let reference): [reference.key]
        case .text(let terms):
            terms.compactMap {
                if case .property(let reference) = $0 { return reference.key }
                return nil
            }
        }
    }
}

/// A reference to a property in an expression, with how to transform its value.
public struct PropertyReference: Sendable, Hashable {
    public enum Transform: Sendable, Hashable {
        /// `$(p)`
        case plain
        /// `$(p, n)`
        case clip(Int)
        /// `.(p, n)`
        case clipWithEllipsis(Int)
        /// `%(p)`
        case percentEncoded
    }

    /// The name as written in the template.
    public let name: String
    /// The lookup key: the name lower-cased.
    public let key: String
    public let transform: Transform
    /// The value used when the property is missing (`$(p:{default})`).
    public let fallback: String?

    public init(name: String, transform: Transform = .plain, fallback: String? = nil) {
        self.name = name
        self.key = TemplateProperties.key(name)
        self.transform = transform
        self.fallback = fallback
    }

    /// The property's value after the transform, or the fallback / empty string when missing.
    public func evaluate(in properties: TemplateProperties) -> String {
        guard let value = properties[key: key] else { return fallback ?? "" }
        switch transform {
        case .plain:
            return value
        case .clip(let limit):
            return value.count <= limit ? value : String(value.prefix(limit))
        case .clipWithEllipsis(let limit):
            guard value.count > limit else { return value }
            return limit >= 3 ? String(value.prefix(limit - 3)) + "..." : String("...".prefix(limit))
        case .percentEncoded:
            return PercentEncoding.encode(value)
        }
    }
}
