import Crypto
import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateXML
import Synchronization

extension Sends {
    /// A send through the Notification Hubs API (`POST /{hub}/messages`).
    public struct HubSendRequest: Sendable {
        /// `ServiceBusNotification-Format`.
        public var format: String?
        public var body: [UInt8]
        /// Request headers, for the platform's pass-through headers (`apns-*`, `X-WNS-*`).
        public var headers: [(name: String, value: String)]
        /// `ServiceBusNotification-Tags`: a tag or tag expression; nil broadcasts.
        public var tags: String?
        /// `ServiceBusNotification-DeviceHandle` with `?direct`, or the handles of a `$batch`.
        public var directHandles: [String]?
        /// Where the direct handles came from, for errors: a `$batch`'s are `devices[i]`.
        public var directHandlesField = "ServiceBusNotification-DeviceHandle"
        /// The rule that signed the request (recorded as the sender).
        public var sender: String

        public init(
            format: String?, body: [UInt8], headers: [(name: String, value: String)], tags: String?, directHandles: [String]?,
            sender: String
        ) {
            self.format = format
            self.body = body
            self.headers = headers
            self.tags = tags
            self.directHandles = directHandles
            self.sender = sender
        }
    }

    /// Validates a hub send and builds its payloads: a native body is sent as it is, after the
    /// service's checks; a template body is a JSON object of properties, rendered per registration
    /// when delivered.
    public func prepareHub(_ request: HubSendRequest) throws(GatewayError) -> PreparedSend {
        guard let format = request.format?.trimmingCharacters(in: .whitespaces), !format.isEmpty else {
            throw .badRequest("ServiceBusNotification-Format is required: apple, gcm, fcmv1, windows, browser or template")
        }
        let platform: Platform?
        switch format.lowercased() {
        case "apple": platform = .apns
        case "gcm": platform = .gcm
        case "fcmv1": platform = .fcm
        case "windows": platform = .wns
        case "browser": platform = .browser
        case "template": platform = nil
        case "windowsphone":
            throw .badRequest("ServiceBusNotification-Format: windowsphone (MPNS) is retired by Microsoft; use windows (WNS)")
        case "adm", "baidu", "xiaomi":
            throw .badRequest(
                "ServiceBusNotification-Format: \(format) is not supported; use apple, gcm, fcmv1, windows, browser or template")
        default:
            throw .badRequest(
                "ServiceBusNotification-Format: '\(format.prefix(40))' is unknown; use apple, gcm, fcmv1, windows, browser or template")
        }
        let audience: Audience
        if let handles = request.directHandles {
            guard let platform else {
                throw .badRequest("a direct send takes a native format (apple, gcm, fcmv1, windows, browser), not template")
            }
            guard !handles.isEmpty, handles.count <= Audience.maximumDirectHandles else {
                throw .badRequest("a direct send takes 1 to \(Audience.maximumDirectHandles) device handles, not \(handles.count)")
            }
            var checked: [DeviceHandle] = []
            for (index, text) in handles.enumerated() {
                do { checked.append(try app.configuration.handles.validate(text, for: platform)) } catch {
                    let field = handles.count > 1 ? "\(request.directHandlesField)[\(index)]" : request.directHandlesField
                    throw .badRequest("\(field): \(error.description)")
                }
            }
            audience = .direct(handles: checked)
        } else if let given = request.tags {
            // Only an absent header means everyone (as Notification Hubs documents it): a blank one
            // is a mistake, never a broadcast.
            let text = given.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else {
                throw .badRequest(
                    "ServiceBusNotification-Tags is present but blank; give a tag or tag expression, or omit the header to send to every registration"
                )
            }
            do { audience = .tags(try TagExpression(parsing: text)) } catch {
                throw .badRequest("ServiceBusNotification-Tags: \(error.description)")
            }
        } else {
            audience = .everyone
        }
        let direct = request.directHandles != nil
        guard let platform else {
            let properties = try HubPayloads.hubTemplateProperties(request.body)
            return PreparedSend(
                selection: PlatformSelection(Platform.allCases), audience: audience, payloads: [:], sender: request.sender,
                delivery: .templates(properties))
        }
        let payload = try HubPayloads.nativePayload(platform: platform, body: request.body, headers: request.headers)
        return PreparedSend(
            selection: PlatformSelection([platform]), audience: audience, payloads: [platform: payload], sender: request.sender,
            delivery: direct ? .allRegistrations : .nativeRegistrations)
    }
}

