import Pushgate

/// A result row as the SQL stores read it: columns by position, in the types both databases
/// store (SQLite's integers are PostgreSQL's booleans).
package protocol SQLRowReading {
    func text(_ column: Int) -> String?
    func double(_ column: Int) -> Double?
    func integer(_ column: Int) -> Int?
    func bool(_ column: Int) -> Bool
}

/// The outbox's stored rows, selected and read back once for every SQL store: the columns of a
/// notification's record, of a notification to deliver, of its counts and of a failed target.
/// Each store selects these columns in this order and hands the rows here.
package enum OutboxRows {
    /// `SELECT \(recordColumns) FROM outbox_notifications`: a notification's telemetry.
    package static let recordColumns = """
        sender, state, platforms, audience, secure_id, enqueued_at, deliver_at, started_at, ended_at, cancel_requested, claimed, \
        exhausted
        """

    /// How many columns ``recordColumns`` names: where columns selected after them start.
    package static let recordColumnCount = recordColumns.split(separator: ",").count

    package static func record(id: String, app: AppID, row: some SQLRowReading, counts: [Platform: [Outcome: Int]]) -> NotificationRecord {
        NotificationRecord(
            id: id, app: app, sender: row.text(0) ?? "", state: NotificationState(rawValue: row.text(1) ?? "") ?? .unknown,
            selection: (try? PlatformSelection(parsing: row.text(2) ?? "")) ?? .all, audience: row.text(3) ?? "", secureID: row.text(4),
            enqueuedAt: Timestamp(secondsSinceEpoch: row.double(5) ?? 0), deliverAt: Timestamp(secondsSinceEpoch: row.double(6) ?? 0),
            startedAt: row.double(7).map(Timestamp.init(secondsSinceEpoch:)),
            endedAt: row.double(8).map(Timestamp.init(secondsSinceEpoch:)),
            counts: counts, cancelRequested: row.bool(9), targetsClaimed: row.integer(10) ?? 0, audienceExhausted: row.bool(11))
    }

    /// `SELECT \(countColumns) FROM outbox_counts`: a notification's counts, a row per platform and outcome.
    package static let countColumns = "platform, outcome, count"

    package static func addCount(_ row: some SQLRowReading, to counts: inout [Platform: [Outcome: Int]]) {
        guard let platform = row.text(0).flatMap(Platform.init(rawValue:)), let outcome = row.text(1) else { return }
        counts[platform, default: [:]][Outcome(rawValue: outcome)] = row.integer(2) ?? 0
    }

    /// `SELECT \(notificationColumns) FROM outbox_notifications`: what to send, to whom, when.
    package static let notificationColumns = "sender, platforms, audience, payloads, secure_id, enqueued_at, deliver_at, recipient"

    package static func notification(id: String, app: AppID, row: some SQLRowReading) throws(StoreError) -> OutboxNotification {
        let selection: PlatformSelection
        do { selection = try PlatformSelection(parsing: row.text(1) ?? "") } catch {
            throw StoreError(.storage, "a stored platform list is corrupt")
        }
        let stored = try OutboxPayloadCoding.decodeWithDelivery(row.text(3) ?? "")
        return OutboxNotification(
            id: id, app: app, sender: row.text(0) ?? "", selection: selection,
            audience: try StoredAudience.decode(text: row.text(2) ?? "", recipient: row.text(7)), payloads: stored.payloads,
            secureID: row.text(4), enqueuedAt: Timestamp(secondsSinceEpoch: row.double(5) ?? 0),
            deliverAt: Timestamp(secondsSinceEpoch: row.double(6) ?? 0), delivery: stored.delivery)
    }

    /// `SELECT \(failureColumns) FROM outbox_failures`: a target the services failed.
    package static let failureColumns = "registration_id, platform, handle, outcome, status, reason, attempts"

    /// A failed target; nil for a row that is not one (left out rather than failing the listing).
    package static func failure(_ row: some SQLRowReading) -> TargetResult? {
        guard let id = row.text(0).flatMap({ try? RegistrationID($0) }), let platform = row.text(1).flatMap(Platform.init(rawValue:)) else {
            return nil
        }
        return TargetResult(
            registrationID: id, platform: platform, maskedHandle: row.text(2) ?? "", outcome: Outcome(rawValue: row.text(3) ?? ""),
            statusCode: row.integer(4), reason: row.text(5), attempts: row.integer(6) ?? 0)
    }
}
