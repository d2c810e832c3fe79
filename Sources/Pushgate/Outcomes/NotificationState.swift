/// Where a notification is in its life, with Notification Hubs' `NotificationOutcomeState` names.
public enum NotificationState: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case enqueued = "Enqueued"
    /// Accepted with a delivery time in the future (`deliverAt`).
    case scheduled = "Scheduled"
    case detailedStateAvailable = "DetailedStateAvailable"
    case processing = "Processing"
    /// Every target was attempted; per-target outcomes tell which succeeded.
    case completed = "Completed"
    /// Nothing could be delivered (no service reachable, or the gateway gave up).
    case abandoned = "Abandoned"
    case unknown = "Unknown"
    /// No registration matched the tag expression on the selected platforms.
    case noTargetFound = "NoTargetFound"
    case cancelled = "Cancelled"

    public var description: String { rawValue }

    /// The name Notification Hubs' NotificationDetails gives the state: `Canceled` where the
    /// tutorial API (and the outbox) say `Cancelled`.
    public var notificationHubsName: String { self == .cancelled ? "Canceled" : rawValue }

    /// Whether nothing more will happen to a notification in this state.
    public var isFinal: Bool {
        switch self {
        case .completed, .abandoned, .noTargetFound, .cancelled, .unknown: true
        case .enqueued, .scheduled, .processing, .detailedStateAvailable: false
        }
    }
}
