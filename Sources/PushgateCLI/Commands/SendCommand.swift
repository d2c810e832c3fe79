import ArgumentParser
import Foundation
import Pushgate
import PushgateCurl

/// `pushgate send`: sends through a running gateway and prints what every push service said.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a message through a running gateway and print the per-platform and per-device outcomes.",
        discussion: """
            Example: pushgate send --server http://127.0.0.1:8080 --user bob:bob --pns all --to-tag alice "Hello"
            Exit status: 0 every device got it; 1 some deliveries failed or nothing matched; 2 the gateway refused \
            the request (bad input, credentials); 3 the gateway could not be reached.
            """)

    @Option(help: "The gateway's base URL.")
    var server: String = "http://127.0.0.1:8080"

    @Option(help: "Credentials as name:password.")
    var user: String

    @Option(help: "Platforms: apns, fcm, gcm, wns, all, or a comma-separated list.")
    var pns: String = "all"

    @Option(name: .customLong("to-tag"), help: "The recipient's user name (targets username:<name>).")
    var toTag: String?

    @Option(help: "A tag expression instead of --to-tag, e.g. 'news && lang:en'.")
    var tags: String?

    @Option(
        name: .customLong("property"), help: ArgumentHelp("An extra template property, name=value (repeatable).", valueName: "name=value"))
    var properties: [String] = []

    @Flag(help: "Secure push: store the message and push only its id.")
    var secure = false

    @Flag(help: "Print the gateway's JSON result.")
    var json = false

    @Flag(help: "Print the gateway's XML result (NotificationOutcome).")
    var xml = false

    @Argument(help: "The message.")
    var message: String

    func validate() throws {
        guard user.contains(":") else { throw ValidationError("--user must be name:password") }
        guard toTag != nil || tags != nil else { throw ValidationError("give --to-tag (a user name) or --tags (a tag expression)") }
        guard !(json && xml) else { throw ValidationError("choose one of --json and --xml") }
        _ = try PlatformSelection(parsing: pns)
        _ = try TemplatesCommand.Render.properties(from: properties)
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw ValidationError("--server must be an http:// or https:// URL")
        }
    }

    func run() async throws {
        var query = "pns=\(Self.encode(pns))"
        if let toTag { query += "&to_tag=\(Self.encode(toTag))" }
        if let tags { query += "&tags=\(Self.encode(tags))" }
        if secure { query += "&secure=true" }
        let body = try Self.body(message: message, properties: properties)
        let credentials = Data(user.utf8).base64EncodedString()
        var headers: [(name: String, value: String)] = [
            ("Authorization", "Basic \(credentials)"), ("Content-Type", "application/json; charset=utf-8"),
        ]
        if xml { headers.append(("Accept", "application/xml")) }
        let client = try CurlHTTPClient(
            configuration: .init(httpVersion: .http1, connectTimeoutMilliseconds: 5000, totalTimeoutMilliseconds: 60_000))
        let url = server.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/api/notifications?" + query
        let status = await exchange(client, CurlRequest(method: "POST", url: url, headers: headers, body: Array(body.utf8)))
        await client.shutdown()
        if status != 0 { throw ExitCode(status) }
    }

    /// Sends and prints; returns the exit status.
    private func exchange(_ client: CurlHTTPClient, _ request: CurlRequest) async -> Int32 {
        let response: CurlResponse
        do {
            response = try await client.execute(request)
        } catch {
            printError("error: cannot reach the gateway at \(server): \(error.message)")
            return 3
        }
        if xml || json { print(response.bodyText) }
        switch response.status {
        case 200, 404, 503:
            guard let result = try? JSONDecoder().decode(NotificationResult.self, from: Data(response.body)) else {
                if !xml && !json { print(response.bodyText) }
                return response.status == 200 ? 0 : 1
            }
            if !json && !xml {
                DemoOutput().table(result)
                if let secureID = response.header("X-Pushgate-Secure-Id") { print("secure id: \(secureID)") }
            }
            return response.status != 200 || result.failureCount > 0 ? 1 : 0
        case 401:
            printError("error: the gateway refused the credentials for '\(user.prefix(while: { $0 != ":" }))' (401)")
            return 2
        default:
            let reason = (try? JSONParser.parse(response.body))?["error"]?.stringValue ?? response.bodyText
            printError("error: the gateway answered \(response.status): \(reason)")
            return 2
        }
    }

    static func body(message: String, properties: [String]) throws -> String {
        var bytes: [UInt8] = []
        guard !properties.isEmpty else {
            Escaping.appendJSONString(message, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        bytes.append(contentsOf: #"{"message":"#.utf8)
        Escaping.appendJSONString(message, to: &bytes)
        for item in properties {
            let equals = item.firstIndex(of: "=")!
            bytes.append(UInt8(ascii: ","))
            Escaping.appendJSONString(String(item[..<equals]), to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            Escaping.appendJSONString(String(item[item.index(after: equals)...]), to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }
}
