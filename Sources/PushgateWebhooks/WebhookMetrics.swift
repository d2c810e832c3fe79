import Pushgate

/// What the poster counts: events posted, failed POSTs, events parked, events waiting.
public protocol WebhookMetrics: Sendable {
    func webhookEventsPosted(_ count: Int, receiver: String)
    func webhookPostFailed(receiver: String)
    func webhookEventsParked(_ count: Int, receiver: String)
    func webhookEventsWaiting(_ counts: WebhookEventCounts, app: AppID)
}

/// Counts nothing.
public struct NoWebhookMetrics: WebhookMetrics {
    public init() {}
    public func webhookEventsPosted(_ count: Int, receiver: String) {}
    public func webhookPostFailed(receiver: String) {}
    public func webhookEventsParked(_ count: Int, receiver: String) {}
    public func webhookEventsWaiting(_ counts: WebhookEventCounts, app: AppID) {}
}
