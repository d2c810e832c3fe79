extension TagExpression {
    /// Parses a tag expression. Precedence: `!` binds tightest, then `&&`, then `||`.
    public init(parsing text: String) throws(TagExpressionError) {
        // Checked before anything else: the cost of a refusal does not grow with the input.
        let length = text.utf8.count
        guard length <= Self.maximumLength else { throw TagExpressionError(.tooLong(length), position: Self.maximumLength + 1) }
        var parser = TagExpressionParser(text: text)
        let expression = try parser.parseExpression()
        parser.skipSpaces()
        if let token = parser.peek() {
            throw TagExpressionError(.unexpected(token.description, expected: "'&&', '||' or the end"), position: parser.position)
        }
        try expression.checkLimits()
        self = expression
    }
}

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
    /// Tags read so far: past the largest limit the rest is not parsed.
    var tagCount = 0

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
            lhs = .and(lhs, try parseUnary())
        }
        return lhs
    }

    mutating func parseUnary() throws(TagExpressionError) -> TagExpression {
        skipSpaces()
        let start = position
        let token = next()
        switch token {
        case .not, .open:
            depth += 1
            if depth > TagExpression.maximumNesting { throw TagExpressionError(.tooDeep, position: start) }
        default:
            break
        }
        defer {
            if case .not = token { depth -= 1 }
            if case .open = token { depth -= 1 }
        }
        switch token {
        case .not:
            return .not(try parseUnary())
        case .open:
            let inner = try parseExpression()
            guard case .close = next() else {
                if index >= characters.count { throw TagExpressionError(.unbalancedParenthesis, position: start) }
                index -= 1
                throw TagExpressionError(.unexpected(quoted(characters[index]), expected: "')'"), position: position)
            }
            return inner
        case .tag(let text, let tagPosition):
            tagCount += 1
            if tagCount > TagExpression.maximumTagsOrOnly {
                throw TagExpressionError(
                    .tooManyTags(tagCount, limit: TagExpression.maximumTagsOrOnly, orOnly: true), position: tagPosition)
            }
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
