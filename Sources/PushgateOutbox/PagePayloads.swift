import Pushgate
import PushgateDispatch
import PushgateXML

/// Which payload each target of a claimed page gets, as its notification's delivery says: the
/// driver resolves it before it hands the page to the dispatcher (``DispatchPage``).
///
/// Every registration gets its platform's payload (the tutorial API's sends); a hub native send
/// skips template registrations; a hub template send renders each template registration's own
/// template (once per distinct template in the page, compiled once per text in the server's
/// ``CompiledTemplates``) and skips native ones.
public struct PagePayloads: Sendable {
    /// Where template registrations' templates are read.
    public let registrations: any RegistrationStore
    public let app: AppID
    public let cache: CompiledTemplates

    public init(registrations: any RegistrationStore, app: AppID, cache: CompiledTemplates) {
        self.registrations = registrations
        self.app = app
        self.cache = cache
    }

    /// `targets` grouped by payload, with the targets the notification does not reach answered.
    /// A store failure reading the templates answers the page `Abandoned` (nothing was sent: a
    /// durable outbox's next claim of the page sends it).
    public func page(
        _ targets: [DispatchTarget], delivery: NotificationDelivery, payloads: [Platform: RenderedNotification],
        answered: [DeliveryReport] = []
    ) async -> DispatchPage {
        let properties: TemplateProperties?
        switch delivery {
        case .allRegistrations: return DispatchPage(groups: [.init(targets: targets, payloads: payloads)], answered: answered)
        case .nativeRegistrations: properties = nil
        case .templates(let given): properties = given
        }
        let templates: [RegistrationID: RegistrationTemplate]
        do { templates = try await registrations.templates(of: targets.map(\.registrationID), app: app) } catch {
            return DispatchPage(groups: [], answered: answered + targets.map { Self.report($0, .abandoned, "the store failed: \(error)") })
        }
        var ignored = answered
        guard let properties else {
            var native: [DispatchTarget] = []
            for target in targets {
                if templates[target.registrationID] != nil {
                    ignored.append(Self.report(target, .skipped, "a template registration: native notifications do not reach it"))
                } else {
                    native.append(target)
                }
            }
            return DispatchPage(groups: native.isEmpty ? [] : [.init(targets: native, payloads: payloads)], answered: ignored)
        }
        var order: [RegistrationTemplate] = []
        var byTemplate: [RegistrationTemplate: [DispatchTarget]] = [:]
        for target in targets {
            guard let template = templates[target.registrationID] else {
                ignored.append(Self.report(target, .skipped, "a native registration: template notifications do not reach it"))
                continue
            }
            if byTemplate[template] == nil { order.append(template) }
            byTemplate[template, default: []].append(target)
        }
        var groups: [DispatchPage.Group] = []
        for template in order {
            let targets = byTemplate[template] ?? []
            guard let platform = targets.first?.handle.platform else { continue }
            do {
                let rendered = try template.compiled(for: platform, cache: cache).render(properties)
                groups.append(.init(targets: targets, payloads: [platform: rendered]))
            } catch {
                ignored += targets.map { Self.report($0, .invalidNotificationFormat, "the template: \(error)") }
            }
        }
        return DispatchPage(groups: groups, answered: ignored)
    }

    static func report(_ target: DispatchTarget, _ outcome: Outcome, _ reason: String) -> DeliveryReport {
        DeliveryReport(target: target, verdict: DeliveryVerdict(outcome: outcome, reason: reason), attempts: 0, latencyMilliseconds: 0)
    }
}
