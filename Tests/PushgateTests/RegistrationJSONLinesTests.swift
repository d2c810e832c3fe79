import Testing

@testable import Pushgate

@Suite struct RegistrationJSONLinesTests {
    let policy = HandlePolicy(wnsChannelHosts: ["*.notify.windows.com"])
    let id = try! RegistrationID("0123456789abcdef0123456789abcdef")

    func line(_ replacing: [String: String] = [:]) -> String {
        var fields: [(String, String)] = [
            ("id", #""0123456789abcdef0123456789abcdef""#), ("platform", #""apns""#),
            ("handle", "\"" + String(repeating: "ab", count: 32) + "\""),
            ("tags", #"["username:alice"]"#), ("owner", #""alice""#),
        ]
        for (key, value) in replacing {
            if let index = fields.firstIndex(where: { $0.0 == key }) { fields[index].1 = value } else { fields.append((key, value)) }
        }
        return "{" + fields.filter { $0.1 != "-" }.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    func error(_ text: String) -> String {
        do {
            _ = try Registration(jsonLine: text, app: .default, handles: policy)
            return "no error"
        } catch {
            return error.description
        }
    }

    @Test func aRegistrationSurvivesTheRoundTripWithEveryField() throws {
        let original = try Registration(
            id: id, handle: try policy.validate("https://db5.notify.windows.com/?token=A\"b\\c", for: .wns),
            tags: [try Tag("username:alice"), try Tag("lang:fr"), try Tag("news")],
            template: RegistrationTemplate(
                name: "toast",
                body: #"<toast><visual><binding template="ToastText01"><text id="1">$(message)</text></binding></visual></toast>"#,
                headers: ["X-WNS-Type": "wns/toast", "X-WNS-TTL": "60"]),
            expiresAt: Timestamp(secondsSinceEpoch: 1_900_000_000.25), owner: "alice \"admin\"")
        let text = original.jsonLine
        #expect(!text.contains("\n"))
        #expect(try Registration(jsonLine: text, app: .default, handles: policy) == original)
        // The minimal form: no expiry, no template.
        let minimal = try Registration(jsonLine: line(), app: .default, handles: policy)
        #expect(minimal.expiresAt == nil && minimal.template == nil)
        let reread = try Registration(jsonLine: minimal.jsonLine, app: .default, handles: policy)
        #expect(reread == minimal)
    }

    @Test func badLinesNameTheFieldThatIsWrong() {
        #expect(error("{").hasPrefix("invalid JSON at column 2"))
        #expect(error("[1]") == "expected a JSON object, found an array")
        #expect(error(line(["handel": #""x""#])).hasPrefix("unknown field 'handel'"))
        #expect(error(line(["id": "-"])) == "'id' is required")
        #expect(error(line(["id": #""xyz!""#])).hasPrefix("'id': "))
        #expect(error(line(["platform": #""mpns""#])) == "'platform': 'mpns' is not one of apns, fcm, gcm, wns")
        #expect(error(line(["handle": #""abcd""#])).hasPrefix("'handle': APNs device token has length 4"))
        #expect(
            error(line(["platform": #""wns""#, "handle": #""https://evil.example.com/x""#])).hasPrefix("'handle': ")
                && error(line(["platform": #""wns""#, "handle": #""https://evil.example.com/x""#])).contains("evil.example.com"))
        #expect(error(line(["tags": #"["ok", 3]"#])) == "'tags'[1] must be a string")
        #expect(error(line(["tags": #"["bad tag"]"#])).hasPrefix("'tags'[0]: "))
        #expect(error(line(["owner": "7"])) == "'owner' must be a string, found a number")
        #expect(error(line(["owner": #""""#])) == "'owner' must not be empty")
        #expect(error(line(["expiresAt": #""tomorrow""#])) == "'expiresAt' must be a number (seconds since the epoch)")
        #expect(error(line(["template": #"{"headers":{}}"#])) == "'template' must be an object with a string 'body'")
    }
}
