import Crypto
import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateXML
import Synchronization

extension Gateway {
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
        } else if let text = request.tags?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            do { audience = .tags(try TagExpression(parsing: text)) } catch {
                throw .badRequest("ServiceBusNotification-Tags: \(error.description)")
            }
        } else {
            audience = .everyone
        }
        let direct = request.directHandles != nil
        guard let platform else {
            let properties = try Self.hubTemplateProperties(request.body)
            return PreparedSend(
                selection: PlatformSelection(Platform.allCases), audience: audience, payloads: [:], sender: request.sender,
                delivery: .templates(properties))
        }
        let payload = try Self.nativePayload(platform: platform, body: request.body, headers: request.headers)
        return PreparedSend(
            selection: PlatformSelection([platform]), audience: audience, payloads: [platform: payload], sender: request.sender,
            delivery: direct ? .allRegistrations : .nativeRegistrations)
    }

    /// An FCM v1 template body as Notification Hubs takes it, `{"message": {…}}`, unwrapped to the
    /// message the gateway's FCM templates are (the gateway sets the token). Any other body is
    /// returned as it is, for the template compiler to judge.
    package static func unwrappedFCMTemplate(_ body: String) -> String {
        guard let root = try? JSONParser.parse(Array(body.utf8)), let members = root.objectMembers, members.count == 1,
            members[0].key == "message", members[0].value.objectMembers != nil
        else { return body }
        return String(decoding: members[0].value.serialized(), as: UTF8.self)
    }

    /// A stored FCM v1 template as Notification Hubs writes it back, `{"message": {…}}`: the
    /// inverse of ``unwrappedFCMTemplate(_:)``. A body already in that shape, or one that is not
    /// a JSON object, is returned as it is.
    package static func wrappedFCMTemplate(_ body: String) -> String {
        if let root = try? JSONParser.parse(Array(body.utf8)) {
            guard let members = root.objectMembers else { return body }
            if members.count == 1, members[0].key == "message", members[0].value.objectMembers != nil { return body }
            return #"{"message":"# + body + "}"
        }
        // A template with expressions is not JSON; only one that is not yet wrapped gets wrapped.
        let text = body.drop(while: \.isWhitespace)
        guard text.first == "{" else { return body }
        let afterBrace = text.dropFirst().drop(while: \.isWhitespace)
        if afterBrace.hasPrefix(#""message""#), afterBrace.dropFirst(9).drop(while: \.isWhitespace).first == ":" { return body }
        return #"{"message":"# + body + "}"
    }

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

    /// How a hub send's pages split by payload: a native send skips template registrations; a
    /// template send renders each template registration's own template (once per distinct
    /// template in the page) and skips native ones.
    package static func payloadGrouping(
        for delivery: NotificationDelivery, payloads: [Platform: RenderedNotification], store: any RegistrationStore, app: AppID
    ) -> PayloadGrouping? {
        if case .allRegistrations = delivery { return nil }
        return { batch in
            let templates: [RegistrationID: RegistrationTemplate]
            do { templates = try await store.templates(of: batch.map(\.registrationID), app: app) } catch {
                return PayloadGroups(
                    ignored: batch.map {
                        DeliveryReport(
                            target: $0, verdict: DeliveryVerdict(outcome: .abandoned, reason: "the store failed: \(error)"), attempts: 0,
                            latencyMilliseconds: 0)
                    })
            }
            func skip(_ target: DispatchTarget, _ reason: String) -> DeliveryReport {
                DeliveryReport(
                    target: target, verdict: DeliveryVerdict(outcome: .skipped, reason: reason), attempts: 0, latencyMilliseconds: 0)
            }
            switch delivery {
            case .allRegistrations:
                return PayloadGroups(groups: [(batch, payloads)])
            case .nativeRegistrations:
                var native: [DispatchTarget] = []
                var ignored: [DeliveryReport] = []
                for target in batch {
                    if templates[target.registrationID] != nil {
                        ignored.append(skip(target, "a template registration: native notifications do not reach it"))
                    } else {
                        native.append(target)
                    }
                }
                return PayloadGroups(groups: native.isEmpty ? [] : [(native, payloads)], ignored: ignored)
            case .templates(let properties):
                var order: [RegistrationTemplate] = []
                var byTemplate: [RegistrationTemplate: [DispatchTarget]] = [:]
                var ignored: [DeliveryReport] = []
                for target in batch {
                    guard let template = templates[target.registrationID] else {
                        ignored.append(skip(target, "a native registration: template notifications do not reach it"))
                        continue
                    }
                    if byTemplate[template] == nil { order.append(template) }
                    byTemplate[template, default: []].append(target)
                }
                var groups: [(targets: [DispatchTarget], payloads: [Platform: RenderedNotification])] = []
                for template in order {
                    let targets = byTemplate[template] ?? []
                    guard let platform = targets.first?.handle.platform else { continue }
                    do {
                        let rendered = try Self.compile(template, platform: platform).render(properties)
                        groups.append((targets, [platform: rendered]))
                    } catch {
                        ignored += targets.map {
                            DeliveryReport(
                                target: $0,
                                verdict: DeliveryVerdict(outcome: .invalidNotificationFormat, reason: "the template: \(error)"),
                                attempts: 0, latencyMilliseconds: 0)
                        }
                    }
                }
                return PayloadGroups(groups: groups, ignored: ignored)
            }
        }
    }

    /// A registration's template compiled for its platform (checked as an app template is),
    /// compiled once per text: a template send renders the same few templates for every page of
    /// every send (``CompiledTemplates``).
    package static func compile(_ template: RegistrationTemplate, platform: Platform) throws(TemplateError) -> PlatformTemplate {
        let key = CompiledTemplates.Key(platform: platform, body: template.body, headers: template.headers)
        if let compiled = compiledTemplates.get(key) { return compiled }
        let headers = template.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let format = Template.Format.resolved(for: platform, headers: headers, body: template.body)
        let compiled = try PlatformTemplate(
            platform: platform, template: try Template(format: format, text: template.body), headers: headers)
        compiledTemplates.put(key, compiled)
        return compiled
    }

    /// The registrations' templates compiled so far (compiling is a pure function of the text).
    package static let compiledTemplates = CompiledTemplates(capacity: 4096)
}

