import Crypto
import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateXML
import Synchronization

/// `ServiceBusNotification-Format`, as Notification Hubs names it: a platform's native payload,
/// or a template send. The one table of the hub's format names, derived from ``Platform``
/// (``Platform/notificationHubsName``), read by the send's planning and its messages.
enum HubFormat: Equatable, Sendable {
    case native(Platform)
    case template

    /// The formats, natives in ``Platform``'s order and `template` last.
    static let all: [HubFormat] = Platform.hubPlatforms.map { .native($0) } + [.template]

    /// The format's name as clients send it (compared without case: the .NET SDK sends `fcmV1`).
    var name: String {
        switch self {
        case .native(let platform): platform.notificationHubsName.lowercased()
        case .template: "template"
        }
    }

    /// `apple, gcm, fcmv1, windows, browser or template`.
    static let names = all.dropLast().map(\.name).joined(separator: ", ") + " or " + all.last!.name
    /// The native formats' names: `apple, gcm, fcmv1, windows, browser`.
    static let nativeNames = all.dropLast().map(\.name).joined(separator: ", ")

    /// The format `text` names; throws the hub's refusal for a retired, unsupported or unknown one.
    init(parsing text: String?) throws(GatewayError) {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            throw .badRequest("ServiceBusNotification-Format is required: \(Self.names)")
        }
        let lowered = text.lowercased()
        if let format = Self.all.first(where: { $0.name == lowered }) {
            self = format
            return
        }
        switch lowered {
        case "windowsphone":
            throw .badRequest("ServiceBusNotification-Format: windowsphone (MPNS) is retired by Microsoft; use windows (WNS)")
        case "adm", "baidu", "xiaomi":
            throw .badRequest("ServiceBusNotification-Format: \(text) is not supported; use \(Self.names)")
        default:
            throw .badRequest("ServiceBusNotification-Format: '\(text.prefix(40))' is unknown; use \(Self.names)")
        }
    }
}

extension Sends {
    /// A send through the Notification Hubs API (`POST /{hub}/messages`) planned: a native body is
    /// sent as it is, after the service's checks; a template body is a JSON object of properties,
    /// rendered per registration when delivered.
    func prepareHub(
        _ command: SendCommand, format text: String?, body: [UInt8], headers: [SendCommand.Header]
    ) throws(GatewayError) -> PreparedSend {
        let format = try HubFormat(parsing: text)
        var platform: Platform?
        if case .native(let native) = format { platform = native }
        let audience = try audience(of: command, platform: platform)
        guard let platform else {
            let properties = try HubPayloads.hubTemplateProperties(body)
            return PreparedSend(
                selection: PlatformSelection(Platform.allCases), audience: audience, payloads: [:], sender: command.sender.name,
                delivery: .templates(properties))
        }
        var direct = false
        if case .devices = command.audience { direct = true }
        let payload = try HubPayloads.nativePayload(platform: platform, body: body, headers: headers.map { ($0.name, $0.value) })
        return PreparedSend(
            selection: PlatformSelection([platform]), audience: audience, payloads: [platform: payload], sender: command.sender.name,
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
        case .browser, .unifiedpush: ["ttl", "urgency", "topic"].contains(name)
        case .fcm, .gcm, .hms: false
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
        case .fcm, .hms:
            let root: JSONValue
            do { root = try JSONParser.parse(body) } catch { throw .badRequest("body: \(error.description)") }
            guard let message = root["message"], message.objectMembers != nil else {
                throw .badRequest(
                    #"body: an \#(platform.notificationHubsName) notification is {"message": {…}} (the service's message without a token)"#)
            }
            if let members = message.objectMembers, let target = members.first(where: { ["token", "topic", "condition"].contains($0.key) })
            {
                throw .badRequest("body: $.message.\(target.key): the hub sets the message target; remove it")
            }
            bodyText = String(decoding: message.serialized(), as: UTF8.self)
        case .gcm:
            break
        case .browser, .unifiedpush:
            passed = headers.filter { passesThrough($0.name, to: platform) }.map { ($0.name, $0.value) }
        }
        let format = Template.Format.resolved(for: platform, headers: passed, body: bodyText)
        let checked: PlatformTemplate
        do {
            checked = try PlatformTemplate(platform: platform, template: try Template(format: format, text: bodyText), headers: passed)
        } catch {
            throw .badRequest("\(HubFormat.native(platform).name) notification: \(error.description)")
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
