/// A Notification Hubs tag expression: tags combined with `&&`, `||`, `!` and parentheses, for
/// example `(follows_RedSox || follows_Cardinals) && location_Boston`.
///
/// Limits (Notification Hubs, "Routing and tag expressions": "Tag expressions are limited to 20
/// tags if they contain only ORs; otherwise they are limited to 6 tags"): at most 20 tags when the
/// expression uses only `||`, otherwise at most 6; tags are counted where they occur, so `a || a`
/// has two. The gateway adds its own bounds on the text: at most ``maximumLength`` bytes and `(`
/// and `!` nested at most ``maximumNesting`` deep. Parse errors give the 1-based character position.
///
/// Every recursive walk over an expression (`matches(_:)`, ``tags``, ``description``, the stores'
/// SQL translation) goes as deep as the tree, which parsing and ``anyOf(_:)`` bound; an expression
/// assembled from the cases directly is the caller's to keep shallow.
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
    /// Longest expression text, in UTF-8 bytes: 20 tags of the longest ASCII form (120 characters)
    /// joined by ` || ` take 2,476, so every expression within the tag limits fits, with room for
    /// parentheses and spaces. Anything longer is refused before a character of it is parsed.
    public static let maximumLength = 4096
    /// Deepest nesting of `(` and `!` together, so that parsing, matching and translating an
    /// expression (all recursive) stay far from the stack's end whatever a client sends.
    public static let maximumNesting = 32

    /// An expression that matches a registration carrying any of `tags` (how the tutorial's array of
    /// tags is sent). More than ``maximumTagsOrOnly`` tags are refused before the expression is
    /// built; the error's position is the first extra tag's in the text form (`a || b || …`).
    public static func anyOf(_ tags: [Tag]) throws(TagExpressionError) -> TagExpression {
        guard var expression = tags.first.map(TagExpression.tag) else { throw TagExpressionError(.empty, position: 1) }
        if tags.count > maximumTagsOrOnly {
            let position = tags.prefix(maximumTagsOrOnly).reduce(1) { $0 + $1.rawValue.count + " || ".count }
            throw TagExpressionError(.tooManyTags(limit: maximumTagsOrOnly, orOnly: true), position: position)
        }
        for tag in tags.dropFirst() { expression = .or(expression, .tag(tag)) }
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
        /// `position` is the first tag past `limit`.
        case tooManyTags(limit: Int, orOnly: Bool)
        /// `position` is the first byte past the limit.
        case tooLong(Int)
        /// `position` is the first `(` or `!` past the limit.
        case tooDeep
    }

    let code: Code
    /// 1-based character position of the problem in the expression (for an expression that is
    /// too long, of the first byte past ``TagExpression/maximumLength``).
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
            return "tag expression is \(length) bytes long; the limit is \(TagExpression.maximumLength) (refused from byte \(position))"
        case .tooDeep:
            return "tag expression nests '(' and '!' deeper than \(TagExpression.maximumNesting) levels at position \(position)"
        case .tooManyTags(let limit, let orOnly):
            return "tag expression has more than \(limit) tags (tag \(limit + 1) is at position \(position)); the limit is \(limit) "
                + (orOnly ? "for an expression using only ||" : "for an expression using && or !")
        }
    }
}
