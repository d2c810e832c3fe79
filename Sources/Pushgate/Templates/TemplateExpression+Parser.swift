extension TemplateExpression {
    /// Longest property name.
    public static let maximumPropertyNameLength = 120

    /// Parses one template value.
    ///
    /// - Parameter allowNumeric: whether `#(p)` is allowed (JSON string values only).
    public init(parsing value: String, allowNumeric: Bool) throws(TemplateExpressionError) {
        let characters = Array(value)
        guard let first = characters.firstIndex(where: { !$0.isWhitespace }) else {
            self.init(kind: .literal(value))
            return
        }
        let last = characters.lastIndex(where: { !$0.isWhitespace })!
        switch characters[first] {
        case "$", ".", "%", "#", "{":
            var parser = ExpressionParser(characters: characters, index: first, end: last + 1)
            self.init(kind: try parser.parseValue(allowNumeric: allowNumeric))
        default:
            self.init(kind: .literal(value))
        }
    }
}

/// A template value could not be parsed: what is wrong and at which character.
public struct TemplateExpressionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// 1-based character position inside the value.
    public let position: Int
    public let reason: String

    public var description: String { "\(reason) (at character \(position) of the value)" }
}

private struct ExpressionParser {
    let characters: [Character]
    var index: Int
    let end: Int

    func error(_ reason: String, at position: Int? = nil) -> TemplateExpressionError {
        TemplateExpressionError(position: (position ?? index) + 1, reason: reason)
    }

    mutating func skipSpaces(until limit: Int) {
        while index < limit && characters[index].isWhitespace { index += 1 }
    }

    mutating func parseValue(allowNumeric: Bool) throws(TemplateExpressionError) -> TemplateExpression.Kind {
        if characters[index] == "{" {
            guard characters[end - 1] == "}" else {
                throw error("a '{' expression must end with '}'", at: end - 1)
            }
            index += 1
            let closing = end - 1
            var terms: [TemplateExpression.Term] = []
            while true {
                skipSpaces(until: closing)
                if index >= closing {
                    throw error(terms.isEmpty ? "empty '{}' expression" : "expected an expression after '+'", at: index)
                }
                if characters[index] == "#" {
                    throw error("#(…) cannot be used inside a '{…}' concatenation", at: index)
                }
                terms.append(try parseTerm(limit: closing, allowLiteral: true))
                skipSpaces(until: closing)
                if index >= closing { break }
                guard characters[index] == "+" else {
                    throw error("expected '+' or '}' after an expression, found \(quoted(characters[index]))")
                }
                index += 1
            }
            return .text(terms)
        }
        if characters[index] == "#" {
            guard allowNumeric else { throw error("#(…) is allowed only as a whole JSON string value", at: index) }
            let start = index
            let reference = try parseReference(kind: "#", limit: end)
            skipSpaces(until: end)
            if index < end { throw trailing(start) }
            return .numeric(reference)
        }
        let start = index
        let term = try parseTerm(limit: end, allowLiteral: false)
        skipSpaces(until: end)
        if index < end { throw trailing(start) }
        return .text([term])
    }

    func trailing(_ start: Int) -> TemplateExpressionError {
        if characters[index] == "+" {
            return error("concatenation must be written inside braces, like {$(a) + ' ' + $(b)}", at: index)
        }
        return error(
            "unexpected text after the expression; to mix text and properties write {'text ' + $(name)}",
            at: index)
    }

    mutating func parseTerm(limit: Int, allowLiteral: Bool) throws(TemplateExpressionError) -> TemplateExpression.Term {
        let character = characters[index]
        switch character {
        case "'", "\"":
            guard allowLiteral else { throw error("a quoted literal is allowed only inside '{…}'") }
            return .literal(try parseLiteral(quote: character, limit: limit))
        case "$", ".", "%":
            return .property(try parseReference(kind: character, limit: limit))
        default:
            throw error("expected $(…), .(…), %(…) or a quoted literal, found \(quoted(character))")
        }
    }

    mutating func parseLiteral(quote: Character, limit: Int) throws(TemplateExpressionError) -> String {
        let start = index
        index += 1
        var text = ""
        while true {
            guard index < limit else { throw error("literal is missing its closing \(quote)", at: start) }
            if characters[index] == quote {
                if index + 1 < limit && characters[index + 1] == quote {
                    text.append(quote)
                    index += 2
                    continue
                }
                index += 1
                return text
            }
            text.append(characters[index])
            index += 1
        }
    }

    mutating func parseReference(kind: Character, limit: Int) throws(TemplateExpressionError) -> PropertyReference {
        let start = index
        if kind == "$", characters[start..<limit].starts(with: Array("$body")) {
            throw error("$body is not supported; name a property, like $(message)")
        }
        index += 1
        guard index < limit, characters[index] == "(" else {
            throw error("expected '(' after '\(kind)'", at: index)
        }
        index += 1
        // Property name.
        skipSpaces(until: limit)
        let nameStart = index
        while index < limit && !",):".contains(characters[index]) && !characters[index].isWhitespace { index += 1 }
        let name = String(characters[nameStart..<index])
        skipSpaces(until: limit)
        if name.isEmpty { throw error("missing property name", at: nameStart) }
        if let bad = name.firstIndex(where: { !($0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_")) }) {
            throw error("property name '\(name)' has an invalid character \(quoted(name[bad])); use letters, digits and _", at: nameStart)
        }
        if name.count > TemplateExpression.maximumPropertyNameLength {
            throw error(
                "property name is \(name.count) characters long; the limit is \(TemplateExpression.maximumPropertyNameLength)",
                at: nameStart)
        }
        // Optional fallback :{…}.
        var fallback: String?
        if index < limit && characters[index] == ":" {
            guard kind == "$" || kind == "." || kind == "%" else { throw error("a default value is not allowed here") }
            index += 1
            guard index < limit, characters[index] == "{" else { throw error("expected '{' to start the default value") }
            let fallbackStart = index
            index += 1
            var text = ""
            while true {
                guard index < limit else { throw error("default value is missing its closing '}'", at: fallbackStart) }
                let character = characters[index]
                if character == "\\" && index + 1 < limit {
                    text.append(characters[index + 1])
                    index += 2
                    continue
                }
                if character == "}" { break }
                text.append(character)
                index += 1
            }
            index += 1
            fallback = text
            skipSpaces(until: limit)
        }
        // Optional length.
        var length: Int?
        if index < limit && characters[index] == "," {
            if kind == "%" || kind == "#" {
                throw error("\(kind)(…) takes no length argument", at: index)
            }
            index += 1
            skipSpaces(until: limit)
            let digitsStart = index
            while index < limit && characters[index].isASCII && characters[index].isNumber { index += 1 }
            let digits = String(characters[digitsStart..<index])
            skipSpaces(until: limit)
            guard !digits.isEmpty, let value = Int(digits), index < limit, characters[index] == ")" else {
                throw error("the length must be a non-negative whole number", at: digitsStart)
            }
            length = value
        }
        guard index < limit, characters[index] == ")" else {
            if index >= limit { throw error("missing ')' to close \(kind)(", at: start) }
            throw error("expected ')' or ',' after the property name, found \(quoted(characters[index]))")
        }
        index += 1
        let transform: PropertyReference.Transform
        switch (kind, length) {
        case (".", nil): throw error(".(…) needs a length, like .(\(name), 20)", at: start)
        case (".", let n?): transform = .clipWithEllipsis(n)
        case ("%", _): transform = .percentEncoded
        case ("$", let n?): transform = .clip(n)
        default: transform = .plain
        }
        return PropertyReference(name: name, transform: transform, fallback: fallback)
    }
}
