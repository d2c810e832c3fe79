import Foundation
import Logging
import Pushgate
import PushgateOutbox

/// What a sender reads and asks of its notifications: their telemetry, the failed targets,
/// cancelling, and (for a secure send's recipient) the message. It takes only the stores it
/// reads (``NotificationLog``, ``SecureMessageStore``) and the outbox's controls to wake a driver
/// that is to stop.
public struct Notifications: Sendable {
    let store: any NotificationLog & SecureMessageStore
    let app: AppID
    let clock: any PushgateClock
    let logger: Logger
    let outbox: OutboxControl
    let drives: ActiveDrives

    package init(
        store: any NotificationLog & SecureMessageStore, app: AppID, clock: any PushgateClock, logger: Logger, outbox: OutboxControl,
        drives: ActiveDrives
    ) {
        self.store = store
        self.app = app
        self.clock = clock
        self.logger = logger
        self.outbox = outbox
        self.drives = drives
    }

    func now() -> Timestamp { clock.now }

    /// A notification the user may see: their own, or any for an admin. A stranger's is "not
    /// found", as an unknown id.
    public func record(id: String, user: AuthenticatedUser) async throws(GatewayError) -> NotificationRecord {
        guard !id.isEmpty, id.utf8.count <= 64 else { throw .notFound("no notification '\(id.prefix(64))'") }
        let record = try await storeCall { () throws(StoreError) in try await store.notificationRecord(id: id, app: app) }
        guard let record, record.sender == user.name || user.isAdmin else { throw .notFound("no notification \(id)") }
        return record
    }

    /// The failed targets of a notification, a page at a time.
    public func failedTargets(
        of record: NotificationRecord, after: String?, limit: Int
    ) async throws(GatewayError) -> [TargetResult] {
        var cursor: RegistrationID?
        if let after, !after.isEmpty {
            do { cursor = try RegistrationID(after) } catch { throw .badRequest("failedAfter: \(error.description)") }
        }
        guard (1...1000).contains(limit) else { throw .badRequest("failedLimit must be 1…1000, not \(limit)") }
        return try await storeCall { () throws(StoreError) in
            try await store.failedTargets(notificationID: record.id, app: app, after: cursor, limit: limit)
        }
    }

    /// Notifications newest first: the user's own, or everyone's for an admin (or one sender's).
    public func records(user: AuthenticatedUser, sender: String?, limit: Int) async throws(GatewayError) -> [NotificationRecord] {
        guard (1...1000).contains(limit) else { throw .badRequest("limit must be 1…1000, not \(limit)") }
        let sender = sender.flatMap { $0.isEmpty ? nil : $0 }
        if let sender, sender != user.name, !user.isAdmin {
            throw GatewayError(.forbidden, "sender: only admins may list another sender's notifications")
        }
        let filter = user.isAdmin ? sender : user.name
        return try await storeCall { () throws(StoreError) in try await store.notificationRecords(app: app, sender: filter, limit: limit) }
    }

    /// `DELETE /api/notifications/{id}`: stops a scheduled or running send; its targets not yet
    /// sent are counted `Cancelled`. Waits up to `wait` for the send to stop, and answers its record.
    public func cancel(
        id: String, user: AuthenticatedUser, wait: Duration = .seconds(10)
    ) async throws(GatewayError)
        -> NotificationRecord
    {
        let record = try await self.record(id: id, user: user)
        guard !record.state.isFinal else {
            throw GatewayError(.conflict, "notification \(id) has already finished (\(record.state)); there is nothing to cancel")
        }
        let time = now()
        let before = try await storeCall { () throws(StoreError) in try await store.requestCancel(notificationID: id, app: app, now: time) }
        if let before, before.cancelRequested || before.state.isFinal {
            throw GatewayError(
                .conflict, "notification \(id) is already \(before.state.isFinal ? "finished (\(before.state))" : "being cancelled")")
        }
        drives.cancel(id)
        outbox.wake()
        logger.info("notification cancel requested", metadata: ["notification": "\(id)", "by": "\(user.name)"])
        var latest = before
        let deadline = ContinuousClock.now + wait
        while let current = latest, !current.state.isFinal, ContinuousClock.now < deadline {
            guard (try? await Task.sleep(for: .milliseconds(50))) != nil else { break }
            latest = try await storeCall { () throws(StoreError) in try await store.notificationRecord(id: id, app: app) }
        }
        guard let latest else { throw .notFound("no notification \(id)") }
        return latest
    }

    /// `GET /api/notifications/{id}`: the payload, only for its recipient and before it expires.
    public func readSecure(id: String, user: AuthenticatedUser) async throws(GatewayError) -> SecureMessage {
        let time = now()
        let message = try await storeCall { () throws(StoreError) in
            try await store.readSecureMessage(id: id, app: app, recipient: user.name, now: time)
        }
        guard let message else { throw .notFound("no notification \(id) for \(user.name)") }
        return message
    }
}