/// A hub send's payloads as the services take them: the native body checked, the headers that
/// pass through, a template send's properties.
public enum HubPayloads {
    /// Whether a hub send's request header named `name` goes on to `platform`'s service with a
    /// native body: APNs' `apns-*`, WNS' `X-WNS-*`, Web Push's `TTL`, `Urgency` and `Topic` (as
    /// Notification Hubs' SDKs send them beside the body). The one list of them: what a native
    /// send passes, and what an idempotent hub send's fingerprint covers.
    package static func passesThrough(_ name: String, to platform: Platform) -> Bool {
        let name = name.lowercased()
        return switch platform {
        case .apns: name.hasPrefix("apns-")
        case .wns: name.hasPrefix("x-wns-")
        case .browser: ["ttl", "urgency", "topic"].contains(name)
        case .fcm, .gcm: false
        }
    }

    /// A native body checked as its service would: JSON for APNs and Google, XML (or raw) for
    /// WNS, its headers, and its size. FCM v1's `{"message": {…}}` is unwrapped (the gateway
    /// sets the token).
    package static func nativePayload(
        platform: Platform, body: [UInt8], headers: [(name: String, value: String)]
    ) throws(GatewayError) -> RenderedNotification {
        guard let text = String(validating: body, as: UTF8.self) else { throw .badRequest("body: not valid UTF-8") }
        var bodyText = text
        var passed: [(String, String)] = []
        switch platform {
        case .apns:
            passed = headers.filter { passesThrough($0.name, to: .apns) }.map { ($0.name.lowercased(), $0.value) }
        case .wns:
            passed = headers.filter { passesThrough($0.name, to: .wns) }.map { ($0.name, $0.value) }
            guard passed.contains(where: { $0.0.lowercased() == "x-wns-type" }) else {
                throw .badRequest("X-WNS-Type is required for windows: wns/toast, wns/tile, wns/badge or wns/raw")
            }
        case .fcm:
            let root: JSONValue
            do { root = try JSONParser.parse(body) } catch { throw .badRequest("body: \(error.description)") }
            guard let message = root["message"], message.objectMembers != nil else {
                throw .badRequest(#"body: an fcmv1 notification is {"message": {…}} (FCM v1's message without a token)"#)
            }
            if let members = message.objectMembers, let target = members.first(where: { ["token", "topic", "condition"].contains($0.key) })
            {
                throw .badRequest("body: $.message.\(target.key): the hub sets the message target; remove it")
            }
            bodyText = String(decoding: message.serialized(), as: UTF8.self)
        case .gcm:
            break
        case .browser:
            passed = headers.filter { passesThrough($0.name, to: .browser) }.map { ($0.name, $0.value) }
        }
        let format = Template.Format.resolved(for: platform, headers: passed, body: bodyText)
        let checked: PlatformTemplate
        do {
            checked = try PlatformTemplate(platform: platform, template: try Template(format: format, text: bodyText), headers: passed)
        } catch {
            throw .badRequest("\(platform == .wns ? "windows" : platform.notificationHubsName) notification: \(error.description)")
        }
        let bytes = Array(bodyText.utf8)
        do { try PayloadLimit.check(size: bytes.count, platform: platform, apnsPushType: checked.header("apns-push-type")) } catch {
            throw GatewayError(.tooLarge, error.description)
        }
        return RenderedNotification(platform: platform, body: bytes, headers: checked.headers, contentType: checked.contentType)
    }

    /// A template send's body: a JSON object of properties (``TemplateProperties/BodyRules/anyProperties``).
    package static func hubTemplateProperties(_ body: [UInt8]) throws(GatewayError) -> TemplateProperties {
        do { return try TemplateProperties.parse(json: body, rules: .anyProperties) } catch {
            throw .badRequest("body: \(error.description)")
        }
    }

}
