import Pushgate
import Testing

@Suite struct JSONParserTests {
    @Test func parsesNestedDocumentsKeepingMemberOrderAndNumberText() throws {
        let value = try JSONParser.parse(#" {"b": [1, -2.50e+3, true, null], "a": {"x": "y"}} "#)
        let members = try #require(value.objectMembers)
        #expect(members.map(\.key) == ["b", "a"])
        let array = try #require(value["b"]?.arrayElements)
        #expect(array.map(\.kind) == [.number("1"), .number("-2.50e+3"), .bool(true), .null])
        #expect(value["a"]?["x"]?.stringValue == "y")
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try JSONParser.parse(#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#)
        #expect(value.stringValue == "a\"b\\c/d\n\té😀")
    }

    @Test(arguments: [
        (#"{"a":1,}"#, "trailing comma"),
        (#"[1,]"#, "trailing comma"),
        (#"{"a":1,"a":2}"#, "duplicate key \"a\""),
        (#"01"#, "leading zeros"),
        (#""\ud83d""#, "unpaired surrogate"),
        (#""\ude00x""#, "unpaired surrogate"),
        ("\"a\u{01}b\"", "unescaped control character"),
        (#""\x""#, "invalid escape"),
        (#"{"a" 1}"#, "expected ':'"),
        (#"tru"#, "invalid literal"),
        (#"{} {}"#, "unexpected content"),
        (#""abc"#, "unterminated string"),
        ("", "found end of input"),
    ])
    func rejectsMalformedInputNamingTheProblem(input: String, expected: String) {
        #expect {
            try JSONParser.parse(input)
        } throws: { error in
            (error as? JSONParseError)?.reason.contains(expected) == true
        }
    }

    @Test func reportsLineAndColumnOfTheError() {
        let input = "{\n  \"a\": 1,\n  \"b\": ?\n}"
        #expect {
            try JSONParser.parse(input)
        } throws: { error in
            let error = error as! JSONParseError
            return error.location == SourceLocation(line: 3, column: 8) && error.description.contains("line 3, column 8")
        }
    }

    @Test func rejectsInvalidUTF8WithItsOffset() {
        let bytes: [UInt8] = Array(#"{"k": "ok"#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect {
            try JSONParser.parse(bytes)
        } throws: { error in
            let error = error as! JSONParseError
            return error.reason == "invalid UTF-8 in string: byte 0xC3" && error.offset == 9
        }
    }

    @Test func limitsNestingDepth() {
        let deep = String(repeating: "[", count: JSONParser.maximumDepth + 1) + String(repeating: "]", count: JSONParser.maximumDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { try JSONParser.parse(fine) }
    }
}
