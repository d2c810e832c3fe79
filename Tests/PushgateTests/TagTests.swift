import Foundation
import Pushgate
import Testing

@Suite struct TagTests {
    @Test(arguments: ["username:alice", "follows_RedSox", "a", "x@y.z#1-2", "ユーザー:名前", "$InstallationId:{abc-123}", "$UserId:{u=1}"])
    func acceptsValidTags(text: String) throws {
        #expect(try Tag(text).rawValue == text)
    }

    @Test func rejectsInvalidCharactersNamingThePosition() {
        #expect {
            try Tag("user name")
        } throws: { error in
            (error as! TagError).description.contains("U+0020 at position 5")
        }
        #expect {
            try Tag("a&&b")
        } throws: { error in
            (error as! TagError).description.contains("'&' at position 2")
        }
    }

    @Test func enforcesTheLengthLimit() throws {
        #expect(throws: Never.self) { try Tag(String(repeating: "a", count: 120)) }
        #expect {
            try Tag(String(repeating: "a", count: 121))
        } throws: { error in
            (error as! TagError).description.contains("121 characters long; the limit is 120")
        }
        #expect(throws: TagError.self) { try Tag("") }
    }

    @Test func decodingRunsTheSameChecksAsConstruction() throws {
        let decoded = try JSONDecoder().decode([Pushgate.Tag].self, from: Data(#"["username:alice","a.b"]"#.utf8))
        #expect(decoded.map(\.rawValue) == ["username:alice", "a.b"])
        #expect(String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self) == #"["username:alice","a.b"]"#)
        #expect(
            performing: { try JSONDecoder().decode([Pushgate.Tag].self, from: Data(#"["ok","bad tag"]"#.utf8)) },
            throws: { error in
                guard case DecodingError.dataCorrupted(let context) = error else { return false }
                return context.debugDescription.contains("invalid character U+0020 at position 4")
            })
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AppID.self, from: Data(#""Bad App""#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(RegistrationID.self, from: Data(#""../x""#.utf8)) }
    }

    @Test func rejectsMalformedImplicitTags() {
        #expect(throws: TagError.self) { try Tag("$InstallationId:{abc") }
        #expect(throws: TagError.self) { try Tag("$UserId:{}") }
        #expect(throws: TagError.self) { try Tag("$Other:{x}") }
    }

    @Test func registrationsHoldAtMostSixtyUniqueSortedTags() throws {
        let handle = DeviceHandle(uncheckedPlatform: .gcm, value: String(repeating: "t", count: 40))
        let tags = try (0..<60).map { try Tag("t\($0)") }
        var registration = try Registration(id: .random(), handle: handle, tags: tags + tags.prefix(5), owner: "alice")
        #expect(registration.tags.count == 60)
        #expect(registration.tags == registration.tags.sorted())
        #expect {
            try registration.setTags(tags + [try Tag("one-more")])
        } throws: { error in
            (error as! TagError).description == "a registration has 61 tags; the limit is 60"
        }
        #expect(registration.tags.count == 60)
    }
}

@Suite struct TagExpressionTests {
    /// `t1 || t2 || …` (or with `&&`).
    static func chain(_ numbers: ClosedRange<Int>, _ operator: String) -> String {
        numbers.map { "t\($0)" }.joined(separator: " \(`operator`) ")
    }

    @Test func evaluatesWithPrecedenceNotThenAndThenOr() throws {
        let expression = try TagExpression(parsing: "a || b && !c")
        #expect(expression.matches(["a"]))
        #expect(expression.matches(["b"]))
        #expect(!expression.matches(["b", "c"]))
        #expect(expression.matches(["a", "c"]))
        #expect(!expression.matches([]))
        #expect(expression.description == "a || b && !c")
    }

    @Test func parenthesesOverridePrecedence() throws {
        let expression = try TagExpression(parsing: "(follows_RedSox || follows_Cardinals) && location_Boston")
        #expect(expression.matches(["follows_Cardinals", "location_Boston"]))
        #expect(!expression.matches(["follows_Cardinals"]))
        #expect(!expression.matches(["location_Boston"]))
        #expect(expression.description == "(follows_RedSox || follows_Cardinals) && location_Boston")
        #expect(try TagExpression(parsing: "!(a||b)").matches(["c"]))
        #expect(try !TagExpression(parsing: "!(a||b)").matches(["b"]))
    }

    @Test func theTutorialTagArrayIsAnOrExpression() throws {
        let expression = try TagExpression.anyOf([try Tag("username:alice"), try Tag("from:bob")])
        #expect(expression.description == "username:alice || from:bob")
        #expect(expression.disjunctiveTags?.map(\.rawValue) == ["username:alice", "from:bob"])
        #expect(expression.matches(["from:bob"]))
    }

    @Test func allowsTwentyTagsWhenOnlyOrAndSixOtherwise() throws {
        let twenty = (1...20).map { "t\($0)" }.joined(separator: " || ")
        #expect(throws: Never.self) { try TagExpression(parsing: twenty) }
        #expect {
            try TagExpression(parsing: twenty + " || t21")
        } throws: { error in
            (error as! TagExpressionError).description
                == "tag expression has more than 20 tags (tag 21 is at position 132); the limit is 20 for an expression using only ||"
        }
        let six = "a && b && c && d && e && f"
        #expect(throws: Never.self) { try TagExpression(parsing: six) }
        #expect {
            try TagExpression(parsing: "a || b || c || d || e || f || !g")
        } throws: { error in
            (error as! TagExpressionError).description
                == "tag expression has more than 6 tags (tag 7 is at position 32); the limit is 6 for an expression using && or !"
        }
    }

    @Test(arguments: [
        ("a &&", 5, "expected a tag, '!' or '(' at position 5, found the end"),
        ("a & b", 3, "expected '&&', '||' or the end at position 3, found '&'"),
        ("(a || b", 1, "'(' at position 1 is never closed"),
        ("a || b)", 7, "expected '&&', '||' or the end at position 7, found ')'"),
        ("a || && b", 6, "expected a tag, '!' or '(' at position 6, found '&&'"),
        ("a b", 3, "found tag 'b'"),
        ("", 1, "tag expression is empty"),
        ("a || $InstallationId:{x", 6, "at position 6"),
        ("(a bc)", 4, "expected ')' at position 4, found tag 'bc'"),
    ])
    func reportsErrorsWithThePosition(text: String, position: Int, message: String) {
        #expect {
            try TagExpression(parsing: text)
        } throws: { error in
            let error = error as! TagExpressionError
            return error.position == position && error.description.contains(message)
        }
    }

    /// An unbounded recursive parser overflows the stack (SIGSEGV) on 3,000 '(' or 4,000 '!'. Each of
    /// these is refused with a position, in far less than the second allowed here.
    @Test(arguments: [
        (String(repeating: "(", count: 3_000), 33, "nests '(' and '!' deeper than 32 levels at position 33"),
        (String(repeating: "!", count: 4_000), 33, "nests '(' and '!' deeper than 32 levels at position 33"),
        (String(repeating: "!(", count: 200) + "a" + String(repeating: ")", count: 200), 33, "deeper than 32 levels"),
        (String(repeating: "!", count: 33) + "a", 33, "deeper than 32 levels at position 33"),
        (
            String(repeating: "(", count: 3_000) + "a" + String(repeating: ")", count: 3_000), 4097,
            "tag expression is 6001 bytes long; the limit is 4096 (refused from byte 4097)"
        ),
        (String(repeating: "a", count: 100_000), 4097, "tag expression is 100000 bytes long; the limit is 4096"),
        (String(repeating: "a || ", count: 30_000) + "a", 4097, "is 150001 bytes long; the limit is 4096"),
        (
            chain(1...21, "||"), 132,
            "has more than 20 tags (tag 21 is at position 132); the limit is 20 for an expression using only ||"
        ),
        (
            chain(1...7, "&&"), 37,
            "has more than 6 tags (tag 7 is at position 37); the limit is 6 for an expression using && or !"
        ),
        (chain(1...25, "&&"), 37, "has more than 6 tags (tag 7 is at position 37)"),
        (chain(1...7, "||") + " && t8", 37, "has more than 6 tags (tag 7 is at position 37)"),
        ("!t1 || " + chain(2...7, "||"), 38, "the limit is 6 for an expression using && or !"),
    ])
    func hostileExpressionsAreRefusedQuicklyWithThePosition(text: String, position: Int, message: String) {
        let start = ContinuousClock.now
        #expect {
            try TagExpression(parsing: text)
        } throws: { error in
            let error = error as! TagExpressionError
            return error.position == position && error.description.contains(message)
        }
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test func expressionsAtTheLimitsAreAccepted() throws {
        let deepest = [
            String(repeating: "!", count: 32) + "a",
            String(repeating: "(", count: 32) + "a" + String(repeating: ")", count: 32),
            String(repeating: "!(", count: 16) + "a" + String(repeating: ")", count: 16),
            String(repeating: "!", count: 31) + "(a)",
        ]
        for text in deepest {
            let expression = try TagExpression(parsing: text)
            #expect(expression.tags.count == 1)
            // The recursive walks over the deepest tree parsing allows.
            _ = expression.matches(["a"])
            #expect(try TagExpression(parsing: expression.description) == expression)
        }
        // 20 tags of the longest kind, only ||: the most text the tag limits allow fits in the
        // length limit, with room for parentheses and spaces.
        let longTags = (0..<20).map { "t\($0)" + String(repeating: "x", count: Tag.maximumLength - "t\($0)".count) }
        let twenty = longTags.joined(separator: " || ")
        #expect(twenty.utf8.count == 2_476)
        #expect(try TagExpression(parsing: twenty).disjunctiveTags?.count == 20)
        let padded = "(" + twenty + ")" + String(repeating: " ", count: TagExpression.maximumLength - twenty.utf8.count - 2)
        #expect(padded.utf8.count == TagExpression.maximumLength)
        #expect(try TagExpression(parsing: padded).tags.count == 20)
        #expect(throws: TagExpressionError.self) { try TagExpression(parsing: padded + " ") }
        let six = "(a || !b) && c && (d || e) && !f"
        #expect(try TagExpression(parsing: six).tags.count == 6)
    }

    @Test func anyOfRefusesTooManyTagsBeforeBuildingTheExpression() throws {
        let tags = try (1...20).map { try Tag("t\($0)") }
        #expect(try TagExpression.anyOf(tags).disjunctiveTags == tags)
        let start = ContinuousClock.now
        let many = try (1...100_000).map { try Tag("t\($0)") }
        #expect {
            try TagExpression.anyOf(many)
        } throws: { error in
            let error = error as! TagExpressionError
            // The position in the text form "t1 || t2 || … || t21".
            let text = many.prefix(21).map(\.rawValue).joined(separator: " || ")
            return error.position == text.count - 2
                && error.description.contains("has more than 20 tags (tag 21 is at position \(text.count - 2))")
        }
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    @Test func unicodeTagsAreLettersButTheirBytesAreBounded() throws {
        #expect(try Tag("café").rawValue == "café")
        #expect(try Tag("日本:東京").rawValue == "日本:東京")
        let bomb = "a" + String(repeating: "\u{0301}", count: 5_000)  // one character, 10,001 bytes
        #expect {
            try Tag(bomb)
        } throws: { error in
            (error as! TagError).description.contains("10001 bytes long in UTF-8; the limit is 480")
        }
    }
}
