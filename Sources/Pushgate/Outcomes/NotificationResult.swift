/// The unified answer to one send: a state, counts per platform and outcome, and one result per
/// targeted device, whatever the push services answered.
public struct NotificationResult: Sendable, Hashable, Codable {
    public var notificationID: String
    public var state: NotificationState
    public var platforms: [PlatformSummary]
    public var targets: [TargetResult]
    /// Set when the send stopped before every target was attempted (the store failed, or the
    /// gateway shut down): what happened, and that the counts cover only the targets reached.
    public var error: String?

    public init(notificationID: String, state: NotificationState, platforms: [PlatformSummary] = [], targets: [TargetResult] = []) {
        self.notificationID = notificationID
        self.state = state
        self.platforms = platforms
        self.targets = targets
    }

    /// Builds the result from per-target results, with one summary for each selected platform
    /// (platforms with no target get an empty summary) and the state derived from the outcomes.
    public init(notificationID: String, selection: PlatformSelection, targets: [TargetResult]) {
        var counts: [Platform: [Outcome: Int]] = [:]
        for target in targets { counts[target.platform, default: [:]][target.outcome, default: 0] += 1 }
        self.init(notificationID: notificationID, selection: selection, counts: counts, targets: targets)
    }

    /// Builds the result from outcome counts per platform (every target counted) and the per-target
    /// results kept for reporting (possibly fewer, for very large fan-outs).
    public init(notificationID: String, selection: PlatformSelection, counts: [Platform: [Outcome: Int]], targets: [TargetResult]) {
        let platforms = selection.platforms.map { PlatformSummary(platform: $0, counts: counts[$0] ?? [:]) }
        let total = platforms.reduce(0) { $0 + $1.total }
        let unreachable: Set<Outcome> = [.pnsUnreachable, .pnsUnavailable, .abandoned, .tokenProviderUnreachable]
        let unreachableCount = platforms.reduce(0) { sum, summary in
            sum + summary.counts.filter { unreachable.contains($0.key) }.reduce(0) { $0 + $1.value }
        }
        let state: NotificationState
        if total == 0 {
            state = .noTargetFound
        } else if unreachableCount == total {
            state = .abandoned
        } else {
            state = .completed
        }
        self.init(notificationID: notificationID, state: state, platforms: platforms, targets: targets)
    }

    /// Targets whose outcome is `Success` (all targets, also those not listed in `targets`).
    public var successCount: Int { platforms.reduce(0) { $0 + $1.successCount } }
    /// Targets with any other outcome.
    public var failureCount: Int { platforms.reduce(0) { $0 + $1.total } - successCount }
    /// Targets counted but not listed one by one.
    public var omittedTargetCount: Int { max(0, platforms.reduce(0) { $0 + $1.total } - targets.count) }

    enum CodingKeys: String, CodingKey {
        case notificationID = "notificationId", state, success, failure, platforms, targets, omittedTargets, error
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        notificationID = try container.decode(String.self, forKey: .notificationID)
        state = try container.decode(NotificationState.self, forKey: .state)
        platforms = try container.decode([PlatformSummary].self, forKey: .platforms)
        targets = try container.decode([TargetResult].self, forKey: .targets)
        error = try container.decodeIfPresent(String.self, forKey: .error)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(notificationID, forKey: .notificationID)
        try container.encode(state, forKey: .state)
        try container.encode(successCount, forKey: .success)
        try container.encode(failureCount, forKey: .failure)
        try container.encode(platforms, forKey: .platforms)
        try container.encode(targets, forKey: .targets)
        if omittedTargetCount > 0 { try container.encode(omittedTargetCount, forKey: .omittedTargets) }
        try container.encodeIfPresent(error, forKey: .error)
    }
}

/// Counts of each outcome on one platform.
public struct PlatformSummary: Sendable, Hashable, Codable {
    public var platform: Platform
    public var counts: [Outcome: Int]

    public init(platform: Platform, counts: [Outcome: Int] = [:]) {
        self.platform = platform
        self.counts = counts
    }

    public var total: Int { counts.values.reduce(0, +) }
    public var successCount: Int { counts[.success] ?? 0 }

    /// Counts sorted with `Success` first.
    public var sortedCounts: [(outcome: Outcome, count: Int)] {
        counts.sorted { $0.key < $1.key }.map { (outcome: $0.key, count: $0.value) }
    }

