import Foundation
import PushgateCurl
import PushgateTesting
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
                let options = try await fixture.call("OPTIONS", concrete, user: nil)
                let allowed = Set((options.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                #expect(options.status == 204 && options.body.isEmpty, "OPTIONS \(path): \(options.status)")
                #expect(allowed == Set(documented + ["OPTIONS"] + (documented.contains("GET") ? ["HEAD"] : [])) || path.hasPrefix("/{hub}"))
                #expect(allowed.isSuperset(of: documented + ["OPTIONS"]), "OPTIONS \(path): Allow \(allowed.sorted())")
                guard !path.hasPrefix("/{hub}") else { continue }
                if documented.contains("GET") {
                    let get = try await fixture.call("GET", concrete, user: nil)
                    let head = try await fixture.call("HEAD", concrete, user: nil)
                    #expect(head.status == get.status && head.body.isEmpty, "HEAD \(path): \(head.status), GET \(get.status)")
                }
            }
        }
    }
}
