import Crypto
import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateXML
import Synchronization

/// Registration templates (the hub API's template registrations and installations' templates):
/// compiled once per text, and how a hub send's pages split by payload.
public enum HubTemplates {
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

    /// How a hub send's pages split by payload: a native send skips template registrations; a
    /// template send renders each template registration's own template (once per distinct
    /// template in the page) and skips native ones.
    package static func payloadGrouping(
        for delivery: NotificationDelivery, payloads: [Platform: RenderedNotification], store: any RegistrationStore, app: AppID,
        cache: CompiledTemplates
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
                        let rendered = try Self.compile(template, platform: platform, cache: cache).render(properties)
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

    /// A registration's template compiled for its platform (checked as an app template is); with
    /// a `cache`, compiled once per text: a template send renders the same few templates for every
    /// page of every send (``CompiledTemplates``, one per server: ``Gateway/Shared``).
    package static func compile(
        _ template: RegistrationTemplate, platform: Platform, cache: CompiledTemplates? = nil
    ) throws(TemplateError) -> PlatformTemplate {
        let key = CompiledTemplates.Key(platform: platform, body: template.body, headers: template.headers)
        if let compiled = cache?.get(key) { return compiled }
        let headers = template.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let format = Template.Format.resolved(for: platform, headers: headers, body: template.body)
        let compiled = try PlatformTemplate(
            platform: platform, template: try Template(format: format, text: template.body), headers: headers)
        cache?.put(key, compiled)
        return compiled
    }
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

    package init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

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
