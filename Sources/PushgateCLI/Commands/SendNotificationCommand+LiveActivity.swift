import ArgumentParser
import Foundation
import Pushgate
import PushgateCurl

/// `pushgate send --live-activity NAME --event start|update|end`: a start, update or end of one
/// of the user's Live Activities (`POST /api/liveactivities/NAME`), printed as every send is.
extension SendNotificationCommand {
    func validateLiveActivity() throws {
        guard hub == nil else { throw ValidationError("--live-activity goes through the tutorial API (--user), not --hub") }
        guard let user, user.contains(":") else { throw ValidationError("--user must be name:password") }
        guard let event, LiveActivityEvent(rawValue: event) != nil else { throw ValidationError("--event must be start, update or end") }
        guard toTag == nil, topic == nil, condition == nil, !secure, !dryRun, at == nil, ttl == nil, !validateOnly, !wait, !template
        else {
            throw ValidationError(
                "with --live-activity, the activity is the audience: --tags narrows a start's push-to-start tokens; "
                    + "--to-tag, --topic, --condition, --secure, --dry-run, --at, --ttl, --validate-only, --wait and --template do not apply"
            )
        }
        guard contentState == nil || properties.isEmpty else { throw ValidationError("give --content-state or --property, not both") }
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw ValidationError("--server must be an http:// or https:// URL")
        }
        _ = try liveActivityBody()
    }

    /// The request's body: Apple's `aps` keys (``LiveActivityMessage``).
    func liveActivityBody() throws -> [UInt8] {
        var members: [JSONMember] = []
        func object(_ text: String, _ option: String) throws -> JSONValue {
            guard let value = try? JSONParser.parse(Array(text.utf8)), value.objectMembers != nil else {
                throw ValidationError("\(option) must be a JSON object")
            }
            return value
        }
        if let contentState {
            members.append(JSONMember(key: "content-state", value: try object(contentState, "--content-state")))
        } else if !properties.isEmpty {
            var pairs: [JSONMember] = []
            for item in properties {
                guard let equals = item.firstIndex(of: "=") else { throw ValidationError("--property '\(item)' must be name=value") }
                pairs.append(
                    JSONMember(key: String(item[..<equals]), value: JSONValue(.string(String(item[item.index(after: equals)...])))))
            }
            members.append(JSONMember(key: "content-state", value: JSONValue(.object(pairs))))
        }
        if let messageArgument, !messageArgument.isEmpty {
            members.append(
                JSONMember(key: "alert", value: JSONValue(.object([JSONMember(key: "body", value: JSONValue(.string(messageArgument)))]))))
        }
        if event == LiveActivityEvent.start.rawValue {
            if let attributesType { members.append(JSONMember(key: "attributes-type", value: JSONValue(.string(attributesType)))) }
            members.append(
                JSONMember(key: "attributes", value: try attributes.map { try object($0, "--attributes") } ?? JSONValue(.object([]))))
            if let channel {
                // The activity listens to the channel: its updates are broadcasts.
                members.append(JSONMember(key: "input-push-channel", value: JSONValue(.string(channel))))
            } else {
                // The device hands the app the new activity's update token, which the app registers.
                members.append(JSONMember(key: "input-push-token", value: JSONValue(.number("1"))))
            }
        }
        return JSONValue(.object(members)).serialized()
    }

    func sendLiveActivity(_ name: String) async -> Int32 {
        var query = "event=\(Self.encode(event ?? ""))"
        if let priority { query += "&priority=\(priority)" }
        if let tags { query += "&tags=\(Self.encode(tags))" }
        if let channel, event != LiveActivityEvent.start.rawValue { query += "&channel=\(Self.encode(channel))" }
        if respondAsync { query += "&async=true" }
        let body: [UInt8]
        do { body = try liveActivityBody() } catch {
            printError("error: \(error)")
            return 2
        }
        var headers: [(name: String, value: String)] = [
            ("Authorization", "Basic \(Data((user ?? "").utf8).base64EncodedString())"),
            ("Content-Type", "application/json; charset=utf-8"),
        ]
        if xml { headers.append(("Accept", "application/xml")) }
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        let client: CurlHTTPClient
        do {
            client = try CurlHTTPClient(
                configuration: .init(httpVersion: .http1, connectTimeoutMilliseconds: 5000, totalTimeoutMilliseconds: 60_000))
        } catch {
            printError("error: \(error)")
            return 3
        }
        let url =
            server.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/api/liveactivities/\(Self.encode(name))?" + query
        let request = CurlRequest(method: "POST", url: url, headers: headers, body: body)
        let status = respondAsync ? await enqueue(client, request) : await exchange(client, request, progress: nil)
        await client.shutdown()
        return status
    }
}
