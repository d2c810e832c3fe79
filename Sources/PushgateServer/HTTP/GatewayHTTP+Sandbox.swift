import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateDispatch
import PushgateGateway
import PushgateXML

extension GatewayHTTP {
    /// `/api/sandbox/devices…`: the sandbox's devices and inboxes, for the console. A user sees
    /// and acts on only the devices whose handles their own registrations hold (an admin: all);
    /// any other device id answers 404, as if it did not exist.
    static func addSandboxRoutes(to api: RouteCollection<GatewayContext>, _ sandbox: SandboxBridge, gateway: Gateway) {
        api.get("sandbox/devices") { _, context in
            let user = try context.authenticatedUser()
            let answer = await sandbox.forward("GET", "/devices")
            guard answer.status == 200, !user.isAdmin else { return forwarded(answer) }
            let own = try await ownHandles(gateway, user: user)
            let devices = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String: Any]] ?? []
            let kept = devices.filter { ($0["handle"] as? String).map(own.contains) ?? false }
            let data = (try? JSONSerialization.data(withJSONObject: kept, options: [.sortedKeys])) ?? Data("[]".utf8)
            return json(200, String(decoding: data, as: UTF8.self))
        }
        api.post("sandbox/devices") { request, _ in
            let body = try await collectJSON(request, limit: 1024)
            guard let platform = (try? JSONParser.parse(body))?["platform"]?.stringValue, Platform(rawValue: platform) != nil else {
                let platforms = Platform.allCases.map(\.rawValue).joined(separator: "|")
                throw GatewayError.badRequest(#"body must be {"platform": "\#(platforms)"}"#)
            }
            return forwarded(await sandbox.forward("POST", "/devices", body: Array(#"{"platform":"\#(platform)"}"#.utf8)))
        }
        api.get("sandbox/devices/:id/inbox") { _, context in
            let id = context.parameters.get("id") ?? ""
            guard SandboxBridge.isDeviceID(id) else { throw GatewayError.badRequest("'\(id)' is not a sandbox device id") }
            try await checkOwnDevice(id, sandbox: sandbox, gateway: gateway, user: try context.authenticatedUser())
            return forwarded(await sandbox.forward("GET", "/devices/\(id)/inbox"))
        }
        api.post("sandbox/devices/:id/:action") { _, context in
            let id = context.parameters.get("id") ?? ""
            let action = context.parameters.get("action") ?? ""
            guard SandboxBridge.isDeviceID(id) else { throw GatewayError.badRequest("'\(id)' is not a sandbox device id") }
            guard SandboxBridge.actions.contains(action) else {
                throw GatewayError.notFound("no device action '\(action)' (\(SandboxBridge.actions.sorted().joined(separator: ", ")))")
            }
            try await checkOwnDevice(id, sandbox: sandbox, gateway: gateway, user: try context.authenticatedUser())
            return forwarded(await sandbox.forward("POST", "/devices/\(id)/\(action)"))
        }
    }

    /// The handles `user`'s registrations hold (at most the 1000 a listing returns).
    static func ownHandles(_ gateway: Gateway, user: AuthenticatedUser) async throws(GatewayError) -> Set<String> {
        Set(try await gateway.registrations.list(user: user, tagExpression: nil, limit: 1000).map(\.handle.value))
    }

    /// Throws 404 unless the sandbox device `id` is one of `user`'s (an admin's: any).
    static func checkOwnDevice(_ id: String, sandbox: SandboxBridge, gateway: Gateway, user: AuthenticatedUser) async throws {
        guard !user.isAdmin else { return }
        let answer = await sandbox.forward("GET", "/devices/\(id)")
        let handle = answer.status == 200 ? (try? JSONParser.parse(Array(answer.body.utf8)))?["handle"]?.stringValue : nil
        guard let handle, try await ownHandles(gateway, user: user).contains(handle) else {
            throw GatewayError.notFound("no sandbox device '\(id)' among your registrations")
        }
    }
}
