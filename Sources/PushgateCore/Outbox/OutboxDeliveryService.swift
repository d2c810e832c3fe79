import Logging
import Pushgate
import PushgateDispatch
import ServiceLifecycle

/// Delivers the outbox in the background: takes due notifications (asynchronous sends, scheduled
/// ones whose time has come, and those whose driver died), drives up to
/// `outbox.concurrentNotifications` at once, renews this instance's leases, prunes finished
/// notifications past the retention time, and keeps the outbox metrics current.
///
/// On graceful shutdown it stops claiming at once (here and in synchronous sends), lets pages in
/// flight finish until `deadline`, then cancels what is left and releases every lease it holds,
/// so that the next start resumes the rest at once.
package struct OutboxDeliveryService: Service {
    package let gateway: Gateway
    package let deadline: Duration
    package let logger: Logger

    package init(gateway: Gateway, deadline: Duration, logger: Logger) {
        self.gateway = gateway
        self.deadline = deadline
        self.logger = logger
    }

    /// How often due work is looked for without a wake-up: scheduled sends go out within it.
    package static let pollInterval = Duration.milliseconds(250)
    /// How often finished notifications past the retention time are pruned.
    package static let pruneInterval = Duration.seconds(600)

    package func run() async throws {
        let control = gateway.outbox
        guard control.isEnabled else {
            try? await gracefulShutdown()
            return
        }
        let store = gateway.store
        let (deadline, logger) = (self.deadline, self.logger)
        let drivers = Task { await self.deliverDue() }
        let housekeeping = Task { await self.keepHouse() }
        // Other instances' enqueues, releases and cancels wake this one (PostgreSQL's NOTIFY).
        let listener = Task { await (store as? any DatabaseStore)?.listenForOutboxWork { control.wake() } }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await drivers.value
                // Drained early (the listener began the shutdown): stay until this service's turn.
                try? await gracefulShutdown()
            } onGracefulShutdown: {
                control.beginDraining()
                Task {
                    try? await Task.sleep(for: control.remaining(of: deadline))
                    drivers.cancel()
                }
            }
        } onCancel: {
            drivers.cancel()
            housekeeping.cancel()
            listener.cancel()
        }
        listener.cancel()
        housekeeping.cancel()
        _ = await housekeeping.value
        do {
            try await store.releaseLeases(owner: control.owner, notificationID: nil)
        } catch {
            logger.error("could not release the outbox leases; they expire on their own", metadata: ["error": "\(error)"])
        }
        logger.info("outbox delivery stopped")
    }

    /// Takes and drives due notifications until draining, then waits for the drivers.
    private func deliverDue() async {
        let control = gateway.outbox
        let limit = control.configuration.concurrentNotifications
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            while !control.isDraining, !Task.isCancelled {
                if running < limit, let takeover = await takeDue() {
                    running += 1
                    group.addTask { await self.drive(takeover) }
                    continue
                }
                if running >= limit {
                    await group.next()
                    running -= 1
                    continue
                }
                // Nothing due: wait for an enqueue or the poll interval.
                await control.signal.wait(timeout: Self.pollInterval)
            }
            await group.waitForAll()
        }
    }

    private func takeDue() async -> OutboxTakeover? {
        let time = gateway.now()
        do {
            guard
                let takeover = try await gateway.store.takeDueNotification(
                    app: gateway.app.id, lease: gateway.outbox.lease(from: time), now: time)
            else {
                return nil
            }
            if takeover.leaseExpired { gateway.metrics.outboxNotificationTakenOver() }
            return takeover
        } catch {
            logger.error("could not read the outbox", metadata: ["error": "\(error)"])
            try? await Task.sleep(for: .seconds(1))
            return nil
        }
    }

    private func drive(_ takeover: OutboxTakeover) async {
        let notification = takeover.notification
        var logger = self.logger
        logger[metadataKey: "notification"] = "\(notification.id)"
        logger.info(
            takeover.leaseExpired ? "resuming a notification whose driver stopped" : "delivering a notification",
            metadata: ["sender": "\(notification.sender)"])
        let started = ContinuousClock.now
        let run = await gateway.drive(notification, logger: logger)
        gateway.metrics.sent(
            NotificationResult(notificationID: notification.id, selection: notification.selection, counts: run.counts, targets: run.targets)
        )
        switch run.stop {
        case nil:
            gateway.metrics.sendFinished(duration: ContinuousClock.now - started)
            logger.info(
                "notification finished",
                metadata: [
                    "state": "\(run.record?.state ?? .unknown)", "succeeded": "\(run.record?.succeeded ?? 0)",
                    "processed": "\(run.record?.processed ?? 0)",
                ])
        case .draining:
            logger.notice("notification interrupted by shutdown; it resumes after the next start")
        case .lost:
            logger.notice("notification taken over by another driver")
        case .deferred(let due):
            logger.notice("notification waits for its throttled targets' retry", metadata: ["due": "\(RFC3339.format(due))"])
        case .storeFailed(let failure), .recordFailed(let failure):
            logger.error("notification stopped: the store failed; it is retried", metadata: ["error": "\(failure)"])
            try? await gateway.store.releaseLeases(owner: gateway.outbox.owner, notificationID: notification.id)
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Renews leases (every third of their time), prunes, and updates the outbox gauges.
    private func keepHouse() async {
        let control = gateway.outbox
        let renewal = Duration.seconds(Double(control.configuration.leaseSeconds) / 3)
        var lastPrune = ContinuousClock.now - Self.pruneInterval
        while !Task.isCancelled {
            let time = gateway.now()
            do {
                try await gateway.store.renewLeases(owner: control.owner, until: control.lease(from: time).until)
                gateway.metrics.outboxDepth(try await gateway.store.outboxDepth(now: time), now: time)
                if ContinuousClock.now - lastPrune >= Self.pruneInterval {
                    lastPrune = ContinuousClock.now
                    var pruned = 0
                    while !Task.isCancelled {
                        let batch = try await gateway.store.pruneNotifications(
                            endedBefore: time.adding(seconds: -Double(control.configuration.retentionSeconds)))
                        pruned += batch
                        if batch < 100 { break }
                    }
                    if pruned > 0 {
                        gateway.metrics.outboxPruned(pruned)
                        logger.info("pruned finished notifications past the retention time", metadata: ["count": "\(pruned)"])
                    }
                }
            } catch {
                logger.error("outbox housekeeping failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: min(renewal, .seconds(5)))
        }
    }
}
