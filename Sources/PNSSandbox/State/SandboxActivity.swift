import Pushgate

/// A Live Activity on a sandbox device, as ActivityKit keeps it: what the Lock Screen and the
/// Dynamic Island show, the last payload applied, and how it is reached (an update token or a
/// broadcast channel).
public struct SandboxActivity: Sendable, Hashable {
    /// What the device shows.
    public enum State: String, Sendable, Hashable {
        /// On screen, taking updates.
        case active
        /// Ended (an `end` push, or ActivityKit's 8 hours ran out): still on the Lock Screen,
        /// taking no more updates; its update token is dead.
        case ended
        /// Gone from the Lock Screen: its `dismissal-date` passed, or 4 hours after it ended.
        case dismissed
    }

    /// Apple: an activity stays active for at most 8 hours…
    public static let maximumActiveSeconds = 8.0 * 3600
    /// …and an ended one on the Lock Screen for at most 4 more (which also caps `dismissal-date`).
    public static let maximumEndedSeconds = 4.0 * 3600

    /// The sandbox's id for the activity.
    public let id: String
    public let deviceID: String
    /// `attributes.activityName` of the start (where Pushgate puts the activity's name), else a
    /// channel subscription's name, else the id.
    public let name: String
    /// The Swift type name of the app's attributes (`attributes-type`); nil for an entry the
    /// control API made for a channel.
    public let attributesType: String?
    public let attributes: JSONValue?
    /// The token ActivityKit issued for updates (the start asked with `input-push-token: 1`).
    public internal(set) var updateToken: String?
    /// The broadcast channel the activity listens to (`input-push-channel`).
    public let channel: String?
    /// The last content state applied.
    public internal(set) var contentState: JSONValue?
    /// The `timestamp` (Unix seconds) of the last payload applied: older or equal ones are ignored.
    public internal(set) var timestamp: Double
    /// The last `alert` applied.
    public internal(set) var alert: JSONValue?
    public internal(set) var staleDate: Double?
    /// The `end` push's `dismissal-date` (Unix seconds).
    public internal(set) var dismissalDate: Double?
    /// When the activity started and, if an `end` came, when it ended (sandbox clock, seconds).
    public let startedAt: Double
    public internal(set) var endedAt: Double?
    /// `update` and `end` payloads applied.
    public internal(set) var updates: Int = 0
    /// Payloads the device received and ignored (not newer than the last applied, or a `start`
    /// for an activity that runs).
    public internal(set) var ignored: Int = 0

    /// What the device shows at `now` (sandbox clock, seconds since the epoch).
    public func state(at now: Double) -> State {
        guard let end = endTime(at: now) else { return .active }
        let removal = min(dismissalDate ?? .infinity, end + Self.maximumEndedSeconds)
        return now >= removal ? .dismissed : .ended
    }

    /// When the activity ended (an `end` applied, or its 8 hours ran out); nil while active.
    public func endTime(at now: Double) -> Double? {
        if let endedAt { return endedAt }
        let timeout = startedAt + Self.maximumActiveSeconds
        return now >= timeout ? timeout : nil
    }

    /// Applies an `update` or `end` the device received, as ActivityKit does: a payload whose
    /// `timestamp` is not newer than the last applied one, a `start`, or anything after the
    /// activity ended is ignored. Returns whether the payload was applied.
    mutating func receive(_ payload: LiveActivityPayload, at now: Double) -> Bool {
        guard payload.event != .start, state(at: now) == .active, payload.timestamp > timestamp else {
            ignored += 1
            return false
        }
        timestamp = payload.timestamp
        if let contentState = payload.contentState { self.contentState = contentState }
        if let alert = payload.alert { self.alert = alert }
        if let staleDate = payload.staleDate { self.staleDate = staleDate }
        updates += 1
        if payload.event == .end {
            endedAt = now
            dismissalDate = payload.dismissalDate
        }
        return true
    }
}