    enum CodingKeys: String, CodingKey { case platform, total, outcomes }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        platform = try container.decode(Platform.self, forKey: .platform)
        let raw = try container.decode([String: Int].self, forKey: .outcomes)
        counts = Dictionary(uniqueKeysWithValues: raw.map { (Outcome(rawValue: $0.key), $0.value) })
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(platform, forKey: .platform)
        try container.encode(total, forKey: .total)
        try container.encode(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }), forKey: .outcomes)
    }
}

/// What happened at one device.
public struct TargetResult: Sendable, Hashable, Codable {
    public var registrationID: RegistrationID
    public var platform: Platform
    /// The handle with its middle hidden (handles are credentials of a sort; never shown whole).
    public var maskedHandle: String
    public var outcome: Outcome
    /// The push service's HTTP status, when it answered.
    public var statusCode: Int?
    /// The service's reason or error code: APNs `reason`, FCM `errorCode`, GCM `error`, WNS
    /// `X-WNS-Status` / `X-WNS-Error-Description`, or the transport error.
    public var reason: String?
    /// The service's id for the message (`apns-id`, FCM `name`, GCM `message_id`, `X-WNS-Msg-ID`).
    public var serviceMessageID: String?
    public var attempts: Int
    /// Milliseconds from the first attempt to the final answer.
    public var latencyMilliseconds: Double
    /// What the gateway did to the stored handle because of the answer.
    public var handleAction: HandleAction?
    /// Answer headers the service asks for in problem reports (WNS `X-WNS-Debug-Trace`, `MS-CV`).
    public var diagnostics: [HTTPHeader]

    public init(
        registrationID: RegistrationID, platform: Platform, maskedHandle: String, outcome: Outcome,
        statusCode: Int? = nil, reason: String? = nil, serviceMessageID: String? = nil, attempts: Int = 1,
        latencyMilliseconds: Double = 0, handleAction: HandleAction? = nil, diagnostics: [HTTPHeader] = []
    ) {
        self.registrationID = registrationID
        self.platform = platform
        self.maskedHandle = maskedHandle
        self.outcome = outcome
        self.statusCode = statusCode
        self.reason = reason
        self.serviceMessageID = serviceMessageID
        self.attempts = attempts
        self.latencyMilliseconds = latencyMilliseconds
        self.handleAction = handleAction
        self.diagnostics = diagnostics
    }

    enum CodingKeys: String, CodingKey {
        case registrationID = "registrationId", platform, handle, outcome, statusCode, reason
        case serviceMessageID = "serviceMessageId", attempts, latencyMs, handleAction, diagnostics
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        registrationID = try container.decode(RegistrationID.self, forKey: .registrationID)
        platform = try container.decode(Platform.self, forKey: .platform)
        maskedHandle = try container.decode(String.self, forKey: .handle)
        outcome = try container.decode(Outcome.self, forKey: .outcome)
        statusCode = try container.decodeIfPresent(Int.self, forKey: .statusCode)
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
        serviceMessageID = try container.decodeIfPresent(String.self, forKey: .serviceMessageID)
        attempts = try container.decode(Int.self, forKey: .attempts)
        latencyMilliseconds = try container.decode(Double.self, forKey: .latencyMs)
        handleAction = try container.decodeIfPresent(HandleAction.self, forKey: .handleAction)
        diagnostics = try container.decodeIfPresent([HTTPHeader].self, forKey: .diagnostics) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(registrationID, forKey: .registrationID)
        try container.encode(platform, forKey: .platform)
        try container.encode(maskedHandle, forKey: .handle)
        try container.encode(outcome, forKey: .outcome)
        try container.encodeIfPresent(statusCode, forKey: .statusCode)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(serviceMessageID, forKey: .serviceMessageID)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(latencyMilliseconds, forKey: .latencyMs)
        try container.encodeIfPresent(handleAction, forKey: .handleAction)
        if !diagnostics.isEmpty { try container.encode(diagnostics, forKey: .diagnostics) }
    }
}

/// A change to a stored handle made because of a push service's answer.
public enum HandleAction: String, Sendable, Hashable, Codable, CaseIterable {
    /// The service said the handle is gone; the registration was deleted.
    case removed
    /// The service returned a canonical handle (legacy GCM); the stored handle was replaced.
    case replaced
}

extension NotificationResult {
    /// The result without its per-device entries: the counts per platform and outcome stay (and
    /// `omittedTargets` counts the devices not listed), for a reader who may not see whose devices
    /// a send reached.
    public func withoutDevices() -> NotificationResult {
        var result = self
        result.targets = []
        return result
    }
}
