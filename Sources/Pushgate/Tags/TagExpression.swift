/// A Notification Hubs tag expression: tags combined with `&&`, `||`, `!` and parentheses, for
/// example `(follows_RedSox || follows_Cardinals) && location_Boston`.
///
/// Limits (Notification Hubs): at most 20 tags when the expression uses only `||`, otherwise at
/// most 6. Parse errors give the 1-based character position.
///
/// ```swift
/// let expression = try TagExpression(parsing: "username:alice || from:bob")
/// expression.matches(["username:alice"])  // true
/// ```
public indirect enum TagExpression: Sendable, Hashable, CustomStringConvertible {
    case tag(Tag)
    case not(TagExpression)
    case and(TagExpression, TagExpression)
    case or(TagExpression, TagExpression)

    /// Most tags in an expression that uses only `||`.
    public static let maximumTagsOrOnly = 20
    /// Most tags in an expression that uses `&&` or `!`.
    public static let maximumTags = 6
    /// Longest expression text, in characters: 20 tags of Notification Hubs' longest (120
    /// characters) with operators fit; anything longer is refused before it is parsed.
    public static let maximumLength = 4096
    /// Deepest nesting of `(` and `!`, so that parsing, matching and translating an expression
    /// (all recursive) stay far from the stack's end whatever a client sends.
    public static let maximumNesting = 32

    /// An expression that matches a registration carrying any of `tags` (how the tutorial's array of
    /// tags is sent).
    public static func anyOf(_ tags: [Tag]) throws(TagExpressionError) -> TagExpression {
        guard var expression = tags.first.map(TagExpression.tag) else { throw TagExpressionError(.empty, position: 1) }
        for tag in tags.dropFirst() { expression = .or(expression, .tag(tag)) }
        try expression.checkLimits()
        return expression
    }

    /// Whether a registration with `tags` is selected by this expression.
    public func matches(_ tags: Set<String>) -> Bool {
        switch self {
        case .tag(let tag): tags.contains(tag.rawValue)
        case .not(let inner): !inner.matches(tags)
        case .and(let lhs, let rhs): lhs.matches(tags) && rhs.matches(tags)
        case .or(let lhs, let rhs): lhs.matches(tags) || rhs.matches(tags)
        }
    }

    /// Whether a registration with `tags` is selected by this expression.
    public func matches(_ tags: [Tag]) -> Bool {
        matches(Set(tags.map(\.rawValue)))
    }

    /// Every tag occurrence, left to right.
    public var tags: [Tag] {
        switch self {
        case .tag(let tag): [tag]
        case .not(let inner): inner.tags
        case .and(let lhs, let rhs), .or(let lhs, let rhs): lhs.tags + rhs.tags
        }
    }

    /// Whether the expression combines tags with `||` only.
    public var isOrOnly: Bool {
        switch self {
        case .tag: true
        case .not, .and: false
        case .or(let lhs, let rhs): lhs.isOrOnly && rhs.isOrOnly
        }
    }

    /// When the expression is a plain disjunction of tags, those tags (a store can answer it with an
    /// index lookup); otherwise nil.
    public var disjunctiveTags: [Tag]? { isOrOnly ? tags : nil }

    func checkLimits() throws(TagExpressionError) {
        let count = tags.count
        let limit = isOrOnly ? Self.maximumTagsOrOnly : Self.maximumTags
        if count > limit { throw TagExpressionError(.tooManyTags(count, limit: limit, orOnly: isOrOnly), position: 1) }
    }

    /// The expression in canonical text form, fully parenthesised where precedence needs it.
    public var description: String { render(parentPrecedence: 0) }

    private func render(parentPrecedence: Int) -> String {
        switch self {
        case .tag(let tag): return tag.rawValue
        case .not(let inner): return "!" + inner.render(parentPrecedence: 3)
        case .and(let lhs, let rhs):
            let text = lhs.render(parentPrecedence: 2) + " && " + rhs.render(parentPrecedence: 2)
            return parentPrecedence > 2 ? "(\(text))" : text
        case .or(let lhs, let rhs):
            let text = lhs.render(parentPrecedence: 1) + " || " + rhs.render(parentPrecedence: 1)
            return parentPrecedence > 1 ? "(\(text))" : text
        }
    }
}

/// A tag expression could not be parsed or breaks a limit.
public struct TagExpressionError: PushgateInputError, Hashable {
    enum Code: Hashable {
        case empty
        case unexpected(String, expected: String)
        case unbalancedParenthesis
        case invalidTag(TagError)
        case tooManyTags(Int, limit: Int, orOnly: Bool)
        case tooLong(Int)
        case tooDeep
    }

    let code: Code
    /// 1-based character position of the problem in the expression.
    public let position: Int

    init(_ code: Code, position: Int) {
        self.code = code
        self.position = position
    }

    public var description: String {
        switch code {
        case .empty:
            return "tag expression is empty"
        case .unexpected(let found, let expected):
            return "tag expression: expected \(expected) at position \(position), found \(found)"
        case .unbalancedParenthesis:
            return "tag expression: '(' at position \(position) is never closed"
        case .invalidTag(let error):
            return "tag expression: at position \(position): \(error.description)"
        case .tooLong(let length):
            return "tag expression is \(length) characters long; the limit is \(TagExpression.maximumLength)"
        case .tooDeep:
            return "tag expression nests '(' and '!' deeper than \(TagExpression.maximumNesting) levels at position \(position)"
        case .tooManyTags(let count, let limit, let orOnly):
            return "tag expression has \(count) tags; the limit is \(limit) "
                + (orOnly ? "for expressions using only ||" : "for expressions using && or !")
        }
    }
}
