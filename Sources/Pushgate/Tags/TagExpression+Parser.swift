extension TagExpression {
    /// Parses a tag expression. Precedence: `!` binds tightest, then `&&`, then `||`.
    ///
    /// Hostile input is refused early, at a cost that does not grow with it: text longer than
    /// ``maximumLength`` bytes before anything is read, nesting of `(` and `!` deeper than
    /// ``maximumNesting`` when the opener past the limit is reached, and a tag past the
    /// Notification Hubs limit (``maximumTagsOrOnly`` or ``maximumTags``) as soon as it is read.
    public init(parsing text: String) throws(TagExpressionError) {
        let length = text.utf8.count
        guard length <= Self.maximumLength else { throw TagExpressionError(.tooLong(length), position: Self.maximumLength + 1) }
        var parser = TagExpressionParser(text: text)
        let expression = try parser.parseExpression()
        parser.skipSpaces()
        if let token = parser.peek() {
            throw TagExpressionError(.unexpected(token.description, expected: "'&&', '||' or the end"), position: parser.position)
        }
        self = expression
    }
}

/// A recursive-descent parser whose recursion is bounded: `||` and `&&` chains are loops, and only
/// `(` and `!` recurse, at most ``TagExpression/maximumNesting`` deep (about three frames each).
/// The tree it builds is therefore at most `maximumNesting` + `maximumTagsOrOnly` deep, which keeps
/// every recursive walk over it (matching, ``TagExpression/description``, SQL translation) shallow.
private struct TagExpressionParser {
    enum Token: CustomStringConvertible {
        case and, or, not, open, close, tag(String, position: Int), invalid(Character)

        var description: String {
            switch self {
            case .and: "'&&'"
            case .or: "'||'"
            case .not: "'!'"
            case .open: "'('"
            case .close: "')'"
            case .tag(let text, _): "tag '\(text)'"
            case .invalid(let character): quoted(character)
            }
        }
    }

    let characters: [Character]
    var index = 0
    /// Open `(` and `!` around the current position.
    var depth = 0
    /// 1-based positions of the tags read so far (at most one past the largest limit).
    var tagPositions: [Int] = []
    /// Whether an `&&` or a `!` was read: from then on the lower tag limit applies.
    var usesAndOrNot = false

    init(text: String) { characters = Array(text) }

    /// 1-based position of the next character.
    var position: Int { index + 1 }

    mutating func skipSpaces() {
        while index < characters.count && characters[index].isWhitespace { index += 1 }
    }

    /// The next token without consuming it (spaces skipped), or nil at the end.
    mutating func peek() -> Token? {
        skipSpaces()
        let saved = index
        defer { index = saved }
        return next()
    }

    mutating func next() -> Token? {
        skipSpaces()
        guard index < characters.count else { return nil }
        let character = characters[index]
        let following = index + 1 < characters.count ? characters[index + 1] : nil
        switch character {
        case "&" where following == "&": index += 2; return .and
        case "|" where following == "|": index += 2; return .or
        case "!": index += 1; return .not
        case "(": index += 1; return .open
        case ")": index += 1; return .close
        default:
            let start = index
            if character == "$" {
                // $InstallationId:{...} / $UserId:{...}: read through the closing brace.
                while index < characters.count && characters[index] != "}" && !characters[index].isWhitespace { index += 1 }
                if index < characters.count && characters[index] == "}" { index += 1 }
            } else {
                while index < characters.count && Tag.isTagCharacter(characters[index]) { index += 1 }
            }
            if index == start {
                index += 1
                return .invalid(character)
            }
            return .tag(String(characters[start..<index]), position: start + 1)
        }
    }

    mutating func parseExpression() throws(TagExpressionError) -> TagExpression {
        if peek() == nil {
            throw TagExpressionError(characters.isEmpty ? .empty : .unexpected("the end", expected: "a tag"), position: position)
        }
        var lhs = try parseAnd()
        while case .or = peek() {
            _ = next()
            lhs = .or(lhs, try parseAnd())
        }
        return lhs
    }

    mutating func parseAnd() throws(TagExpressionError) -> TagExpression {
        var lhs = try parseUnary()
        while case .and = peek() {
            _ = next()
            usesAndOrNot = true
            lhs = .and(lhs, try parseUnary())
        }
        return lhs
    }

    /// Counts an opener (`(` or `!`) at `start`, refusing one nested too deep.
    mutating func enter(at start: Int) throws(TagExpressionError) {
        depth += 1
        if depth > TagExpression.maximumNesting { throw TagExpressionError(.tooDeep, position: start) }
    }

    /// Counts a tag at `position`, refusing the first one past the limit that applies.
    mutating func countTag(at position: Int) throws(TagExpressionError) {
        tagPositions.append(position)
        let count = tagPositions.count
        if usesAndOrNot && count > TagExpression.maximumTags {
            // The first tag past the limit may have been read before the `&&` or `!` was.
            let first = TagExpression.maximumTags
            throw TagExpressionError(.tooManyTags(limit: first, orOnly: false), position: tagPositions[first])
        }
        if count > TagExpression.maximumTagsOrOnly {
            throw TagExpressionError(.tooManyTags(limit: TagExpression.maximumTagsOrOnly, orOnly: true), position: position)
        }
    }

    mutating func parseUnary() throws(TagExpressionError) -> TagExpression {
        skipSpaces()
        let start = position
        switch next() {
        case .not:
            usesAndOrNot = true
            try enter(at: start)
            let inner = try parseUnary()
            depth -= 1
            return .not(inner)
        case .open:
            try enter(at: start)
            let inner = try parseExpression()
            skipSpaces()
            let closePosition = position
            switch next() {
            case .close: break
            case nil: throw TagExpressionError(.unbalancedParenthesis, position: start)
            case let token?: throw TagExpressionError(.unexpected(token.description, expected: "')'"), position: closePosition)
            }
            depth -= 1
            return inner
        case .tag(let text, let tagPosition):
            try countTag(at: tagPosition)
            do {
                return .tag(try Tag(text))
            } catch {
                throw TagExpressionError(.invalidTag(error), position: tagPosition)
            }
        case nil:
            throw TagExpressionError(.unexpected("the end", expected: "a tag, '!' or '('"), position: start)
        case let token?:
            throw TagExpressionError(.unexpected(token.description, expected: "a tag, '!' or '('"), position: start)
        }
    }
}
