import Foundation
import Pushgate

/// The sandbox's control API, plain HTTP/1.1 with JSON bodies:
///
/// | route | does |
/// |---|---|
/// | `GET /health` | 200 when up |
/// | `POST /devices` `{"platform": "apns", "anotherApp": false}` | creates a device; answers it with its handle |
/// | `POST /devices` `{"platform": "apns", "count": 1000}` | creates `count` devices (at most 1,000,000); answers them |
/// | `POST /devices` `{"platform": "unifiedpush", "vapid": true}` | a UnifiedPush app whose distributor wants VAPID |
/// | `GET /devices`, `GET /devices/{id}` | lists devices / one device |
/// | `POST /devices/{id}/uninstall`, `/expire`, `/reinstall` | the service answers "gone" (or no longer does) |
/// | `POST /devices/{id}/canonical` `{"handle": "…"}` | legacy GCM answers with this canonical id |
/// | `GET /devices/{id}/inbox` | what the device received, in order, with headers |
/// | `POST /faults` (a ``SandboxFault``), `DELETE /faults` | scripts or clears faults |
/// | `POST /tokens/revoke` | forgets issued OAuth access tokens |
/// | `GET /stats` | requests answered per service and status |
/// | `GET /stats/inboxes` | how many devices hold how many notifications (`{"1": 99998, "2": 2}`), and the total |
/// | `POST /devices/{id}/pushtostart`, `GET /devices/{id}/activities`, `POST /devices/{id}/channels`, `GET /activities/{updateToken}` | Live Activities (`ControlAPI+LiveActivities.swift`) |
struct ControlAPI: SandboxHTTPResponder {
    let sandbox: PushSandbox

    private struct CreateDevice: Decodable {
        var platform: Platform
        var anotherApp: Bool?
        var count: Int?
        /// A UnifiedPush subscription made with the sandbox's VAPID key.
        var vapid: Bool?
    }

    private struct Canonical: Decodable {
        var handle: String?
    }

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let parts = request.path.split(separator: "/").map(String.init)
        let state = sandbox.state
        if let response = liveActivityRoute(request, parts: parts) { return response }
        switch (request.method, parts.count, parts.first) {
        case ("GET", 1, "health"):
            return .json(200, #"{"status":"ok"}"#)
        case ("POST", 1, "devices"):
            guard let body = try? JSONDecoder().decode(CreateDevice.self, from: Data(request.body)) else {
                return .json(400, #"{"error":"expected {\"platform\": \"apns|fcm|gcm|wns|browser|hms|unifiedpush\"}"}"#)
            }
            if body.platform == .unifiedpush, body.vapid == true {
                return encode(201, await sandbox.createUnifiedPushDevice(vapid: true))
            }
            if let count = body.count {
                guard (1...1_000_000).contains(count) else { return .json(400, #"{"error":"count must be 1…1000000"}"#) }
                var devices: [SandboxDevice] = []
                devices.reserveCapacity(count)
                for _ in 0..<count {
                    devices.append(await sandbox.createDevice(body.platform, belongsToAnotherApp: body.anotherApp ?? false))
                }
                return encode(201, devices)
            }
            return encode(201, await sandbox.createDevice(body.platform, belongsToAnotherApp: body.anotherApp ?? false))
        case ("GET", 1, "devices"):
            return encode(200, await state.allDevices())
        case ("GET", 2, "devices"):
            guard let device = await state.device(id: parts[1]) else { return notFound(parts[1]) }
            return encode(200, device)
        case ("GET", 3, "devices") where parts[2] == "inbox":
            guard await state.device(id: parts[1]) != nil else { return notFound(parts[1]) }
            return encode(200, await state.inbox(deviceID: parts[1]))
        case ("POST", 3, "devices"):
            let id = parts[1]
            let updated: SandboxDevice?
            switch parts[2] {
            case "uninstall": updated = await state.setStatus(.uninstalled, deviceID: id)
            case "expire": updated = await state.setStatus(.expired, deviceID: id)
            case "reinstall": updated = await state.setStatus(.active, deviceID: id)
            case "canonical":
                let requested = (try? JSONDecoder().decode(Canonical.self, from: Data(request.body)))?.handle
                updated = await state.setCanonicalHandle(
                    requested ?? SandboxCredentials.randomToken(22) + ":APA91b" + SandboxCredentials.randomToken(134), deviceID: id)
            default: return .json(404, #"{"error":"unknown action '\#(parts[2])'"}"#)
            }
            guard let updated else { return notFound(id) }
            return encode(200, updated)
        case ("POST", 1, "faults"):
            guard let fault = try? JSONDecoder().decode(SandboxFault.self, from: Data(request.body)) else {
                return .json(
                    400,
                    #"{"error":"expected a fault, e.g. {\"service\":\"apns\",\"count\":1,\"action\":{\"respond\":{\"status\":503,\"reason\":\"ServiceUnavailable\",\"retryAfterSeconds\":1}}}"}"#
                )
            }
            await state.addFault(fault)
            return encode(201, fault)
        case ("DELETE", 1, "faults"):
            await state.clearFaults()
            return .json(200, #"{"status":"cleared"}"#)
        case ("POST", 2, "tokens") where parts[1] == "revoke":
            await state.revokeAccessTokens()
            return .json(200, #"{"status":"revoked"}"#)
        case ("GET", 1, "stats"):
            return encode(200, await state.answeredCounts())
        case ("GET", 2, "stats") where parts[1] == "inboxes":
            return encode(200, await state.inboxHistogram())
        default:
            return .json(404, #"{"error":"no route \#(request.method) \#(request.path)"}"#)
        }
    }

    func notFound(_ id: String) -> SandboxHTTPResponse {
        .json(404, #"{"error":"no device '\#(id)'"}"#)
    }

    private func encode(_ status: Int, _ value: some Encodable) -> SandboxHTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return .json(500, #"{"error":"encoding failed"}"#) }
        return .json(status, String(decoding: data, as: UTF8.self))
    }
}
