import Foundation
import Testing

@testable import Pushgate

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
            (error as! TagExpressionError).description == "tag expression has 21 tags; the limit is 20 for expressions using only ||"
        }
        let six = "a && b && c && d && e && f"
        #expect(throws: Never.self) { try TagExpression(parsing: six) }
        #expect {
            try TagExpression(parsing: "a || b || c || d || e || f || !g")
        } throws: { error in
            (error as! TagExpressionError).description.contains("7 tags; the limit is 6 for expressions using && or !")
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
    ])
    func reportsErrorsWithThePosition(text: String, position: Int, message: String) {
        #expect {
            try TagExpression(parsing: text)
        } throws: { error in
            let error = error as! TagExpressionError
            return error.position == position && error.description.contains(message)
        }
    }

    /// Wave 1's recursive parser overflowed the stack (SIGSEGV) on 3,000 '(' or 4,000 '!'.
    @Test(arguments: [
        (String(repeating: "(", count: 3_000) + "a" + String(repeating: ")", count: 3_000), "is 6001 characters long; the limit is 4096"),
        (String(repeating: "(", count: 2_000), "deeper than 32 levels at position 33"),
        (String(repeating: "!", count: 4_000) + "a", "deeper than 32 levels at position 33"),
        (String(repeating: "!", count: 33) + "a", "deeper than 32 levels at position 33"),
        (String(repeating: "a || ", count: 30_000) + "a", "characters long; the limit is 4096"),
        ((0..<25).map { "t\($0)" }.joined(separator: " && "), "has 21 tags; the limit is 20"),
    ])
    func hostileExpressionsAreRefusedBeforeTheyCanExhaustTheStack(text: String, message: String) {
        #expect {
            try TagExpression(parsing: text)
        } throws: { error in
            (error as! TagExpressionError).description.contains(message)
        }
    }

    @Test func expressionsAtTheLimitsAreAccepted() throws {
        let nested = String(repeating: "!", count: 31) + "(a)"
        #expect(try TagExpression(parsing: nested).tags.count == 1)
        let twenty = (0..<20).map { "t\($0)" }.joined(separator: " || ")
        #expect(try TagExpression(parsing: twenty).tags.count == 20)
    }
}
