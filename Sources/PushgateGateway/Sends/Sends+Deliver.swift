import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateOutbox

extension OutboxControl {
    /// Refuses, naming `what`, unless the outbox is on: what cannot be done without it
    /// (asynchronous, scheduled and hub sends) is refused before anything is stored.
    package func require(for what: String) throws(GatewayError) {
        guard isEnabled else { throw GatewayError(.notImplemented, "\(what) need the outbox, which is turned off (outbox.enabled)") }
    }
}

extension Sends {
    // MARK: Sends through the outbox

    /// Sends synchronously: the notification is stored first (so that a crash resumes it), then
    /// this request drives it and answers with the result. With the outbox off, the same driver
    /// runs over an ``EphemeralOutbox`` of this send alone: nothing is stored, nothing resumes.
    ///
    /// A send cut short still reports every target it reached, with the result's `error` saying
    /// why: a store failure ends it `interrupted`; a shutdown `continuing` (accepted: the rest is
    /// delivered after the next start, and `GET /api/notifications/{id}/outcome` tells how it
    /// went), or `interrupted` without the outbox (the rest is not sent).
    ///
    /// With an idempotency key (checked by ``idempotencyKey(header:request:body:)``), a repeat of a
    /// send is answered the first one's notification as it is now (``replayed(_:)``), even when a
    /// concurrent request stored it a moment ago.
    public func deliver(
        _ prepared: PreparedSend, progress: (@Sendable (DispatchProgress) -> Void)? = nil, logger requestLogger: Logger? = nil,
        idempotencyKey: IdempotencyKey? = nil
    ) async -> SendOutcome {
        let durable = outbox.isEnabled
        let driver = durable ? self.driver : self.driver.ephemeral()
        let started = ContinuousClock.now
        let notification = outboxNotification(prepared, enqueuedAt: now(), deliverAt: nil, idempotencyKey: idempotencyKey)
        var logger = requestLogger ?? self.logger
        logger[metadataKey: "notification"] = "\(notification.id)"
        // The first page is claimed with the enqueue: a send of one page pays no claim of its own.
        let firstClaim: OutboxClaim?
        do {
            let stored = try await driver.queue.enqueue(
                notification, lease: outbox.lease(from: notification.enqueuedAt), claimingFirstPageOf: outbox.configuration.pageSize,
                now: notification.enqueuedAt)
            firstClaim = stored.firstClaim
            if case .existing(let holder) = stored.enqueued, let key = idempotencyKey {
                do { return replayed(try await record(holding: key, holder)) } catch {
                    var result = NotificationResult(notificationID: holder.notificationID, selection: prepared.selection, targets: [])
                    result.state = .abandoned
                    result.error = error.message
                    return SendOutcome(result: result, ending: .interrupted, secureID: nil, replayed: true, refusal: error)
                }
            }
        } catch {
            logger.error("could not store a notification", metadata: ["error": "\(error)"])
            var result = NotificationResult(notificationID: notification.id, selection: prepared.selection, targets: [])
            result.state = .abandoned
            result.error = "the registration store is unavailable: the notification was not accepted"
            return SendOutcome(result: result, ending: .interrupted, secureID: nil)
        }
        let run = await driver.drive(notification, firstClaim: firstClaim, progress: progress, logger: logger)
        var result = NotificationResult(
            notificationID: notification.id, selection: prepared.selection, counts: run.record?.counts ?? run.counts,
            targets: run.targets)
        var ending: SendOutcome.Ending
        let reached = result.platforms.reduce(0) { $0 + $1.total }
        let outcome = durable ? " (notification \(notification.id) records its outcome)" : ""
        switch run.stop {
        case .storeFailed(let failure), .recordFailed(let failure):
            let what = if case .storeFailed = run.stop { "listing targets" } else { "recording outcomes" }
            logger.error(
                "send stopped: the registration store failed while \(what)", metadata: ["reached": "\(reached)", "error": "\(failure)"])
            // Stored, it is retried in the background (the driver released it); otherwise it is not.
            let rest = durable ? "the rest is retried in the background" : "the rest were not sent"
            result.error = "the registration store failed while \(what); \(reached) targets were reached, \(rest)" + outcome
            ending = .interrupted
        case .draining where !durable:
            logger.warning("send cancelled (shutdown)", metadata: ["reached": "\(reached)"])
            result.state = .cancelled
            result.error = "the gateway is shutting down; \(reached) targets were reached, the rest were not sent"
            ending = .interrupted
        case .lost, .draining, .deferred, .helped:
            // Accepted, not finished: the rest goes out elsewhere, later, or after the next start.
            let why =
                switch run.stop {
                case .lost: "another gateway instance took the send over; \(reached) targets were reached here"
                case .deferred(let due):
                    "the push services throttled some targets; \(reached) targets have their outcome, the throttled ones are sent again"
                        + " from \(RFC3339.format(due))"
                default:
                    "the gateway is shutting down; \(reached) targets were reached, the rest will be delivered after it starts again"
                }
            logger.warning("send interrupted: \(why)")
            result.state = .processing
            result.error = why + outcome
            ending = .continuing
        case nil:
            if let record = run.record { result.state = record.state }
            ending = .finished
        }
        return finished(result, ending: ending, secureID: prepared.secureID, started: started, logger: logger)
    }