/// Compiled registration templates by their text, at most `capacity` of them (when full, the
/// table starts over: templates are few and shared by many registrations, so it refills with
/// the ones in use).
package final class CompiledTemplates: Sendable {
    package struct Key: Hashable, Sendable {
        var platform: Platform
        var body: String
        var headers: [String: String]
    }

    private let table = Mutex<[Key: PlatformTemplate]>([:])
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    package func get(_ key: Key) -> PlatformTemplate? { table.withLock { $0[key] } }

    package func put(_ key: Key, _ compiled: PlatformTemplate) {
        table.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[key] = compiled
        }
    }

    package var count: Int { table.withLock { $0.count } }

    package func contains(platform: Platform, body: String, headers: [String: String]) -> Bool {
        get(Key(platform: platform, body: body, headers: headers)) != nil
    }
}

/// The ETag of a registration: an integer, as Notification Hubs writes it, taken from a digest of
/// what the registration holds, so that it changes with every update that changes something
/// (NH counts updates from 1; clients only compare ETags for equality, in `If-Match`).
public func registrationETag(_ registration: Registration) -> String {
    var text =
        "\(registration.platform.rawValue)\n\(registration.handle.value)\n\(registration.tags.map(\.rawValue).joined(separator: ","))\n"
    text += "\(registration.expiresAt?.secondsSinceEpoch ?? 0)\n"
    if let template = registration.template {
        text += "\(template.name ?? "")\n\(template.body)\n"
        for (name, value) in template.headers.sorted(by: { $0.key < $1.key }) { text += "\(name):\(value)\n" }
    }
    let digest = SHA256.hash(data: Data(text.utf8))
    // 6 bytes: at most 2^48, exact in a JSON number or a double.
    return String(digest.prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
}
