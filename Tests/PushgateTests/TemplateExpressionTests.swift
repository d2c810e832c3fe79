import Pushgate
import Testing

@Suite struct TemplateExpressionTests {
    func render(_ value: String, _ properties: TemplateProperties) throws -> String {
        // Render the value as a JSON string value and decode it back, so the test sees the text.
        let template = try Template(json: "[\"\(value.replacingQuotes())\"]")
        let output = try template.render(properties)
        let parsed = try JSONParser.parse(output)
        let element = try #require(parsed.arrayElements?.first)
        if case .number(let text) = element.kind { return "#" + text }
        return try #require(element.stringValue)
    }

    @Test func propertyValuesAndMissingProperties() throws {
        #expect(try render("$(message)", ["message": "Hello"]) == "Hello")
        #expect(try render("$(missing)", ["message": "Hello"]) == "")
        #expect(try render("$( message )", ["message": "Hello"]) == "Hello")
    }

    @Test func propertyNamesAreCaseInsensitive() throws {
        #expect(try render("$(MESSAGE)", ["message": "a"]) == "a")
        #expect(try render("$(message)", ["Message": "b"]) == "b")
    }

    @Test func clippingCountsCharactersNotBytes() throws {
        #expect(try render("$(title, 5)", ["title": "This is the title line"]) == "This ")
        #expect(try render("$(title,0)", ["title": "abc"]) == "")
        #expect(try render("$(title, 50)", ["title": "short"]) == "short")
        #expect(try render("$(title, 3)", ["title": "😀👍🏽é!"]) == "😀👍🏽é")
    }

    @Test func ellipsisClippingKeepsTheTotalWithinTheLength() throws {
        #expect(try render(".(title, 20)", ["title": "This is the title line"]) == "This is the title...")
        #expect(try render(".(title, 22)", ["title": "This is the title line"]) == "This is the title line")
        #expect(try render(".(title, 2)", ["title": "abcdef"]) == "..")
    }

    @Test func percentEncodingKeepsOnlyUnreservedCharacters() throws {
        #expect(try render("%(q)", ["q": "a b&c=d/é~_.-"]) == "a%20b%26c%3Dd%2F%C3%A9~_.-")
    }

    @Test func numbersBecomeJSONNumbersOnlyWhenNumeric() throws {
        #expect(try render("#(badge)", ["badge": "40"]) == "#40")
        #expect(try render("#(badge)", ["badge": "0.5e-3"]) == "#0.5e-3")
        #expect(try render("#(badge)", ["badge": "007"]) == "007")
        #expect(try render("#(badge)", ["badge": "-1"]) == "-1")
        #expect(try render("#(badge)", ["badge": "1,2]"]) == "1,2]")
        #expect(try render("#(badge)", [:]) == "")
    }

    @Test func concatenationWithLiteralsAndDoubledQuotes() throws {
        let properties: TemplateProperties = ["user": "bob", "message": "hi"]
        #expect(try render("{'From ' + $(user) + ': ' + $(message)}", properties) == "From bob: hi")
        #expect(try render("{'it''s ' + $(user)}", properties) == "it's bob")
        #expect(try render(#"{"say ""hi""" + ' ' + $(user)}"#, properties) == #"say "hi" bob"#)
        #expect(try render("{ $(user)+$(message) }", properties) == "bobhi")
        #expect(try render("{'$5 off'}", properties) == "$5 off")
        #expect(try render("{.(message, 1) + %(user)}", properties) == ".bob")
    }

    @Test func defaultValuesApplyOnlyWhenMissing() throws {
        #expect(try render("$(name:{friend})", [:]) == "friend")
        #expect(try render("$(name:{friend})", ["name": "ann"]) == "ann")
        #expect(try render(#"$(name:{a\}b, c)})"#, [:]) == "a}b, c)")
        #expect(try render("$(name:{friendly},6)", ["name": "annabelle"]) == "annabe")
    }

    @Test func textThatDoesNotStartWithAnExpressionIsLiteral() throws {
        #expect(try render("Hello $(user)", ["user": "x"]) == "Hello $(user)")
        #expect(try render("", [:]) == "")
        #expect(try render("   ", [:]) == "   ")
    }

    @Test(arguments: [
        ("$(a) + $(b)", 6, "concatenation must be written inside braces"),
        ("$(a) and more", 6, "unexpected text after the expression"),
        ("$a", 2, "expected '(' after '$'"),
        ("$(a", 1, "missing ')' to close $("),
        ("$()", 3, "missing property name"),
        ("$(a-b)", 3, "invalid character '-'"),
        (".(a)", 1, ".(…) needs a length"),
        ("%(a, 3)", 4, "%(…) takes no length argument"),
        ("#(a, 3)", 4, "#(…) takes no length argument"),
        ("$(a, x)", 6, "the length must be a non-negative whole number"),
        ("$(a, -1)", 6, "the length must be a non-negative whole number"),
        ("{$(a) + #(b)}", 9, "#(…) cannot be used inside"),
        ("{$(a) $(b)}", 7, "expected '+' or '}'"),
        ("{'abc}", 2, "literal is missing its closing '"),
        ("{$(a) + }", 9, "expected an expression after '+'"),
        ("{}", 2, "empty '{}' expression"),
        ("{$(a)", 5, "must end with '}'"),
        ("$body", 1, "$body is not supported"),
        ("$(name:{x)", 8, "default value is missing its closing '}'"),
    ])
    func malformedExpressionsNameTheProblemAndPosition(value: String, position: Int, message: String) {
        #expect {
            try TemplateExpression(parsing: value, allowNumeric: true)
        } throws: { error in
            let error = error as! TemplateExpressionError
            return error.position == position && error.reason.contains(message)
        }
    }

    @Test func propertyNamesLongerThan120CharactersAreRejected() {
        #expect(throws: Never.self) { try TemplateExpression(parsing: "$(\(String(repeating: "p", count: 120)))", allowNumeric: false) }
        #expect(throws: TemplateExpressionError.self) {
            try TemplateExpression(parsing: "$(\(String(repeating: "p", count: 121)))", allowNumeric: false)
        }
    }

    @Test func numericExpressionsAreRefusedOutsideJSON() {
        #expect(throws: TemplateExpressionError.self) { try TemplateExpression(parsing: "#(n)", allowNumeric: false) }
    }
}

extension String {
    /// The text with `"` escaped for embedding in a JSON string literal in tests.
    func replacingQuotes() -> String {
        var result = ""
        for character in self {
            if character == "\"" || character == "\\" { result.append("\\") }
            result.append(character)
        }
        return result
    }
}
