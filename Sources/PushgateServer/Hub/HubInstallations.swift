import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Pushgate
import PushgateGateway

/// Notification Hubs installations (JSON): one device with its tags and named templates, kept as
/// registrations: a native one, and one per template, all carrying `$InstallationId:{id}` (and
/// `$UserId:{userId}`), so that sends to those tags reach it.
package enum HubInstallations {
    typealias Installation = PushgateGateway.Installation
    typealias InstallationTemplate = PushgateGateway.InstallationTemplate

    static let platforms = Dictionary(uniqueKeysWithValues: Platform.hubPlatforms.map { ($0.notificationHubs.installation, $0) })

    /// A browser installation's `pushChannel`, `{"endpoint", "p256dh", "auth"}`, as the
    /// subscription JSON the core reads as a browser's handle.
    static func browserChannel(_ value: JSONValue, field: String) throws(GatewayError) -> String {
        guard value.objectMembers != nil, let endpoint = value["endpoint"]?.stringValue, let p256dh = value["p256dh"]?.stringValue,
            let auth = value["auth"]?.stringValue
        else {
            throw .badRequest("body: \"\(field)\" of a browser installation is {\"endpoint\", \"p256dh\", \"auth\"}, each a string")
        }
        return WebPushSubscription.json(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    /// A browser's handle as an installation's `pushChannel` object.
    static func browserChannelObject(_ handle: String) -> [String: Any] {
        guard let subscription = WebPushSubscription(handleValue: handle) else { return [:] }
        return [
            "endpoint": subscription.endpoint, "p256dh": Base64URL.encode(subscription.p256dh), "auth": Base64URL.encode(subscription.auth),
        ]
    }
    /// Templates one installation may hold (each is a registration).
    static let maximumTemplates = 100

    static func addRoutes(
        route: (
            HTTPRequest.Method, RouterPath, AccessRight,
            @escaping @Sendable (Request, HubHTTP.HubCall) async throws -> any ResponseGenerator
        )
            -> Void,
        maximumBodyBytes limit: Int
    ) {
        route(.put, "installations/:id", .listen) { try await put($0, call: $1, limit: limit) }
        route(.patch, "installations/:id", .listen) { try await patch($0, call: $1, limit: limit) }
        route(.get, "installations/:id", .listen) { try await get($0, call: $1) }
        route(.delete, "installations/:id", .listen) { try await delete($0, call: $1) }
    }

    /// `PUT /{hub}/installations/{id}`: the whole installation.
    static func put(_ request: Request, call: HubHTTP.HubCall, limit: Int) async throws(GatewayError) -> EmptyAnswer {
        try HubHTTP.requireContentType(request, "json", "an installation as JSON (application/json)")
        let id = try installationID(call.parameter("id"))
        let installation = try parse(try await HubHTTP.body(request, limit: limit), id: id)
        try await call.gateway.installations.write(installation, writer: call.writer, client: call.client)
        return EmptyAnswer(.ok)
    }

    /// `PATCH /{hub}/installations/{id}`: a JSON Patch of it.
    static func patch(_ request: Request, call: HubHTTP.HubCall, limit: Int) async throws(GatewayError) -> EmptyAnswer {
        try HubHTTP.requireContentType(request, "json", "a JSON Patch (application/json-patch+json)")
        let id = try installationID(call.parameter("id"))
        guard var installation = try await call.gateway.installations.read(id) else {
            throw GatewayError.notFound("no installation '\(id)'")
        }
        try patch(&installation, try await HubHTTP.body(request, limit: limit))
        try await call.gateway.installations.write(installation, writer: call.writer, client: call.client)
        return EmptyAnswer(.ok)
    }

    /// `GET /{hub}/installations/{id}` (masked for a Listen key).
    static func get(_ request: Request, call: HubHTTP.HubCall) async throws(GatewayError) -> JSONText {
        let id = try installationID(call.parameter("id"))
        guard let installation = try await call.gateway.installations.read(id) else {
            throw GatewayError.notFound("no installation '\(id)'")
        }
        return JSONText(String(decoding: encode(installation, masked: call.readsMasked), as: UTF8.self))
    }

    /// `DELETE /{hub}/installations/{id}`: 204 whether or not it existed, as NH answers (a delete
    /// is idempotent).
    static func delete(_ request: Request, call: HubHTTP.HubCall) async throws(GatewayError) -> EmptyAnswer {
        let id = try installationID(call.parameter("id"))
        try await call.gateway.installations.deleteInstallation(id, writer: call.writer)
        return EmptyAnswer(.noContent)
    }

    static func installationID(_ text: String) throws(GatewayError) -> String {
        guard (1...100).contains(text.count), text.allSatisfy({ Tag.isTagCharacter($0) || $0 == "=" }) else {
            throw .badRequest("installation id '\(text.prefix(60))' must be 1 to 100 letters, digits or _ @ # . : - =")
        }
        return text
    }

    /// The native registration's id, and each template's (``Installations/registrationID(of:template:)``).
    package static func registrationID(of installation: String, template: String? = nil) -> RegistrationID {
        Installations.registrationID(of: installation, template: template)
    }

    // MARK: JSON

    static func parse(_ bytes: [UInt8], id: String) throws(GatewayError) -> Installation {
        let root: JSONValue
        do { root = try JSONParser.parse(bytes) } catch { throw .badRequest("body: \(error.description)") }
        guard root.objectMembers != nil else { throw .badRequest("body: an installation is a JSON object") }
        return try installation(from: root, id: id)
    }

    static func installation(from root: JSONValue, id: String) throws(GatewayError) -> Installation {
        func string(_ key: String, required: Bool) throws(GatewayError) -> String? {
            guard let value = root[key], value.kind != .null else {
                if required { throw GatewayError.badRequest("body: \"\(key)\" is required") }
                return nil
            }
            guard let text = value.stringValue else { throw .badRequest("body: \"\(key)\" must be a string") }
            return text
        }
        if let given = try string("installationId", required: false), given != id {
            throw .badRequest("body: installationId '\(given.prefix(60))' differs from the URL's '\(id)'")
        }
        let platformText = try string("platform", required: true)!
        guard let platform = platforms[platformText.lowercased()] else {
            throw .badRequest(
                "body: platform '\(platformText.prefix(20))' is not supported; use \(Platform.hubPlatforms.map(\.notificationHubs.installation).joined(separator: ", "))"
            )
        }
        let channel =
            if platform == .browser, let value = root["pushChannel"], value.objectMembers != nil {
                try browserChannel(value, field: "pushChannel")
            } else {
                try string("pushChannel", required: true)!
            }
        let userID = try string("userId", required: false)
        if let userID, !(1...100).contains(userID.count) || !userID.allSatisfy({ Tag.isTagCharacter($0) || $0 == "=" }) {
            throw .badRequest("body: userId '\(userID.prefix(60))' must be 1 to 100 letters, digits or _ @ # . : - =")
        }
        let tags = try stringArray(root["tags"], field: "tags")
        var templates: [String: InstallationTemplate] = [:]
        if let value = root["templates"], value.kind != .null {
            guard let members = value.objectMembers else { throw .badRequest("body: \"templates\" must be an object of templates by name") }
            guard members.count <= maximumTemplates else {
                throw .badRequest("body: \"templates\" has \(members.count); an installation has at most \(maximumTemplates)")
            }
            for member in members { templates[member.key] = try template(member.value, name: member.key) }
        }
        var expiration: Timestamp?
        if let text = try string("expirationTime", required: false) {
            do { expiration = try RFC3339.parse(text) } catch { throw .badRequest("body: expirationTime: \(error.description)") }
        }
        return Installation(
            id: id, platform: platform, pushChannel: channel, userID: userID, tags: tags, templates: templates, expiration: expiration)
    }

    static func stringArray(_ value: JSONValue?, field: String) throws(GatewayError) -> [String] {
        guard let value, value.kind != .null else { return [] }
        guard let elements = value.arrayElements else { throw .badRequest("body: \"\(field)\" must be an array of strings") }
        var result: [String] = []
        for (index, element) in elements.enumerated() {
            guard let text = element.stringValue else { throw .badRequest("body: \"\(field)\"[\(index)] must be a string") }
            result.append(text)
        }
        return result
    }

    static func template(_ value: JSONValue, name: String) throws(GatewayError) -> InstallationTemplate {
        guard (1...100).contains(name.count), name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw .badRequest("body: template name '\(name.prefix(60))' must be 1 to 100 letters, digits, '-', '_' or '.'")
        }
        guard value.objectMembers != nil, let body = value["body"]?.stringValue else {
            throw .badRequest("body: templates.\(name) needs \"body\" (a string)")
        }
        var headers: [String: String] = [:]
        if let object = value["headers"], object.kind != .null {
            guard let members = object.objectMembers else { throw .badRequest("body: templates.\(name).headers must be an object") }
            for member in members {
                guard let text = member.value.stringValue else {
                    throw .badRequest("body: templates.\(name).headers.\(member.key) must be a string")
                }
                headers[member.key] = text
            }
        }
        return InstallationTemplate(
            body: body, headers: headers, tags: try stringArray(value["tags"], field: "templates.\(name).tags"),
            expiry: value["expiry"]?.stringValue)
    }

    /// The installation as NH's JSON; `masked`: its push channel's middle hidden and a browser's
    /// keys left out (a Listen key's read).
    static func encode(_ installation: Installation, masked: Bool = false) -> [UInt8] {
        let channel: Any =
            if masked {
                DeviceHandle.mask(
                    installation.platform == .browser
                        ? WebPushSubscription(handleValue: installation.pushChannel)?.endpoint ?? "" : installation.pushChannel)
            } else if installation.platform == .browser {
                browserChannelObject(installation.pushChannel)
            } else {
                installation.pushChannel
            }
        var object: [String: Any] = [
            "installationId": installation.id, "platform": installation.platform == .fcm ? "fcmV1" : installation.platform.rawValue,
            "pushChannel": channel,
            "pushChannelExpired": false, "tags": installation.tags,
            "expirationTime": installation.expiration.map(RFC3339.format) ?? HubRegistrationXML.never,
        ]
        if let userID = installation.userID { object["userId"] = userID }
        if !installation.templates.isEmpty {
            object["templates"] = installation.templates.mapValues { template -> [String: Any] in
                var entry: [String: Any] = ["body": template.body, "tags": template.tags]
                if !template.headers.isEmpty { entry["headers"] = template.headers }
                if let expiry = template.expiry { entry["expiry"] = expiry }
                return entry
            }
        }
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return Array(data)
    }
}

extension JSONParser {
    /// Parses bytes this process wrote.
    static func parseOrNull(_ bytes: [UInt8]) -> JSONValue { (try? parse(bytes)) ?? JSONValue(.null) }
}
