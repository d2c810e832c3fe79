import Foundation
import Hummingbird
import Prometheus
import Pushgate

/// The gateway's Prometheus metrics, in a registry of its own (several gateways can live in one
/// process, as in tests).
public final class GatewayMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let inFlight: Gauge
    private let handleUpdatesFailedCounter: Counter

    static let latencyBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]

    public init() {
        inFlight = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "pushgate", metricName: "http_requests_in_flight", unitName: "", helpText: "HTTP requests being served"))
        handleUpdatesFailedCounter = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "pushgate", metricName: "handle_updates_failed", unitName: "total",
                helpText: "Handle removals and replacements the store could not apply"))
    }

    func requestStarted() { inFlight.increment() }

    func requestFinished(route: String, method: String, status: Int, duration: Duration) {
        inFlight.decrement()
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "pushgate", metricName: "http_requests", unitName: "total", helpText: "HTTP requests served"),
            labels: [("route", route), ("method", method), ("status", String(status))]
        ).increment()
        registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "pushgate", metricName: "http_request_duration", unitName: "seconds", helpText: "HTTP request durations"),
            labels: [("route", route)], buckets: Self.latencyBuckets
        ).recordNanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Counts a send's outcomes (every target), retries, delivery latencies (listed targets) and
    /// handle changes.
    func sent(_ result: NotificationResult) {
        for summary in result.platforms {
            for (outcome, count) in summary.counts {
                registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "pushgate", metricName: "notifications", unitName: "total",
                        helpText: "Deliveries by platform and outcome"),
                    labels: [("platform", summary.platform.rawValue), ("outcome", outcome.rawValue)]
                ).increment(by: Int64(count))
            }
        }
        for target in result.targets {
            let platform = [("platform", target.platform.rawValue)]
            if target.attempts > 1 {
                registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "pushgate", metricName: "delivery_retries", unitName: "total", helpText: "Retried delivery attempts"),
                    labels: platform
                ).increment(by: Int64(target.attempts - 1))
            }
            registry.makeDurationHistogram(
                descriptor: MetricNameDescriptor(
                    namespace: "pushgate", metricName: "delivery_latency", unitName: "seconds",
                    helpText: "Time to a push service's final answer"),
                labels: platform, buckets: Self.latencyBuckets
            ).recordNanoseconds(Int64(target.latencyMilliseconds * 1_000_000))
            if let action = target.handleAction {
                registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "pushgate", metricName: "handles_\(action.rawValue)", unitName: "total",
                        helpText: "Stored handles changed because of a push service's answer"),
                    labels: platform
                ).increment()
            }
        }
    }

    /// Counts handle changes (removals, replacements) the store could not apply.
    func handleUpdatesFailed(_ count: Int) {
        handleUpdatesFailedCounter.increment(by: Int64(count))
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] { registry.emitToBuffer() }
}

/// Counts every request and its duration.
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        metrics.requestStarted()
        let started = ContinuousClock.now
        let route = context.endpointPath ?? "unmatched"
        do {
            let response = try await next(request, context)
            metrics.requestFinished(
                route: context.endpointPath ?? route, method: request.method.rawValue, status: response.status.code,
                duration: ContinuousClock.now - started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            metrics.requestFinished(route: route, method: request.method.rawValue, status: status, duration: ContinuousClock.now - started)
            throw error
        }
    }
}
