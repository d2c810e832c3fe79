import Crypto
import Foundation
import Pushgate
import Synchronization

/// A Notification Hubs installation: one device with its tags and named templates.
public struct Installation: Sendable, Equatable {
    public var id: String
    public var platform: Platform
    public var pushChannel: String
    public var userID: String?
    public var tags: [String]
    public var templates: [String: InstallationTemplate]
    public var expiration: Timestamp?

    /// (Seven parameters: the fields of Notification Hubs' installation, as its JSON names them.)
    public init(
        id: String, platform: Platform, pushChannel: String, userID: String? = nil, tags: [String] = [],
        templates: [String: InstallationTemplate] = [:], expiration: Timestamp? = nil
    ) {
        self.id = id
        self.platform = platform
        self.pushChannel = pushChannel
        self.userID = userID
        self.tags = tags
        self.templates = templates
        self.expiration = expiration
    }
}

/// One of an installation's named templates.
public struct InstallationTemplate: Sendable, Equatable {
    public var body: String
    public var headers: [String: String]
    public var tags: [String]
    public var expiry: String?

    public init(body: String, headers: [String: String] = [:], tags: [String] = [], expiry: String? = nil) {
        self.body = body
        self.headers = headers
        self.tags = tags
        self.expiry = expiry
    }
}

/// The hub API's installations, kept as registrations (the core's rules, outside HTTP): a native
/// registration and one per template, all carrying `$InstallationId:{id}` (and
/// `$UserId:{userId}`), so that sends to those tags reach it. Reading one gathers them back;
/// writing one validates everything, then writes them at once and removes templates it no
/// longer has, by the binding rules of ``writeInstallation(_:registrations:userID:writer:client:)``.
///
/// (About 30 members: the registration rules of the hub API — who may write what, `If-Match`,
/// bound installations — live here once, in `+Registrations`; splitting them would split the
/// binding rule, which both registrations and installations obey.)
public final class Installations: Sendable {
    let store: any RegistrationStore
    private let current: CurrentApp
    /// The tutorial API's registrations: the hub finds a handle's registrations as it does
    /// (``Registrations/ids(holding:)``).
    let tutorialRegistrations: Registrations
    let limits: LimitsConfiguration
    let clock: any PushgateClock
    /// How fast each client address reserves registration ids with each hub key
    /// (``reserveRegistrationID(rule:client:)``).
    let reservationRate: Mutex<TokenBuckets>
    /// How fast each client address creates registrations and installations with a device key
    /// (``admitCreation(writer:client:)``).
    let creationRate: Mutex<TokenBuckets>
    /// The hub's quota of active devices.
    let deviceQuota: Mutex<HubDeviceQuota>

    init(
        store: any RegistrationStore, app: CurrentApp, registrations: Registrations, limits: LimitsConfiguration,
        clock: any PushgateClock
    ) {
        self.store = store
        self.current = app
        self.tutorialRegistrations = registrations
        self.limits = limits
        self.clock = clock
        reservationRate = Mutex(
            TokenBuckets(ratePerSecond: Double(limits.hubReservationsPerSecond), burst: Double(limits.hubReservationBurst)))
        creationRate = Mutex(
            TokenBuckets(ratePerSecond: Double(limits.hubDeviceCreationsPerMinute) / 60, burst: Double(limits.hubDeviceCreationBurst)))
        deviceQuota = Mutex(HubDeviceQuota(maximum: limits.maximumHubDevices))
    }

    var appID: AppID { tutorialRegistrations.appID }
    package func now() -> Timestamp { clock.now }

    /// Admits the creation of a registration or installation through the hub API: within the
    /// hub's quota of active devices (`limits.maxHubDevices`: 403 naming the quota, as Notification
    /// Hubs answers its tiers' quotas), and, for a device key (the Listen key every copy of the app
    /// carries), within what one client address (`client`) may create
    /// (`limits.hubDeviceCreationsPerMinute`, burst `limits.hubDeviceCreationBurst`: 429 with
    /// `Retry-After`). Both are kept in this instance's memory.
    package func admitCreation(writer: HubWriter, client: String) async throws(GatewayError) {
        let time = now().secondsSinceEpoch
        if writer == .device, case .wait(let seconds) = creationRate.withLock({ $0.take(client, now: time) }) {
            throw GatewayError(
                .tooManyRequests,
                "this client creates registrations and installations with a Listen key at most \(limits.hubDeviceCreationsPerMinute) a minute "
                    + "(limits.hubDeviceCreationsPerMinute, burst \(limits.hubDeviceCreationBurst)); retry in \(seconds) s",
                retryAfterSeconds: seconds)
        }
        if deviceQuota.withLock({ $0.decide(now: time) }) == .count {
            let maximum = limits.maximumHubDevices
            let count = try await storeCall { () throws(StoreError) in try await store.registrationCount(app: appID, upTo: maximum) }
            deviceQuota.withLock { $0.counted(count, at: time) }
        }
        let admitted = deviceQuota.withLock { quota in
            guard quota.decide(now: time) != .refuse else { return false }
            quota.created()
            return true
        }
        guard admitted else {
            throw GatewayError(
                .forbidden,
                "QuotaExceeded: the hub has reached its quota of \(limits.maximumHubDevices) active devices (limits.maxHubDevices); delete registrations or installations first"
            )
        }
    }

