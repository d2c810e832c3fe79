import ArgumentParser
import Foundation
import Pushgate
import PushgateCurl
import PushgateServer
import Synchronization

/// `pushgate send`: sends through a running gateway and prints what every push service said.
struct SendNotificationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a message through a running gateway and print the per-platform and per-device outcomes.",
        discussion: """
            Example: pushgate send --server http://127.0.0.1:8080 --user bob:bob --pns all --to-tag alice "Hello"
            Example: pushgate send --user bob:bob --to-tag alice --at 2026-11-24T09:00:00Z --wait "Good morning"
            Example: pushgate send --user alice:alice --live-activity order-4711 --event update --property status=shipped \
            (a Live Activity of yours: start, update or end; see docs/live-activities.md)
            Example: pushgate send --hub default --connection-string "$(pushgate hubs connection-string default)" --ca-file ca.pem \
            --tags news "Hello" (the Notification Hubs REST API: one native send per platform, followed to the end)
            Exit status: 0 every device got it (or, with --async or --at and no --wait, the gateway accepted it); \
            1 some deliveries failed or nothing matched; 2 the gateway refused the request (bad input, credentials); \
            3 the gateway could not be reached.
            """)

    @Option(help: "The gateway's base URL.")
    var server: String = "http://127.0.0.1:8080"

    @Option(help: "Credentials as name:password (the tutorial API; not with --hub).")
    var user: String?

    @Option(help: "Send through the Notification Hubs REST API of this hub (/HUB/messages) instead of the tutorial API.")
    var hub: String?

    @Option(
        name: .customLong("connection-string"),
        help:
            "With --hub: Endpoint=sb://host:port/;SharedAccessKeyName=…;SharedAccessKey=… (default: $PUSHGATE_CONNECTION_STRING); the gateway is reached at https://host:port/ unless --server is given."
    )
    var connectionString: String?

    @Option(name: .customLong("ca-file"), help: "With --hub: a CA certificate (PEM) to trust for the gateway's HTTPS.")
    var caFile: String?

    @Flag(help: "With --hub: a template send (the message as the 'message' property, with any --property) instead of native sends.")
    var template = false

    @Option(help: ArgumentHelp("Platforms: \(Platform.names), all, or a comma-separated list."))
    var pns: String = "all"

    @Option(name: .customLong("to-tag"), help: "The recipient's user name (targets username:<name>).")
    var toTag: String?

    @Option(help: "A tag expression instead of --to-tag, e.g. 'news && lang:en'.")
    var tags: String?

    @Option(help: "An FCM topic instead of tags (with --pns fcm): Firebase sends to the devices subscribed to it.")
    var topic: String?

    @Option(help: "An FCM condition over topics instead of tags, e.g. \"'news' in topics && 'eu' in topics\" (with --pns fcm).")
    var condition: String?

    @Option(help: "Time to live in seconds: how long the services keep the notification for an offline device.")
    var ttl: Int?

    @Flag(name: .customLong("validate-only"), help: "A dry run: the services validate the message without delivering it (FCM, GCM).")
    var validateOnly = false

    @Option(
        name: .customLong("property"), help: ArgumentHelp("An extra template property, name=value (repeatable).", valueName: "name=value"))
    var properties: [String] = []

    @Flag(help: "Secure push: store the message and push only its id.")
    var secure = false

    @Flag(help: "Print the gateway's JSON result.")
    var json = false

    @Flag(help: "Print the gateway's XML result (NotificationOutcome).")
    var xml = false

    @Flag(name: .customLong("async"), help: "Return once the gateway has stored the notification: print its id (202 Accepted).")
    var respondAsync = false

    @Option(help: "Deliver at this time (RFC 3339, e.g. 2026-11-24T09:00:00Z); implies --async.")
    var at: String?

    @Flag(help: "With --async or --at: follow the delivery with a progress bar, then print the final counts.")
    var wait = false

    @Flag(
        inversion: .prefixedNo,
        help: "Show how many devices have answered while a long fan-out runs (default: when standard error is a terminal).")
    var progress: Bool?

    @Flag(
        name: .customLong("dry-run"),
        help: "Send nothing: print who the send would reach and each platform's request as it would go on the wire.")
    var dryRun = false

    @Option(name: .customLong("idempotency-key"), help: "An Idempotency-Key: a repeat of the send with it is not sent again.")
    var idempotencyKey: String?

    @Option(
        name: .customLong("live-activity"),
        help: ArgumentHelp(
            "Start, update or end this Live Activity of yours instead of sending a message: --event, the content state as --property name=value or --content-state, the message (if any) as its alert.",
            valueName: "name"))
    var liveActivity: String?

    @Option(help: "With --live-activity: start, update or end.")
    var event: String?

    @Option(name: .customLong("content-state"), help: "With --live-activity: the content state as a JSON object (instead of --property).")
    var contentState: String?

    @Option(name: .customLong("attributes-type"), help: "With --live-activity --event start: the ActivityKit attributes type.")
    var attributesType: String?

    @Option(help: "With --live-activity --event start: the attributes as a JSON object (default {}).")
    var attributes: String?

    @Option(help: "With --live-activity: apns-priority 10 (immediate, spends the device's budget) or 5.")
    var priority: Int?

    @Option(
        help:
            "With --live-activity: broadcast the update or end to this channel (pushgate channels list) instead; with --event start, the channel the activity listens to."
    )
    var channel: String?

    @Argument(help: ArgumentHelp("The message (with --live-activity, optional: the alert's body).", valueName: "message"))
    var messageArgument: String?

    var message: String { messageArgument ?? "" }

    func validate() throws {
        if liveActivity != nil {
            try validateLiveActivity()
            return
        }
        guard messageArgument != nil else { throw ValidationError("Missing expected argument '<message>'") }
        if hub != nil {
            try validateHub()
            return
        }
        guard let user, user.contains(":") else { throw ValidationError("--user must be name:password") }
        guard [toTag, tags, topic, condition].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give one of --to-tag (a user name), --tags (a tag expression), --topic or --condition (FCM)")
        }
        guard !(json && xml) else { throw ValidationError("choose one of --json and --xml") }
        if let at {
            do { _ = try RFC3339.parse(at) } catch { throw ValidationError("--at: \(error.description)") }
        }
        if wait && !respondAsync && at == nil { throw ValidationError("--wait follows an --async or --at send") }
        if dryRun && (wait || xml) { throw ValidationError("--dry-run prints its own report (or --json); not with --wait or --xml") }
        if xml && (respondAsync || at != nil) { throw ValidationError("--xml shows a synchronous result; use --json with --async or --at") }
        _ = try PlatformSelection(parsing: pns)
        _ = try TemplatesCommand.Render.properties(from: properties)
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw ValidationError("--server must be an http:// or https:// URL")
        }
    }

    func run() async throws {
        if let liveActivity {
            let status = await sendLiveActivity(liveActivity)
            if status != 0 { throw ExitCode(status) }
            return
        }
        if let hub {
            let status = await sendThroughHub(hub)
            if status != 0 { throw ExitCode(status) }
            return
        }
        let user = self.user ?? ""
        var query = "pns=\(Self.encode(pns))"
        if let toTag { query += "&to_tag=\(Self.encode(toTag))" }
        if let tags { query += "&tags=\(Self.encode(tags))" }
        if let topic { query += "&topic=\(Self.encode(topic))" }
        if let condition { query += "&condition=\(Self.encode(condition))" }
        if let ttl { query += "&ttl=\(ttl)" }
        if validateOnly { query += "&validateOnly=true" }
        if secure { query += "&secure=true" }
        if let at { query += "&deliverAt=\(Self.encode(at))" }
        if dryRun { query += "&dryRun=true" }
        let accepted = respondAsync || at != nil
        let body = try Self.body(message: message, properties: properties)
        let credentials = Data(user.utf8).base64EncodedString()
        var headers: [(name: String, value: String)] = [
            ("Authorization", "Basic \(credentials)"), ("Content-Type", "application/json; charset=utf-8"),
        ]
        let showProgress = !json && !xml && !accepted && (progress ?? (isatty(STDERR_FILENO) == 1))
        if xml { headers.append(("Accept", "application/xml")) }
        if respondAsync { headers.append(("Prefer", "respond-async")) }
        if showProgress && !dryRun { headers.append(("Accept", "application/x-ndjson")) }
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        let client = try CurlHTTPClient(
            configuration: .init(httpVersion: .http1, connectTimeoutMilliseconds: 5000, totalTimeoutMilliseconds: 60_000))
        let url = server.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/api/notifications?" + query
        let request = CurlRequest(method: "POST", url: url, headers: headers, body: Array(body.utf8))
        let status =
            dryRun
            ? await preview(client, request)
            : accepted
                ? await enqueue(client, request) : await exchange(client, request, progress: showProgress ? ProgressLine() : nil)
        await client.shutdown()
        if status != 0 { throw ExitCode(status) }
    }

    /// A dry run: the audience and each platform's request, as the gateway reports them.
    private func preview(_ client: CurlHTTPClient, _ request: CurlRequest) async -> Int32 {
        let response: CurlResponse
        do { response = try await client.execute(request) } catch {
            printError("error: cannot reach the gateway at \(server): \(error.message)")
            return 3
        }
        guard response.status == 200, let report = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        else {
            printError("error: the gateway answered \(response.status): \(response.bodyText)")
            return response.status >= 500 ? 3 : 2
        }
        if json {
            print(response.bodyText)
            return 0
        }
        let audience = report["audience"] as? [String: Any] ?? [:]
        let byPlatform = (audience["byPlatform"] as? [String: Int] ?? [:]).sorted { $0.key < $1.key }
        let total = (audience["total"] as? Int).map(String.init) ?? "the topic's subscribers (Firebase knows them)"
        print("dry run: nothing was stored or sent")
        print(
            "audience: \(total)"
                + (byPlatform.isEmpty ? "" : " (" + byPlatform.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"))
        for match in report["registrations"] as? [[String: Any]] ?? [] {
            let tags = (match["tags"] as? [String] ?? []).joined(separator: ", ")
            print("  \(match["registrationId"] ?? "") \(match["platform"] ?? "") \(match["handle"] ?? "") [\(tags)]")
        }
        for payload in report["payloads"] as? [[String: Any]] ?? [] {
            let within = payload["withinLimit"] as? Bool ?? false
            print(
                "\n\(payload["platform"] ?? "") (template \(payload["template"] ?? "")): \(payload["bytes"] ?? 0) of \(payload["limit"] ?? 0) bytes"
                    + (within ? "" : " — OVER THE SERVICE'S LIMIT"))
            if let method = payload["method"] as? String, let url = payload["url"] as? String { print("  \(method) \(url)") }
            for (name, value) in (payload["headers"] as? [String: String] ?? [:]).sorted(by: { $0.key < $1.key }) {
                print("  \(name): \(value)")
            }
            print("  " + (payload["body"] as? String ?? ""))
            if let note = payload["note"] as? String { print("  (\(note))") }
        }
        return 0
    }

    /// An asynchronous or scheduled send: prints the id (and, with `--wait`, follows it to the end).
    func enqueue(_ client: CurlHTTPClient, _ request: CurlRequest) async -> Int32 {
        let response: CurlResponse
        do { response = try await client.execute(request) } catch {
            printError("error: cannot reach the gateway at \(server): \(error.message)")
            return 3
        }
        guard response.status == 202, let accepted = try? JSONDecoder().decode(NotificationRecordBody.self, from: Data(response.body))
        else {
            let reason = (try? JSONParser.parse(response.body))?["error"]?.stringValue ?? response.bodyText
            printError("error: the gateway answered \(response.status): \(reason)")
            return response.status == 401 || (400..<500).contains(response.status) ? 2 : 1
        }
        if !wait {
            if json {
                print(response.bodyText)
            } else {
                print(accepted.notificationId)
                printError(
                    "\(accepted.state)" + (accepted.deliverAt.map { " for \($0)" } ?? "")
                        + "; follow it with: pushgate notifications show \(accepted.notificationId)")
            }
            return 0
        }
        return await follow(client, id: accepted.notificationId)
    }

    /// Polls the notification's telemetry, drawing a progress bar, until it is final.
    private func follow(_ client: CurlHTTPClient, id: String) async -> Int32 {
        let url = server.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/api/notifications/\(id)/outcome?failedLimit=1000"
        let headers: [(name: String, value: String)] = [("Authorization", "Basic \(Data((user ?? "").utf8).base64EncodedString())")]
        let bar = !json && isatty(STDERR_FILENO) == 1
        while true {
            let response: CurlResponse
            do { response = try await client.execute(CurlRequest(method: "GET", url: url, headers: headers)) } catch {
                printError("error: lost the gateway at \(server): \(error.message)")
                return 3
            }
            guard response.status == 200, let outcome = try? JSONDecoder().decode(NotificationRecordBody.self, from: Data(response.body))
            else {
                printError("error: the gateway answered \(response.status) for notification \(id)")
                return 2
            }
            if outcome.isFinal {
                if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                if json { print(response.bodyText) } else { outcome.printReport() }
                return outcome.state == NotificationState.completed.rawValue && outcome.failure == 0 ? 0 : 1
            }
            if bar { FileHandle.standardError.write(Data("\r\u{1B}[K\(Self.progressBar(outcome))".utf8)) }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// `[#########-----------]  45% 4,500 of 10,000 (4,498 delivered)`; while the audience is
    /// still being read its size is a lower bound.
    static func progressBar(_ outcome: NotificationRecordBody) -> String {
        guard outcome.targets > 0 else { return "\(outcome.state)…" }
        let fraction = min(1, Double(outcome.processed) / Double(outcome.targets))
        let filled = Int(fraction * 30)
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled) + "] "
            + "\(Int(fraction * 100))% \(outcome.processed.formatted()) of \(outcome.targetsText) (\(outcome.success.formatted()) delivered)"
    }

    /// Sends and prints; returns the exit status.
    func exchange(_ client: CurlHTTPClient, _ request: CurlRequest, progress: ProgressLine?) async -> Int32 {
        var response: CurlResponse
        do {
            var onBody: (@Sendable ([UInt8]) -> Void)?
            if let progress { onBody = { progress.receive($0) } }
            response = try await client.execute(request, onBody: onBody)
        } catch {
            progress?.end()
            printError("error: cannot reach the gateway at \(server): \(error.message)")
            return 3
        }
        progress?.end()
        if response.header("Content-Type")?.hasPrefix("application/x-ndjson") == true {
            // A streamed send: the last line is the result (or the error) with the send's own status.
            let last = response.body.split(separator: UInt8(ascii: "\n")).last.map(Array.init) ?? []
            guard let streamed = try? JSONDecoder().decode(StreamedSend.self, from: Data(last)) else {
                printError("error: the gateway's streamed answer ended without a result")
                return 1
            }
            var body = Array(last)
            if let result = streamed.result, let encoded = try? JSONEncoder().encode(result) { body = Array(encoded) }
            response = CurlResponse(status: streamed.status, headers: response.headers, body: body, httpVersion: response.httpVersion)
            if let secureID = streamed.secureId { response.headers.append(("X-Pushgate-Secure-Id", secureID)) }
        }
        if xml || json { print(response.bodyText) }
        switch response.status {
        case 200, 202, 404, 503:
            guard let result = try? JSONDecoder().decode(NotificationResult.self, from: Data(response.body)) else {
                if !xml && !json { print(response.bodyText) }
                return response.status == 200 ? 0 : 1
            }
            if !json && !xml {
                DemoOutput().table(result)
                if let secureID = response.header("X-Pushgate-Secure-Id") { print("secure id: \(secureID)") }
                if let error = result.error { printError(error) }
            }
            return response.status != 200 || result.failureCount > 0 ? 1 : 0
        case 401:
            printError("error: the gateway refused the credentials for '\((user ?? "").prefix(while: { $0 != ":" }))' (401)")
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

/// The `send` progress display: one line on standard error, rewritten as progress lines of a
/// streamed send arrive ("1,500 devices answered, 1,498 delivered").
final class ProgressLine: Sendable {
    private let buffer = Mutex<[UInt8]>([])

    /// Feeds a piece of the streamed body; draws the latest complete progress line.
    func receive(_ bytes: [UInt8]) {
        let lines: [[UInt8]] = buffer.withLock { buffer in
            buffer += bytes
            guard let end = buffer.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
            let complete = buffer[...end].split(separator: UInt8(ascii: "\n")).map(Array.init)
            buffer.removeSubrange(...end)
            return complete
        }
        for line in lines.reversed() {
            guard let progress = (try? JSONParser.parse(line))?["progress"] else { continue }
            func count(_ key: String) -> String {
                guard case .number(let text)? = progress[key]?.kind, let value = Int(text) else { return "?" }
                return value.formatted()
            }
            FileHandle.standardError.write(Data("\r\u{1B}[K\(count("processed")) devices answered, \(count("succeeded")) delivered".utf8))
            return
        }
    }

    /// Ends the progress line.
    func end() {
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

/// The last line of a streamed send.
struct StreamedSend: Decodable {
    var status: Int
    var result: NotificationResult?
    var error: String?
    var secureId: String?
}
