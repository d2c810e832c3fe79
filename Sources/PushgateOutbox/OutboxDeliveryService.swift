import Logging
import Pushgate
import PushgateDispatch
import ServiceLifecycle
import Tracing

/// Delivers the outbox in the background: takes due notifications (asynchronous sends, scheduled
/// ones whose time has come, and those whose driver died), drives up to
/// `outbox.concurrentNotifications` at once, renews this instance's leases, prunes finished
/// notifications past the retention time, and keeps the outbox metrics current.
///
/// On graceful shutdown it stops claiming at once (here and in synchronous sends), lets pages in
/// flight finish until `deadline`, then cancels what is left and releases every lease it holds,
/// so that the next start resumes the rest at once.
public struct OutboxDeliveryService: Service {
    public let driver: OutboxDriver
    /// The store's housekeeping (the driver's queue is the same store, seen as a queue).
    public let maintenance: any OutboxMaintenance
    public let deadline: Duration
    public let logger: Logger

    public init(driver: OutboxDriver, maintenance: any OutboxMaintenance, deadline: Duration, logger: Logger) {
        self.driver = driver
        self.maintenance = maintenance
        self.deadline = deadline
        self.logger = logger
    }

    /// How often due work is looked for without a wake-up: scheduled sends go out within it.
    public static let pollInterval = Duration.milliseconds(250)
    /// How often finished notifications past the retention time are pruned.
    public static let pruneInterval = Duration.seconds(600)

    public func run() async throws {
        let control = driver.control
        guard control.isEnabled else {
            try? await gracefulShutdown()
            return
        }
        let store = driver.queue
        // The service's parts are children of this task and end with it: housekeeping (lease
        // renewal) and the listener once the drivers have ended and this service's shutdown came.
        await withDiscardingTaskGroup { group in
            group.addTask { await self.keepHouse() }
            // Other instances' enqueues, releases and cancels wake this one (PostgreSQL's NOTIFY).
            group.addTask { await store.listenForOutboxWork { control.wake() } }
            await deliverUntilShutdown()
            group.cancelAll()
        }
        do {
            try await store.releaseLeases(owner: control.owner, notificationID: nil)
        } catch {
            logger.error("could not release the outbox leases; they expire on their own", metadata: ["error": "\(error)"])
        }
        logger.info("outbox delivery stopped")
    }

    /// What ``deliverUntilShutdown()`` hears from its children.
    private enum Event: Sendable {
        /// The drivers ended: draining stopped them, or the deadline (or this service's
        /// cancellation) cancelled them.
        case driversEnded
        /// This service's graceful shutdown began.
        case shutdownBegan
        /// This service was cancelled before its graceful shutdown (its children are too).
        case cancelled
        /// The shutdown deadline passed.
        case deadline
    }

    /// What ``deliverUntilShutdown()`` still waits for.
    private enum Awaiting {
        case driversAndShutdown
        /// Draining (or the cancellation) is stopping the drivers.
        case drivers
        /// Drained early (the listener began draining): this service's turn to shut down.
        case shutdown
        case nothing
    }

    /// Takes and drives due notifications until the drivers have ended and this service's graceful
    /// shutdown came. The shutdown begins draining (no page is claimed any more, here and in
    /// synchronous sends); the drives still on at the deadline, counted from when draining began,
    /// are cancelled.
    private func deliverUntilShutdown() async {
        let (control, deadline) = (driver.control, self.deadline)
        await withTaskGroup(of: Event.self) { group in
            group.addTask {
                await self.deliverDue()
                return .driversEnded
            }
            group.addTask { (try? await gracefulShutdown()) == nil ? .cancelled : .shutdownBegan }
            var awaiting = Awaiting.driversAndShutdown
            while awaiting != .nothing, let event = await group.next() {
                switch event {
                case .driversEnded:
                    awaiting = awaiting == .driversAndShutdown ? .shutdown : .nothing
                case .shutdownBegan:
                    control.beginDraining()
                    guard awaiting == .driversAndShutdown else {
                        awaiting = .nothing
                        break
                    }
                    awaiting = .drivers
                    // The deadline's timer, a child ended with the others.
                    group.addTask {
                        try? await Task.sleep(for: control.remaining(of: deadline))
                        return .deadline
                    }
                case .cancelled:
                    awaiting = awaiting == .driversAndShutdown ? .drivers : .nothing
                case .deadline:
                    // The drives still on are cancelled: the drivers end shortly.
                    group.cancelAll()
                }
            }
            // The deadline's timer, when the drivers ended before it.
            group.cancelAll()
        }
    }

