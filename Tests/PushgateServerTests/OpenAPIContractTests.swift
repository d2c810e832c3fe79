import Foundation
import Pushgate
import PushgateCurl
import PushgateTesting
import PushgateXML
import Testing

/// The OpenAPI contract (`docs/openapi.json`, served at `GET /openapi.json`) held against the
/// router: every route the code registers is documented, every documented operation is served,
/// and what it answers without credentials is the documented error shape.
@Suite struct OpenAPIContractTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func contract() throws -> [String: Any] {
        let data = try Data(contentsOf: root.appendingPathComponent("docs/openapi.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Documented operations as "METHOD /path/{param}".
    static func documented() throws -> Set<String> {
        let paths = try #require(try contract()["paths"] as? [String: [String: Any]])
        var operations: Set<String> = []
        for (path, item) in paths {
            for method in ["get", "post", "put", "patch", "delete"] where item[method] != nil {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    /// The routes the server's sources register, read off their registration calls: the
    /// gateway's own (`router.get("…")`), the tutorial API's (`api.get("…")`, under `/api`) and the
    /// hub API's (`route(.get, "…", right)`, under `/{hub}`), `:name` written `{name}`.
    static func registered() throws -> Set<String> {
        let folder = root.appendingPathComponent("Sources/PushgateServer")
        let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.allObjects as? [URL])
        let patterns: [(String, String)] = [
            (#"\brouter\.(get|post|put|patch|delete)\("([^"]*)""#, "/"),
            (#"\bapi\.(get|post|put|patch|delete)\("([^"]*)""#, "/api/"),
            (#"\broute\(\.(get|post|put|patch|delete), "([^"]*)""#, "/{hub}/"),
        ]
        var routes: Set<String> = []
        for file in files where file.pathExtension == "swift" {
            let source = try String(contentsOf: file, encoding: .utf8)
            for (pattern, prefix) in patterns {
                let expression = try NSRegularExpression(pattern: pattern)
                for match in expression.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
                    let method = String(source[Range(match.range(at: 1), in: source)!]).uppercased()
                    var path = String(source[Range(match.range(at: 2), in: source)!])
                    path = path == "/" ? "" : path
                    let templated = path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
                        segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
                    }.joined(separator: "/")
                    routes.insert("\(method) \(prefix)\(templated)")
                }
            }
        }
        return routes
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsARoute() throws {
        let documented = try Self.documented()
        let registered = try Self.registered()
        #expect(registered.count > 30, "\(registered.sorted())")
        #expect(
            registered.subtracting(documented).isEmpty, "routes not in docs/openapi.json: \(registered.subtracting(documented).sorted())")
        #expect(documented.subtracting(registered).isEmpty, "documented, not routed: \(documented.subtracting(registered).sorted())")
    }

    /// Telemetry's `NotificationDetails` documents every platform's `…OutcomeCounts` element (the
    /// Huawei one was missing; the contract run found UnifiedPush's empty one undocumented as such).
    @Test func notificationDetailsDocumentsEveryPlatformsCounts() throws {
        let schemas = try #require((try Self.contract()["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let properties = try #require((schemas["NotificationDetailsXml"] as? [String: Any])?["properties"] as? [String: Any])
        for platform in Platform.allCases {
            let name = NotificationResult.countsElement(platform)
            let schema = properties[name] as? [String: Any]
            #expect(schema?["type"] as? String == "array", "\(name) is not documented as an array")
        }
    }

    @Test func theContractIsServedAsDocsKeepsIt() async throws {
        try await GatewayFixture.inProcess { fixture in
            let served = try await fixture.call("GET", "/openapi.json", user: nil)
            #expect(served.status == 200 && served.header("Content-Type")?.hasPrefix("application/json") == true)
            let kept = try Data(contentsOf: Self.root.appendingPathComponent("docs/openapi.json"))
            #expect(Data(served.body) == kept)
        }
    }

    @Test func everyDocumentedOperationAnswersAndDocumentsItsRefusals() async throws {
        try await GatewayFixture.inProcess(adjust: { $0.console.enabled = true }) { fixture in
            let paths = try #require(try Self.contract()["paths"] as? [String: [String: Any]])
            for (path, item) in paths {
                for method in ["get", "post", "put", "patch", "delete"] {
                    guard let operation = item[method] as? [String: Any] else { continue }
                    let responses = try #require(operation["responses"] as? [String: Any], "\(method) \(path)")
                    let concrete = path.replacingOccurrences(of: "{hub}", with: "default").replacingOccurrences(
                        of: #"\{[^}]+\}"#, with: "x1", options: .regularExpression)
                    let answer = try await fixture.call(method.uppercased(), concrete, user: nil)
                    // Served: not the router's bare 404 for a path it does not know.
                    #expect(!(answer.status == 404 && answer.body.isEmpty), "\(method) \(path): no route")
                    // What it answered is documented (or covered by a default).
                    let documented =
                        responses[String(answer.status)] != nil || responses["default"] != nil
                        || responses["\(answer.status / 100)XX"] != nil
                    #expect(
                        documented,
                        "\(method.uppercased()) \(path) answered \(answer.status), not documented: \(answer.bodyText.prefix(200))")
                    if path.hasPrefix("/api/"), answer.status == 401 {
                        let body = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
                        #expect(body?["status"] as? Int == 401 && body?["error"] is String, "\(path): \(answer.bodyText)")
                    }
                }
            }
        }
    }
    /// A method a documented resource does not take: 405 with `Allow` naming the documented ones,
    /// in the API's error shape (NH's XML under a hub), whoever asks; `OPTIONS` 204 with `Allow`;
    /// `HEAD` answers as `GET` does, without a body.
    @Test func aMethodAResourceDoesNotTakeIsRefusedWith405AndAllow() async throws {
        try await GatewayFixture.inProcess(adjust: { $0.console.enabled = true }) { fixture in
            let paths = try #require(try Self.contract()["paths"] as? [String: [String: Any]])
            let methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "TRACE", "QUERY"]
            for (path, item) in paths {
                let documented = methods.filter { item[$0.lowercased()] != nil }
                let concrete = path.replacingOccurrences(of: "{hub}", with: "default").replacingOccurrences(
                    of: #"\{[^}]+\}"#, with: "x1", options: .regularExpression)
                for user in [nil, "bob"] as [String?] {
                    for method in methods where !documented.contains(method) {
                        let answer = try await fixture.call(method, concrete, user: user)
                        #expect(
                            answer.status == 405,
                            "\(method) \(path) as \(user ?? "nobody"): \(answer.status) \(answer.bodyText.prefix(120))")
                        let allow = Set(
                            (answer.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                        #expect(allow.isSuperset(of: documented) && !allow.contains(method), "\(method) \(path): Allow \(allow.sorted())")
                        if path.hasPrefix("/{hub}") {
                            #expect(answer.bodyText.contains("<Code>405</Code>"), "\(method) \(path): \(answer.bodyText.prefix(200))")
                        } else {
                            let body = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
                            #expect(body?["status"] as? Int == 405 && (body?["error"] as? String)?.contains(method) == true, "\(path)")
                        }
                    }
                }
                // HEAD where GET goes, unless the contract says the GET must not answer it.
                let headAllowed = (item["get"] as? [String: Any]).map { $0["x-pushgate-head"] as? Bool != false } ?? false
                let options = try await fixture.call("OPTIONS", concrete, user: nil)
                let allowed = Set((options.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                #expect(options.status == 204 && options.body.isEmpty, "OPTIONS \(path): \(options.status)")
                #expect(
                    allowed == Set(documented + ["OPTIONS"] + (headAllowed ? ["HEAD"] : [])),
                    "OPTIONS \(path): Allow \(allowed.sorted())")
                let head = try await fixture.call("HEAD", concrete, user: nil)
                #expect(head.body.isEmpty, "HEAD \(path): a body")
                if headAllowed {
                    let get = try await fixture.call("GET", concrete, user: nil)
                    #expect(head.status == get.status, "HEAD \(path): \(head.status), GET \(get.status)")
                } else {
                    #expect(head.status == 405 && head.header("Allow").map { !$0.contains("HEAD") } == true, "HEAD \(path): \(head.status)")
                }
            }
        }
    }
    /// HEAD on a secure message would mark it read as its GET does: refused, and the message is
    /// still unread; where GET is safe, an authenticated HEAD answers as GET without the body.
    @Test func headIsRefusedWhereGetChangesStateAndAnswersAsGetElsewhere() async throws {
        try await GatewayFixture.inProcess { fixture in
            let device = await fixture.sandbox.createDevice(.apns)
            _ = try await fixture.register(device, user: "alice")
            let sent = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice&secure=true", user: "bob", body: #""s""#)
            let id = try #require(sent.header("X-Pushgate-Secure-Id"), "\(sent.bodyText)")
            let head = try await fixture.call("HEAD", "/api/notifications/\(id)", user: "alice")
            #expect(head.status == 405 && head.body.isEmpty && head.header("Allow") == "GET, DELETE, OPTIONS", "\(head.status)")
            let read = try await fixture.call("GET", "/api/notifications/\(id)", user: "alice")
            #expect(read.status == 200 && read.bodyText.contains(#""Read":false"#), "\(read.bodyText)")

            let get = try await fixture.call("GET", "/api/registrations", user: "alice")
            let headOfList = try await fixture.call("HEAD", "/api/registrations", user: "alice")
            #expect(get.status == 200 && !get.body.isEmpty && headOfList.status == 200 && headOfList.body.isEmpty)
            #expect(headOfList.header("Content-Type") == get.header("Content-Type"))
        }
    }

    /// The middleware splits paths as the router does, and knows only what this gateway serves:
    /// the console's and the sandbox's paths are unknown (404) when they are off.
    @Test func pathsAreMatchedAsTheRouterMatchesThemAndOnlyWhereServed() async throws {
        try await GatewayFixture.inProcess(adjust: { $0.console.enabled = false }) { fixture in
            for path in ["/api//me", "/api/me/", "//api/me//"] {
                let answer = try await fixture.call("DELETE", path, user: "alice")
                #expect(answer.status == 405 && answer.header("Allow") == "GET, HEAD, OPTIONS", "DELETE \(path): \(answer.status)")
                #expect(try await fixture.call("GET", path, user: "alice").status == 200, "GET \(path)")
            }
            for method in ["GET", "POST"] {
                #expect(try await fixture.call(method, "/console", user: nil).status == 404, "\(method) /console with the console off")
            }
            #expect(try await fixture.call("OPTIONS", "/console", user: nil).status == 404)
        }
    }
}