    package func outboxNotification(
        _ prepared: PreparedSend, enqueuedAt: Timestamp, deliverAt: Timestamp?, idempotencyKey: IdempotencyKey? = nil
    ) -> OutboxNotification {
        OutboxNotification(
            id: TimeOrderedID.make(at: enqueuedAt), app: appID, sender: prepared.sender, selection: prepared.selection,
            audience: prepared.audience, payloads: prepared.payloads, secureID: prepared.secureID, enqueuedAt: enqueuedAt,
            deliverAt: deliverAt, delivery: prepared.delivery, idempotencyKey: idempotencyKey)
    }

    /// A send accepted for background delivery.
    public struct Accepted: Sendable {
        public var record: NotificationRecord
        /// A repeat (`Idempotency-Key`): the first send's notification, not stored again.
        public var replayed: Bool

        public init(record: NotificationRecord, replayed: Bool) {
            self.record = record
            self.replayed = replayed
        }
    }

    /// Accepts a send for background delivery (`Prefer: respond-async`, `?async=true`, or a
    /// `deliverAt`): answers once it is stored. With an idempotency key, a repeat is answered the
    /// first send's notification as it is now. Whether the outbox is on was decided by
    /// ``Sends/check(_:)``, the one place that says what needs it.
    package func enqueue(
        _ prepared: PreparedSend, deliverAt: Timestamp?, idempotencyKey: IdempotencyKey? = nil
    ) async throws(GatewayError) -> Accepted {
        var notification = outboxNotification(prepared, enqueuedAt: now(), deliverAt: deliverAt, idempotencyKey: idempotencyKey)
        notification.maximumScheduledPerSender = limits.maximumScheduledPerSender
        let enqueued = try await storeCall { () throws(StoreError) in try await store.enqueue(notification, lease: nil) }
        if case .existing(let holder) = enqueued, let key = idempotencyKey {
            return Accepted(record: try await record(holding: key, holder), replayed: true)
        }
        outbox.wake()
        logger.info(
            "notification accepted",
            metadata: [
                "notification": "\(notification.id)", "state": "\(notification.initialState)",
                "deliverAt": "\(RFC3339.format(notification.deliverAt))",
            ])
        let record = NotificationRecord(
            id: notification.id, app: appID, sender: notification.sender, state: notification.initialState,
            selection: notification.selection, audience: notification.audience.description, secureID: notification.secureID,
            enqueuedAt: notification.enqueuedAt, deliverAt: notification.deliverAt, startedAt: nil, endedAt: nil, counts: [:],
            cancelRequested: false)
        return Accepted(record: record, replayed: false)
    }

    /// The delivery time of a scheduled send: RFC 3339, not further in the past than the allowed
    /// skew (a time just past is sent at once), nor further ahead than the horizon.
    public func scheduleTime(_ text: String?) throws(GatewayError) -> Timestamp? {
        guard let text else { return nil }
        let time: Timestamp
        do { time = try RFC3339.parse(text) } catch { throw .badRequest("deliverAt: \(error.description)") }
        let current = now()
        let skew = Double(outbox.configuration.scheduleSkewSeconds)
        let horizon = Double(outbox.configuration.maximumScheduleAheadSeconds)
        if time.secondsSinceEpoch < current.secondsSinceEpoch - skew {
            throw .badRequest(
                "deliverAt: \(text) is in the past (now is \(RFC3339.format(current)); at most \(Int(skew)) s of clock skew is allowed)")
        }
        if time.secondsSinceEpoch > current.secondsSinceEpoch + horizon {
            throw .badRequest("deliverAt: \(text) is more than \(Int(horizon)) s ahead (outbox.maxScheduleAheadSeconds)")
        }
        return max(time, current)
    }
}
