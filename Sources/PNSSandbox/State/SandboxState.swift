import Foundation
import Pushgate

/// Everything the sandbox remembers: devices and their inboxes, scripted faults, issued access
/// tokens and provider-token verdicts. One actor, so concurrent requests never race.
public actor SandboxState {
    private var devices: [String: SandboxDevice] = [:]
    private var deviceByHandle: [String: String] = [:]
    private var inboxes: [String: [ReceivedNotification]] = [:]
    private var faults: [SandboxFault] = []
    private var nextDeviceNumber = 1

    /// APNs provider tokens already judged, and the verdict (nil = accepted).
    private var providerTokenVerdicts: [String: String?] = [:]
    /// The `iat` of the newest accepted provider token per key id.
    private var newestProviderTokenIssuedAt: [String: Double] = [:]
    /// OAuth access tokens issued, with their expiry (epoch seconds), per service.
    private var accessTokens: [String: Double] = [:]

    /// Counts of requests answered per service and status, for tests and the control API.
    private(set) var answered: [String: Int] = [:]

    let clock: any PushgateClock

    init(clock: any PushgateClock) { self.clock = clock }

    // MARK: Devices

    /// Registers a device with `handle` on `platform`.
    func addDevice(platform: Platform, handle: String, belongsToAnotherApp: Bool = false) -> SandboxDevice {
        let id = "\(platform.rawValue)-\(nextDeviceNumber)"
        nextDeviceNumber += 1
        let device = SandboxDevice(
            id: id, platform: platform, handle: handle, status: .active, goneAtMilliseconds: nil, canonicalHandle: nil,
            belongsToAnotherApp: belongsToAnotherApp)
        devices[id] = device
        deviceByHandle[handle] = id
        inboxes[id] = []
        return device
    }

    public func device(id: String) -> SandboxDevice? { devices[id] }

    public func device(handle: String) -> SandboxDevice? { deviceByHandle[handle].flatMap { devices[$0] } }

    public func allDevices() -> [SandboxDevice] { devices.values.sorted { $0.id < $1.id } }

    /// Marks a device uninstalled (or expired): the service answers "gone" from now on.
    @discardableResult
    public func setStatus(_ status: SandboxDevice.Status, deviceID: String) -> SandboxDevice? {
        guard var device = devices[deviceID] else { return nil }
        device.status = status
        device.goneAtMilliseconds = status == .active ? nil : Int64(clock.now.secondsSinceEpoch * 1000)
        devices[deviceID] = device
        return device
    }

    /// Legacy GCM: answers future sends to this device with a canonical `registration_id`.
    @discardableResult
    public func setCanonicalHandle(_ canonical: String?, deviceID: String) -> SandboxDevice? {
        guard var device = devices[deviceID] else { return nil }
        device.canonicalHandle = canonical
        devices[deviceID] = device
        if let canonical { deviceByHandle[canonical] = deviceID }
        return device
    }

    /// What the device received, oldest first.
    public func inbox(deviceID: String) -> [ReceivedNotification] { inboxes[deviceID] ?? [] }

    /// Every notification received on `platform`, per device.
    public func receivedCount(platform: Platform? = nil) -> Int {
        inboxes.reduce(0) { total, entry in
            total + (platform == nil || devices[entry.key]?.platform == platform ? entry.value.count : 0)
        }
    }

    /// How many devices hold how many notifications: `{"1": 99998, "2": 2}` (keys are counts),
    /// and the total under `"total"`. How a test counts duplicates across a whole audience.
    public func inboxHistogram() -> [String: Int] {
        var histogram: [String: Int] = ["total": 0]
        for inbox in inboxes.values where !inbox.isEmpty {
            histogram[String(inbox.count), default: 0] += 1
            histogram["total", default: 0] += inbox.count
        }
        return histogram
    }

    func deliver(_ notification: ReceivedNotification) {
        inboxes[notification.deviceID, default: []].append(notification)
    }

    // MARK: Faults

    public func addFault(_ fault: SandboxFault) {
        guard fault.count > 0 else { return }
        faults.append(fault)
    }

    public func clearFaults() { faults.removeAll() }

    /// Takes one use of the first fault matching `service` and `handle`.
    func takeFault(service: SandboxFault.Service, handle: String?) -> SandboxFault.Action? {
        guard
            let index = faults.firstIndex(where: { fault in
                fault.service == service && (fault.handle == nil || fault.handle == handle)
            })
        else { return nil }
        let action = faults[index].action
        faults[index].count -= 1
        if faults[index].count <= 0 { faults.remove(at: index) }
        return action
    }

    // MARK: Tokens

    func providerTokenVerdict(_ token: String) -> String?? { providerTokenVerdicts[token] }

    func recordProviderTokenVerdict(_ token: String, verdict: String?) {
        providerTokenVerdicts[token] = verdict
    }

    /// Accepts a valid provider token issued at `issuedAt` for `keyID` on `connection`, unless the
    /// connection used an older token and this one comes sooner than `minimumInterval` after it
    /// (APNs `TooManyProviderTokenUpdates`). Tokens of the same age or older are accepted.
    func acceptProviderToken(keyID: String, connection: UInt64, issuedAt: Double, minimumInterval: Double) -> Bool {
        let key = "\(keyID)/\(connection)"
        if let previous = newestProviderTokenIssuedAt[key], issuedAt > previous, issuedAt - previous < minimumInterval {
            return false
        }
        newestProviderTokenIssuedAt[key] = max(issuedAt, newestProviderTokenIssuedAt[key] ?? issuedAt)
        return true
    }

    func issueAccessToken(prefix: String, lifetime: Double) -> String {
        let token = prefix + SandboxCredentials.randomToken(64)
        accessTokens[token] = clock.now.secondsSinceEpoch + lifetime
        return token
    }

    /// Whether `token` was issued here and has not expired.
    func isAccessTokenValid(_ token: String) -> Bool {
        guard let expiry = accessTokens[token] else { return false }
        return clock.now.secondsSinceEpoch < expiry
    }

    /// Forgets every access token (forces the gateway to refresh).
    public func revokeAccessTokens() { accessTokens.removeAll() }

    func count(_ service: String, status: Int) {
        answered["\(service) \(status)", default: 0] += 1
    }

    /// Requests answered so far, by `"<service> <status>"`.
    public func answeredCounts() -> [String: Int] { answered }
}
