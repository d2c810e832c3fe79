import ArgumentParser
import Foundation
import Pushgate
import PushgateCurl
import PushgateServer

/// `pushgate send --hub HUB`: the same message through the Notification Hubs REST API, as an NH
/// backend sends it: one native send per platform (`apple`, `fcmv1`, `gcm`, `windows`) or one
/// template send, signed with a connection string's key, each followed through
/// `GET /{hub}/messages/{id}` to its final state.
extension SendNotificationCommand {
    /// A connection string's parts.
    struct HubConnection {
        var endpoint: String
        var keyName: String
        var key: String

        init(parsing text: String) throws {
            var fields: [String: String] = [:]
            for part in text.split(separator: ";") {
                guard let equals = part.firstIndex(of: "=") else { continue }
                fields[part[..<equals].trimmingCharacters(in: .whitespaces).lowercased()] = String(part[part.index(after: equals)...])
            }
            guard let endpoint = fields["endpoint"], let keyName = fields["sharedaccesskeyname"], let key = fields["sharedaccesskey"],
                !key.isEmpty
            else {
                throw ValidationError(
                    "--connection-string must be Endpoint=sb://host:port/;SharedAccessKeyName=…;SharedAccessKey=… (pushgate hubs connection-string prints one)"
                )
            }
            guard endpoint.hasPrefix("sb://") else { throw ValidationError("--connection-string: the Endpoint must start with sb://") }
            self.endpoint = endpoint
            self.keyName = keyName
            self.key = key
        }

        /// `https://host:port`, as Notification Hubs clients derive it.
        var baseURL: String { "https://" + endpoint.dropFirst("sb://".count).trimmingCharacters(in: CharacterSet(charactersIn: "/")) }
    }

    var hubConnectionText: String? { connectionString ?? ProcessInfo.processInfo.environment["PUSHGATE_CONNECTION_STRING"] }

    func validateHub() throws {
        guard user == nil else { throw ValidationError("--user is for the tutorial API; with --hub, a --connection-string authenticates") }
        guard let text = hubConnectionText else {
            throw ValidationError(
                "--hub needs --connection-string (or PUSHGATE_CONNECTION_STRING); pushgate hubs connection-string HUB prints it")
        }
        _ = try HubConnection(parsing: text)
        guard [toTag, tags].compactMap({ $0 }).count == 1, topic == nil, condition == nil else {
            throw ValidationError("with --hub, give one of --to-tag (a user name) or --tags (a tag expression)")
        }
        guard !secure, !validateOnly, ttl == nil, !json, !(xml && (respondAsync || at != nil)) else {
            throw ValidationError(
                "with --hub, --secure, --validate-only, --ttl and --json do not apply; --xml is a test send (not with --async or --at)")
        }
        if let at {
            do { _ = try RFC3339.parse(at) } catch { throw ValidationError("--at: \(error.description)") }
        }
        if !template, !properties.isEmpty { throw ValidationError("--property is for template sends (--template)") }
        _ = try PlatformSelection(parsing: pns)
    }

    /// One send request of the hub API.
    struct HubSend {
        var label: String
        var format: String
        var body: String
        var headers: [(name: String, value: String)]
    }

