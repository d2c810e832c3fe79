public import Pushgate

extension NotificationRecord {
    /// The record as Notification Hubs' telemetry `NotificationDetails`: id, location, state,
    /// times, tags, target platforms, per-platform `…OutcomeCounts`, and the URI of the failed
    /// targets (`PnsErrorDetailsUri`) when there are any. `spelling` names the state as the
    /// tutorial API does (``NotificationState/rawValue``) or as Notification Hubs does.
    public func xmlDocument(location: String, failedTargetsURI: String?, spelling: StateSpelling = .gateway) -> [UInt8] {
        let writer = XMLTextWriter()
        writer.startDocument()
        writer.startElement("NotificationDetails")
        writer.attribute("xmlns", NotificationResult.xmlNamespace)
        writer.attribute("xmlns:i", "http://www.w3.org/2001/XMLSchema-instance")
        writer.element("NotificationId", id)
        writer.element("Location", location)
        writer.element("State", spelling == .notificationHubs ? state.notificationHubsName : state.rawValue)
        writer.element("EnqueueTime", RFC3339.format(enqueuedAt))
        if deliverAt > enqueuedAt { writer.element("ScheduledTime", RFC3339.format(deliverAt)) }
        if let startedAt { writer.element("StartTime", RFC3339.format(startedAt)) }
        if let endedAt { writer.element("EndTime", RFC3339.format(endedAt)) }
        writer.element("Tags", audience)
        writer.element("TargetPlatforms", selection.platforms.map(\.notificationHubsName).joined(separator: ","))
        if let failedTargetsURI { writer.element("PnsErrorDetailsUri", failedTargetsURI) }
        for platform in selection.platforms {
            writer.startElement(NotificationResult.countsElement(platform))
            for (outcome, count) in PlatformSummary(platform: platform, counts: counts[platform] ?? [:]).sortedCounts {
                writer.startElement("Outcome")
                writer.element("Name", outcome.rawValue)
                writer.element("Count", String(count))
                writer.endElement()
            }
            writer.endElement()
        }
        writer.endElement()
        return writer.finish()
    }
}

/// How a document names a notification's state.
public enum StateSpelling: Sendable, Hashable {
    /// The gateway's own names (`Cancelled`), as the tutorial API answers.
    case gateway
    /// Notification Hubs' names (`Canceled`).
    case notificationHubs
}
