import Pushgate

/// The control API's Live Activity routes (see ``ControlAPI``):
///
/// | route | does |
/// |---|---|
/// | `POST /devices/{id}/pushtostart` `{"attributesType": "DeliveryAttributes"}` | 201 `{"token", "attributesType", "deviceId"}`: the device's push-to-start token for the type (replaces the previous one, which answers 410 from then on) |
/// | `GET /devices/{id}/activities` | 200 `{"activities": [activity…]}`, oldest first |
/// | `POST /devices/{id}/channels` `{"channelId": "…", "name": "…"}` | subscribes the device to a broadcast channel of the sandbox's app: 201 with the new activity, or 200 with the running one on that channel |
/// | `GET /activities/{updateToken}` | 200 the activity the update token reaches |
///
/// An activity: `{"id", "deviceId", "name", "attributesType", "attributes", "updateToken",
/// "contentState", "timestamp", "state": "active|ended|dismissed", "channel", "alert", "staleDate",
/// "dismissalDate", "updates", "ignored"}`.
extension ControlAPI {
    /// The answer when `request` is one of the Live Activity routes, else nil.
    func liveActivityRoute(_ request: SandboxHTTPRequest, parts: [String]) -> SandboxHTTPResponse? {
        let liveActivities = sandbox.state.liveActivities
        let now = sandbox.state.clock.now.secondsSinceEpoch
        switch (request.method, parts.count, parts.first, parts.count > 2 ? parts[2] : nil) {
        case ("GET", 2, "activities", _):
            guard let activity = liveActivities.activity(updateToken: parts[1]) else {
                return failure(404, "no activity with update token '\(parts[1])'")
            }
            return json(200, activity.json(at: now))
        case ("GET", 3, "devices", "activities"):
            guard sandbox.state.lookUp(id: parts[1]) != nil else { return notFound(parts[1]) }
            let activities = liveActivities.activities(deviceID: parts[1]).map { $0.json(at: now) }
            return json(200, JSONValue(.object([JSONMember(key: "activities", value: JSONValue(.array(activities)))])))
        case ("POST", 3, "devices", "pushtostart"):
            guard let device = apnsDevice(parts[1]) else { return notFound(parts[1]) }
            let fields: [String: String]
            switch Self.fields(request.body, required: ["attributesType"], optional: []) {
            case .success(let found): fields = found
            case .failure(let problem): return failure(400, problem.description)
            }
            let attributesType = fields["attributesType"]!
            let token = liveActivities.issuePushToStartToken(deviceID: device.id, attributesType: attributesType)
            return json(
                201,
                JSONValue(
                    .object([
                        JSONMember(key: "token", value: JSONValue(.string(token))),
                        JSONMember(key: "attributesType", value: JSONValue(.string(attributesType))),
                        JSONMember(key: "deviceId", value: JSONValue(.string(device.id))),
                    ])))
        case ("POST", 3, "devices", "channels"):
            guard let device = apnsDevice(parts[1]) else { return notFound(parts[1]) }
            let fields: [String: String]
            switch Self.fields(request.body, required: ["channelId"], optional: ["name"]) {
            case .success(let found): fields = found
            case .failure(let problem): return failure(400, problem.description)
            }
            let app = sandbox.credentials.apnsTopic
            guard let channel = liveActivities.channel(id: fields["channelId"]!, app: app) else {
                return failure(404, "no channel '\(fields["channelId"]!)' of \(app)")
            }
            let (activity, created) = liveActivities.subscribe(deviceID: device.id, channelID: channel.id, name: fields["name"])
            return json(created ? 201 : 200, activity.json(at: now))
        default:
            return nil
        }
    }

    /// An APNs device of the sandbox (Live Activities are ActivityKit's).
    private func apnsDevice(_ id: String) -> SandboxDevice? {
        sandbox.state.lookUp(id: id).flatMap { $0.platform == .apns ? $0 : nil }
    }

    private func json(_ status: Int, _ value: JSONValue) -> SandboxHTTPResponse {
        .json(status, String(decoding: value.serialized(), as: UTF8.self))
    }

    private func failure(_ status: Int, _ message: String) -> SandboxHTTPResponse {
        json(status, JSONValue(.object([JSONMember(key: "error", value: JSONValue(.string(message)))])))
    }

    /// The string members of a JSON object body: each of `required` present, nothing beyond
    /// `required` and `optional`; else what is wrong.
    private static func fields(_ body: [UInt8], required: [String], optional: [String]) -> Result<[String: String], FieldProblem> {
        guard let object = try? JSONParser.parse(body), let members = object.objectMembers else {
            return .failure(FieldProblem("expected a JSON object with \(required.map { "\"\($0)\"" }.joined(separator: ", "))"))
        }
        var fields: [String: String] = [:]
        for member in members {
            guard required.contains(member.key) || optional.contains(member.key) else {
                return .failure(FieldProblem("unknown key \"\(member.key)\""))
            }
            guard let text = member.value.stringValue, !text.isEmpty else {
                return .failure(FieldProblem("\"\(member.key)\" must be a non-empty string"))
            }
            fields[member.key] = text
        }
        if let missing = required.first(where: { fields[$0] == nil }) { return .failure(FieldProblem("missing \"\(missing)\"")) }
        return .success(fields)
    }
}

/// What is wrong with a control API body.
struct FieldProblem: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