    /// Takes and drives due notifications until draining, then waits for the drivers.
    private func deliverDue() async {
        let control = driver.control
        let limit = control.configuration.concurrentNotifications
        // Another instance's broadcast to help with exists only where several instances run.
        let helps = driver.queue.servesSeveralInstances
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            while !control.isDraining, !Task.isCancelled {
                if running < limit, let takeover = await takeDue() {
                    running += 1
                    group.addTask { await self.drive(takeover.notification, resumed: takeover.leaseExpired) }
                    continue
                }
                // Room left and nothing due: help deliver another instance's broadcast.
                if helps, running < limit, let shared = await takeRunning() {
                    running += 1
                    group.addTask { await self.drive(shared, helping: true) }
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
        let time = driver.clock.now
        do {
            guard
                let takeover = try await driver.queue.takeDueNotification(
                    app: driver.app, lease: driver.control.lease(from: time), now: time)
            else {
                return nil
            }
            if takeover.leaseExpired { driver.metrics.outboxNotificationTakenOver() }
            return takeover
        } catch {
            logger.error("could not read the outbox", metadata: ["error": "\(error)"])
            try? await Task.sleep(for: .seconds(1))
            return nil
        }
    }

    /// A shared notification another instance holds and still pages, that this one is not
    /// already driving.
    private func takeRunning() async -> OutboxNotification? {
        let time = driver.clock.now
        do {
            guard
                let notification = try await driver.queue.takeRunningNotification(app: driver.app, owner: driver.control.owner, now: time),
                !driver.drives.isActive(notification.id)
            else { return nil }
            return notification
        } catch {
            logger.error("could not read the outbox", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func drive(_ notification: OutboxNotification, resumed: Bool = false, helping: Bool = false) async {
        var logger = self.logger
        logger[metadataKey: "notification"] = "\(notification.id)"
        logger.info(
            helping
                ? "helping deliver a notification another instance holds"
                : resumed ? "resuming a notification whose driver stopped" : "delivering a notification",
            metadata: ["sender": "\(notification.sender)"])
        let started = ContinuousClock.now
        let run: OutboxDrive.Result
        // No request to belong to: the drive's pages share a root span of their own.
        if let span = driver.dispatcher.tracing.startSpan("outbox.deliver", context: .topLevel) {
            span.updateAttributes { attributes in
                attributes["pushgate.notification.id"] = notification.id
                if resumed { attributes["pushgate.outbox.resumed"] = true }
                if helping { attributes["pushgate.outbox.helping"] = true }
            }
            run = await ServiceContext.withValue(span.context) { await driver.drive(notification, helping: helping, logger: logger) }
            span.end()
        } else {
            run = await driver.drive(notification, helping: helping, logger: logger)
        }
        switch run.stop {
        case nil:
            driver.metrics.sendFinished(duration: ContinuousClock.now - started)
            logger.info(
                "notification finished",
                metadata: [
                    "state": "\(run.record?.state ?? .unknown)", "succeeded": "\(run.record?.succeeded ?? 0)",
                    "processed": "\(run.record?.processed ?? 0)",
                ])
        case .draining:
            logger.notice("notification interrupted by shutdown; it resumes after the next start")
        case .lost:
            logger.notice(
                helping ? "stopped helping: the notification ended or its holder stopped" : "notification taken over by another driver")
        case .helped:
            logger.info(
                "helped deliver a notification: no page left to claim",
                metadata: ["delivered": "\(run.counts.values.reduce(0) { $0 + $1.values.reduce(0, +) })"])
        case .deferred(let due):
            logger.notice("notification waits for its throttled targets' retry", metadata: ["due": "\(RFC3339.format(due))"])
        case .storeFailed(let failure), .recordFailed(let failure):
            // The driver released its leases: it is retried, after a pause for the store.
            logger.error("notification stopped: the store failed; it is retried", metadata: ["error": "\(failure)"])
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Renews leases (every third of their time), prunes, and updates the outbox gauges.
    private func keepHouse() async {
        let control = driver.control
        let renewal = Duration.seconds(Double(control.configuration.leaseSeconds) / 3)
        var lastPrune = ContinuousClock.now - Self.pruneInterval
        while !Task.isCancelled {
            let time = driver.clock.now
            do {
                try await driver.queue.renewLeases(owner: control.owner, until: control.lease(from: time).until)
                driver.metrics.outboxDepth(try await maintenance.outboxDepth(now: time), now: time)
                if ContinuousClock.now - lastPrune >= Self.pruneInterval {
                    lastPrune = ContinuousClock.now
                    var pruned = 0
                    while !Task.isCancelled {
                        let batch = try await maintenance.pruneNotifications(
                            endedBefore: time.adding(seconds: -Double(control.configuration.retentionSeconds)))
                        pruned += batch
                        if batch < 100 { break }
                    }
                    if pruned > 0 {
                        driver.metrics.outboxPruned(pruned)
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