    /// The native registration's id, and each template's: derived from the installation id.
    public static func registrationID(of installation: String, template: String? = nil) -> RegistrationID {
        let base = "inst-" + hex(installation, bytes: 16)
        return try! RegistrationID(template.map { base + "-" + hex($0, bytes: 6) } ?? base)
    }

    static func hex(_ text: String, bytes: Int) -> String {
        SHA256.hash(data: Data(text.utf8)).prefix(bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The tags every registration of `installation` carries.
    static func implicitTags(_ installation: Installation) -> [String] {
        ["$InstallationId:{\(installation.id)}"] + (installation.userID.map { ["$UserId:{\($0)}"] } ?? [])
    }

    /// The installation `id`, gathered from its registrations; nil when it has none.
    public func read(_ id: String) async throws(GatewayError) -> Installation? {
        let found = try await registrations(ofInstallation: id)
        guard let native = found.first(where: { $0.id == Self.registrationID(of: id) }) else { return nil }
        let userID = Self.boundUser(of: native)
        let own = native.tags.map(\.rawValue).filter { !$0.hasPrefix("$") }
        var templates: [String: InstallationTemplate] = [:]
        for registration in found where registration.id != native.id {
            guard let template = registration.template, let name = template.name else { continue }
            var headers = template.headers
            let expiry = headers.removeValue(forKey: "apns-expiration")
            templates[name] = InstallationTemplate(
                body: HubTemplates.written(template.body, for: native.platform), headers: headers,
                tags: registration.tags.map(\.rawValue).filter { !$0.hasPrefix("$") && !own.contains($0) }, expiry: expiry)
        }
        return Installation(
            id: id, platform: native.platform, pushChannel: native.handle.value, userID: userID, tags: own, templates: templates,
            expiration: native.expiresAt)
    }

    /// Validates everything (errors name the field: `pushChannel`, `tags`, `templates.<name>.body`
    /// …), then writes the native and template registrations at once and removes templates the
    /// installation no longer has.
    public func write(_ installation: Installation, writer: HubWriter, client: String) async throws(GatewayError) {
        let handle: DeviceHandle
        do { handle = try current.value.configuration.handles.validate(installation.pushChannel, for: installation.platform) } catch {
            throw .badRequest("pushChannel: \(error.description)")
        }
        let tags = try Self.hubTags(installation.tags, writer: writer, field: "tags")
        var implicitTags: [Tag] = []
        for text in Self.implicitTags(installation) {
            do { implicitTags.append(try Tag(text)) } catch { throw .badRequest(error.description) }
        }
        var registrations: [Registration] = []
        do {
            registrations.append(
                try Registration(
                    app: appID, id: Self.registrationID(of: installation.id), handle: handle, tags: tags + implicitTags,
                    expiresAt: installation.expiration, owner: .hub))
        } catch {
            throw .badRequest("tags: \(error.description)")
        }
        for (name, template) in installation.templates.sorted(by: { $0.key < $1.key }) {
            let own = try Self.hubTags(template.tags, writer: writer, field: "templates.\(name).tags")
            var headers = template.headers
            if let expiry = template.expiry { headers["apns-expiration"] = expiry }
            let body = HubTemplates.stored(template.body, for: installation.platform)
            let candidate = RegistrationTemplate(name: name, body: body, headers: headers)
            // The body alone first, so that an error names the field at fault.
            do { _ = try RegistrationTemplate(name: name, body: body).compiled(for: installation.platform) } catch {
                throw .badRequest("templates.\(name).body: \(error.description)")
            }
            do { _ = try candidate.compiled(for: installation.platform) } catch {
                throw .badRequest("templates.\(name).\(template.expiry == nil ? "headers" : "headers or expiry"): \(error.description)")
            }
            do {
                registrations.append(
                    try Registration(
                        app: appID, id: Self.registrationID(of: installation.id, template: name), handle: handle,
                        tags: tags + own + implicitTags, template: candidate, expiresAt: installation.expiration, owner: .hub))
            } catch {
                throw .badRequest("templates.\(name).tags: \(error.description)")
            }
        }
        try await writeInstallation(
            installation.id, registrations: registrations, userID: installation.userID, writer: writer, client: client)
    }
}
