import Pushgate
import Testing

@Suite struct TagPolicyTests {
    private let bob = TagPolicy.Writer.user(name: "bob", isAdmin: false)

    @Test func implicitTagsAreNeverSuppliedByAnyWriter() {
        for writer in [bob, .user(name: "root", isAdmin: true), .hubDevice, .hubBackend] {
            for text in ["$UserId:{dave}", "$InstallationId:{dave-phone}", "$anything"] {
                #expect {
                    try TagPolicy.check(["news", text], writer: writer)
                } throws: { error in
                    let error = error as! TagPolicyError
                    return error.index == 1 && !error.isForbidden && error.description.contains("is reserved")
                }
            }
        }
    }

    @Test func usernameTagsFollowTheWriter() throws {
        #expect(try TagPolicy.check(["username:bob", "news"], writer: bob).map(\.rawValue) == ["username:bob", "news"])
        for text in ["Username:bob", "USERNAME:alice"] {
            #expect {
                try TagPolicy.check([text], writer: bob)
            } throws: { error in
                !(error as! TagPolicyError).isForbidden && (error as! TagPolicyError).description.contains("in lower case")
            }
        }
        for text in ["username:alice"] {
            #expect {
                try TagPolicy.check([text], writer: bob)
            } throws: { error in
                (error as! TagPolicyError).isForbidden && (error as! TagPolicyError).description.contains("belongs to another user")
            }
        }
        #expect(try TagPolicy.check(["username:alice"], writer: .user(name: "root", isAdmin: true)).count == 1)
        #expect(try TagPolicy.check(["username:alice"], writer: .hubBackend).count == 1)
        #expect {
            try TagPolicy.check(["username:alice"], writer: .hubDevice)
        } throws: { error in
            (error as! TagPolicyError).isForbidden && (error as! TagPolicyError).description.contains("Listen key may not claim it")
        }
    }

    @Test func countAndShapeAreCheckedWithThePosition() {
        #expect {
            try TagPolicy.check((0...60).map { "t\($0)" }, writer: .hubBackend)
        } throws: { error in
            (error as! TagPolicyError).index == nil && (error as! TagPolicyError).description.contains("61 tags; the limit is 60")
        }
        #expect {
            try TagPolicy.check(["ok", "bad tag"], writer: .hubBackend)
        } throws: { error in
            (error as! TagPolicyError).index == 1 && (error as! TagPolicyError).description.contains("U+0020 at position 4")
        }
    }

    @Test func aHugeTagIsNamedByItsFirstFortyCharacters() {
        let huge = String(repeating: "é", count: 63_000)
        #expect {
            try TagPolicy.check([huge], writer: .hubBackend)
        } throws: { error in
            let text = (error as! TagPolicyError).description
            return text.hasPrefix("tag '\(String(repeating: "é", count: 40))…' is 126000 bytes long") && text.utf8.count < 200
        }
    }
}