    func hubSends() throws -> [HubSend] {
        if template {
            var object = try Self.body(message: message, properties: properties)
            if properties.isEmpty { object = #"{"message":"# + object + "}" }
            return [HubSend(label: "template", format: "template", body: object, headers: [])]
        }
        var text: [UInt8] = []
        Escaping.appendJSONString(message, to: &text)
        let quoted = String(decoding: text, as: UTF8.self)
        let xmlText = message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        // UnifiedPush is not a hub platform (Platform.hubPlatforms): not sent through the hub.
        return try PlatformSelection(parsing: pns).platforms.compactMap { platform -> HubSend? in
            switch platform {
            case .apns:
                HubSend(label: "apns", format: "apple", body: #"{"aps":{"alert":\#(quoted)}}"#, headers: [("apns-push-type", "alert")])
            case .fcm: HubSend(label: "fcm", format: "fcmv1", body: #"{"message":{"notification":{"body":\#(quoted)}}}"#, headers: [])
            case .gcm: HubSend(label: "gcm", format: "gcm", body: #"{"notification":{"body":\#(quoted)}}"#, headers: [])
            case .wns:
                HubSend(
                    label: "wns", format: "windows",
                    body: "<toast><visual><binding template=\"ToastGeneric\"><text>\(xmlText)</text></binding></visual></toast>",
                    headers: [("X-WNS-Type", "wns/toast")])
            case .browser:
                HubSend(
                    label: "browser", format: "browser", body: #"{"web_push":8030,"notification":{"title":\#(quoted),"navigate":"/"}}"#,
                    headers: [("TTL", "86400")])
            case .hms:
                HubSend(
                    label: "hms", format: "huawei",
                    body: #"{"message":{"android":{"notification":{"title":\#(quoted),"body":\#(quoted),"click_action":{"type":3}}}}}"#,
                    headers: [])
            case .unifiedpush: nil
            }
        }
    }

    func sendThroughHub(_ hub: String) async -> Int32 {
        let connection: HubConnection
        let sends: [HubSend]
        do {
            connection = try HubConnection(parsing: hubConnectionText ?? "")
            sends = try hubSends()
        } catch {
            printError("error: \(error)")
            return 2
        }
        let base = (server == "http://127.0.0.1:8080" ? connection.baseURL : server.trimmingCharacters(in: CharacterSet(charactersIn: "/")))
        let hubURL = base + "/" + Self.encode(hub)
        func authorization() -> String {
            SharedAccessSignature.token(
                resourceURI: hubURL, keyName: connection.keyName, key: connection.key, expiry: Int64(Date().timeIntervalSince1970) + 3600)
        }
        let client: CurlHTTPClient
        do {
            client = try CurlHTTPClient(
                configuration: .init(
                    httpVersion: .http2, caFile: caFile, connectTimeoutMilliseconds: 5000, totalTimeoutMilliseconds: 60_000))
        } catch {
            printError("error: \(error.message)")
            return 3
        }
        let status = await exchange(client: client, hubURL: hubURL, sends: sends, authorization: authorization)
        await client.shutdown()
        return status
    }

    private func exchange(
        client: CurlHTTPClient, hubURL: String, sends: [HubSend], authorization: () -> String
    ) async -> Int32 {
        let tagExpression = toTag.map { "username:\($0)" } ?? tags ?? ""
        var accepted: [(label: String, id: String)] = []
        for send in sends {
            let collection = at == nil ? "messages" : "schedulednotifications"
            var headers: [(name: String, value: String)] = [
                ("Authorization", authorization()), ("ServiceBusNotification-Format", send.format),
                ("ServiceBusNotification-Tags", tagExpression),
                ("Content-Type", send.format == "windows" ? "application/xml" : "application/json;charset=utf-8"),
            ]
            headers += send.headers
            if let at { headers.append(("ServiceBusNotification-ScheduleTime", at)) }
            let url = "\(hubURL)/\(collection)/?\(xml ? "test&" : "")api-version=2020-06"
            let response: CurlResponse
            do {
                response = try await client.execute(CurlRequest(method: "POST", url: url, headers: headers, body: Array(send.body.utf8)))
            } catch {
                printError("error: cannot reach the hub at \(hubURL): \(error.message)")
                return 3
            }
            guard response.status == 201 else {
                let detail = Self.element("Detail", in: response.bodyText) ?? response.bodyText
                printError("error: \(send.label): the hub answered \(response.status): \(detail)")
                return (400..<500).contains(response.status) ? 2 : 1
            }
            if xml {
                print(response.bodyText)
                continue
            }
            let location = response.header("Location") ?? ""
            let id = location.split(separator: "?").first?.split(separator: "/").last.map(String.init) ?? ""
            accepted.append((send.label, id))
        }
        if xml { return 0 }
        if (respondAsync || at != nil) && !wait {
            for (label, id) in accepted { print("\(label)\t\(id)") }
            return 0
        }
        // Follow each to its final state, as NH's per-message telemetry tells it.
        var reached = 0
        var failed = 0
        for (label, id) in accepted {
            while true {
                let response: CurlResponse
                do {
                    response = try await client.execute(
                        CurlRequest(
                            method: "GET", url: "\(hubURL)/messages/\(id)?api-version=2020-06",
                            headers: [("Authorization", authorization())]))
                } catch {
                    printError("error: lost the hub at \(hubURL): \(error.message)")
                    return 3
                }
                guard response.status == 200, let state = Self.element("State", in: response.bodyText) else {
                    printError("error: \(label): the hub answered \(response.status) for notification \(id)")
                    return 2
                }
                let final: Set<String> = ["Completed", "Abandoned", "NoTargetFound", "Canceled", "Unknown"]
                guard final.contains(state) else {
                    try? await Task.sleep(for: .milliseconds(250))
                    continue
                }
                let counts = Self.outcomeCounts(in: response.bodyText)
                reached += counts.filter { $0.name == "Success" }.reduce(0) { $0 + $1.count }
                // Skipped: registrations the send passes over (templates, for a native send).
                failed += counts.filter { $0.name != "Success" && $0.name != "Skipped" }.reduce(0) { $0 + $1.count }
                let summary = counts.map { "\($0.name) \($0.count)" }.joined(separator: ", ")
                print("\(label.padding(toLength: 9, withPad: " ", startingAt: 0))\(id)  \(state)\(summary.isEmpty ? "" : "  " + summary)")
                break
            }
        }
        return reached > 0 && failed == 0 ? 0 : 1
    }

    /// The text of the first `<name>` element (NH's XML answers are flat enough for this).
    static func element(_ name: String, in xml: String) -> String? {
        guard let start = xml.range(of: "<\(name)>"), let end = xml.range(of: "</\(name)>", range: start.upperBound..<xml.endIndex) else {
            return nil
        }
        return String(xml[start.upperBound..<end.lowerBound])
    }

    /// Every `<Outcome><Name>…</Name><Count>…</Count></Outcome>` of a NotificationDetails.
    static func outcomeCounts(in xml: String) -> [(name: String, count: Int)] {
        xml.components(separatedBy: "<Outcome>").dropFirst().compactMap { chunk in
            guard let name = element("Name", in: chunk), let count = element("Count", in: chunk).flatMap({ Int($0) }) else { return nil }
            return (name, count)
        }
    }
}
