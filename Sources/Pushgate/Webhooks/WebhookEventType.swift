/// What an outcome webhook's event reports. The raw value is the event's `type` on the wire.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Comparable {
    /// A push service reported a handle gone; the registration was removed.
    case registrationPruned = "registration.pruned"
    /// A notification ended: its state and counts per platform and outcome.
    case notificationCompleted = "notification.completed"
    /// One device's delivery failed (sampled, or all): its outcome and the service's reason.
    case deliveryFailed = "delivery.failed"
    /// A push service answered with a new handle for a registration (legacy GCM's canonical id).
    case handleUpdated = "handle.updated"
    /// A test event (`pushgate webhooks test`): posted to every receiver, whatever it asked for.
    case ping

    public static func < (lhs: WebhookEventType, rhs: WebhookEventType) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The names as a configuration error lists them.
    static var names: String { allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") }
}
