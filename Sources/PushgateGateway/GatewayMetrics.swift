import Foundation
import Prometheus
import Pushgate
import PushgateOutbox
import Synchronization

/// The gateway's Prometheus metrics, in a registry of its own (several gateways can live in one
/// process, as in tests).
///
/// (One member per metric family, about 40: a metric added is a member added; each is a line.)
public final class GatewayMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let inFlight: Gauge
    private let handleUpdatesFailedCounter: Counter
    private let sendDuration: DurationHistogram
    private let outboxPending: Gauge
    private let outboxDue: Gauge
    private let outboxOldestDueAge: Gauge
    private let outboxClaims: Counter
    private let outboxLeaseExpiries: Counter
    private let outboxPruned: Counter
    private let outboxRecordFailures: Counter
    private let outboxDeferredTargets: Counter
    private let outboxEarlyAnswers: Counter
    private let outboxHelpedPages: Counter
    /// Per platform and outcome, made once (the sets are closed).
    private let deliveries: [Platform: [Outcome: Counter]]
    private let retries: [Platform: Counter]
    private let deliveryLatency: [Platform: DurationHistogram]
    private let handleChanges: [Platform: [HandleAction: Counter]]
    /// Per (route, method, status) and per route: made on first use, then looked up in this
    /// process's own table rather than the registry's.
    private let requestCounters = Mutex<[String: Counter]>([:])
    private let requestDurations = Mutex<[String: DurationHistogram]>([:])

    package static let latencyBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]
    package static let sendBuckets: [Duration] = latencyBuckets + [.seconds(30), .seconds(60), .seconds(300)]

    public init() {
        inFlight = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "pushgate", metricName: "http_requests_in_flight", unitName: "", helpText: "HTTP requests being served"))
        handleUpdatesFailedCounter = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "pushgate", metricName: "handle_updates_failed", unitName: "total",
                helpText: "Handle removals and replacements the store could not apply"))
        sendDuration = registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "pushgate", metricName: "send_duration", unitName: "seconds",
                helpText: "Time from a send's start to its last outcome"),
            buckets: Self.sendBuckets)
        let registry = self.registry
        func outboxGauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(namespace: "pushgate", metricName: "outbox_\(name)", unitName: "", helpText: help))
        }
        func outboxCounter(_ name: String, _ help: String) -> Counter {
            registry.makeCounter(
                descriptor: MetricNameDescriptor(namespace: "pushgate", metricName: "outbox_\(name)", unitName: "total", helpText: help))
        }
        outboxPending = outboxGauge("pending_notifications", "Notifications in the outbox not yet finished (scheduled ones included)")
        outboxDue = outboxGauge("due_notifications", "Notifications due for delivery and not yet finished")
        outboxOldestDueAge = outboxGauge("oldest_due_age_seconds", "How long the oldest unfinished due notification has been due")
        outboxClaims = outboxCounter("page_claims", "Pages of targets claimed for delivery")
        outboxLeaseExpiries = outboxCounter(
            "lease_expiries", "Pages and notifications taken over after their holder's lease expired (it died or was stopped)")
        outboxPruned = outboxCounter("pruned_notifications", "Finished notifications deleted after the retention time")
        outboxRecordFailures = outboxCounter(
            "record_failures", "Pages whose outcomes the store could not record (they are delivered again)")
        outboxDeferredTargets = outboxCounter(
            "deferred_targets", "Targets a push service throttled, put off to a retry page at the delay it asked for")
        outboxHelpedPages = outboxCounter(
            "helped_page_claims", "Pages claimed of a notification another instance holds (this instance's share of its broadcast)")
        outboxEarlyAnswers = outboxCounter(
            "early_answers", "Targets' final answers recorded while their page was on the wire (a page claimed again skips them)")
        var deliveries: [Platform: [Outcome: Counter]] = [:]
        var retries: [Platform: Counter] = [:]
        var latency: [Platform: DurationHistogram] = [:]
        var handleChanges: [Platform: [HandleAction: Counter]] = [:]
        for platform in Platform.allCases {
            let label = [("platform", platform.rawValue)]
            for outcome in Outcome.known {
                deliveries[platform, default: [:]][outcome] = registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "pushgate", metricName: "notifications", unitName: "total",
                        helpText: "Deliveries by platform and outcome"),
                    labels: label + [("outcome", outcome.rawValue)])
            }
            retries[platform] = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "pushgate", metricName: "delivery_retries", unitName: "total", helpText: "Retried delivery attempts"),
                labels: label)
            latency[platform] = registry.makeDurationHistogram(
                descriptor: MetricNameDescriptor(
                    namespace: "pushgate", metricName: "delivery_latency", unitName: "seconds",
                    helpText: "Time to a push service's final answer"),
                labels: label, buckets: Self.latencyBuckets)
            for action in HandleAction.allCases {
                handleChanges[platform, default: [:]][action] = registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "pushgate", metricName: "handles_\(action.rawValue)", unitName: "total",
                        helpText: "Stored handles changed because of a push service's answer"),
                    labels: label)
            }
        }
        self.deliveries = deliveries
        self.retries = retries
        self.deliveryLatency = latency
        self.handleChanges = handleChanges
    }

    package func requestStarted() { inFlight.increment() }

    package func requestFinished(route: String, method: String, status: Int, duration: Duration) {
        inFlight.decrement()
        let key = "\(route) \(method) \(status)"
        let counter = requestCounters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "pushgate", metricName: "http_requests", unitName: "total", helpText: "HTTP requests served"),
                labels: [("route", route), ("method", method), ("status", String(status))])
            counters[key] = counter
            return counter
        }
        counter.increment()
        let histogram = requestDurations.withLock { histograms in
            if let histogram = histograms[route] { return histogram }
            let histogram = registry.makeDurationHistogram(
                descriptor: MetricNameDescriptor(
                    namespace: "pushgate", metricName: "http_request_duration", unitName: "seconds", helpText: "HTTP request durations"),
                labels: [("route", route)], buckets: Self.latencyBuckets)
            histograms[route] = histogram
            return histogram
        }
        histogram.record(duration)
    }

    /// Counts a send's outcomes (every target), retries, delivery latencies (listed targets) and
    /// handle changes.
    public func sent(_ result: NotificationResult) {
        for summary in result.platforms {
            for (outcome, count) in summary.counts { deliveryCounter(summary.platform, outcome).increment(by: Int64(count)) }
        }
        for target in result.targets {
            if target.attempts > 1 { retries[target.platform]?.increment(by: Int64(target.attempts - 1)) }
            deliveryLatency[target.platform]?.recordNanoseconds(Int64(target.latencyMilliseconds * 1_000_000))
            if let action = target.handleAction { handleChanges[target.platform]?[action]?.increment() }
        }
    }

    /// The counter of one platform and outcome: made at start for the known outcomes.
    private func deliveryCounter(_ platform: Platform, _ outcome: Outcome) -> Counter {
        if let counter = deliveries[platform]?[outcome] { return counter }
        return requestCounters.withLock { counters in
            let key = "notifications \(platform.rawValue) \(outcome.rawValue)"
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "pushgate", metricName: "notifications", unitName: "total", helpText: "Deliveries by platform and outcome"),
                labels: [("platform", platform.rawValue), ("outcome", outcome.rawValue)])
            counters[key] = counter
            return counter
        }
    }

    /// Records how long a send took, from its start to its last outcome.
    public func sendFinished(duration: Duration) { sendDuration.record(duration) }

    /// Counts handle changes (removals, replacements) the store could not apply.
    public func handleUpdatesFailed(_ count: Int) {
        handleUpdatesFailedCounter.increment(by: Int64(count))
    }

    /// What the outbox holds now.
    public func outboxDepth(_ depth: OutboxDepth, now: Timestamp) {
        outboxPending.set(to: Double(depth.pending))
        outboxDue.set(to: Double(depth.due))
        outboxOldestDueAge.set(to: depth.oldestDue.map { max(0, now.secondsSinceEpoch - $0.secondsSinceEpoch) } ?? 0)
    }

    public func outboxPageClaimed(reclaimed: Bool) {
        outboxClaims.increment()
        if reclaimed { outboxLeaseExpiries.increment() }
    }

    public func outboxNotificationTakenOver() { outboxLeaseExpiries.increment() }

    public func outboxPruned(_ count: Int) { outboxPruned.increment(by: Int64(count)) }

    public func outboxRecordFailed() { outboxRecordFailures.increment() }

    public func outboxTargetsDeferred(_ count: Int) { outboxDeferredTargets.increment(by: Int64(count)) }

    public func outboxAnswersRecorded(_ count: Int) { outboxEarlyAnswers.increment(by: Int64(count)) }

    public func outboxPageHelped() { outboxHelpedPages.increment() }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] { registry.emitToBuffer() }
}

extension GatewayMetrics: OutboxMetrics {}
