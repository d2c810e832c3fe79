import Pushgate
import Tracing

/// Where a gateway's spans go, and which push-service requests get one: passed from the
/// composition root to the router, the dispatcher (and through it the outbox driver) and the
/// providers. Nothing here is process-global, so gateways in one process trace apart.
///
/// ``off``, everywhere's default, makes no span: the paths it reaches test ``isEnabled`` and do
/// nothing else.
///
/// ```swift
/// let tracing = PushgateTracing(tracer: otelTracer, pushRequestSampleRatio: 0.01)
/// if let span = tracing.startSpan("outbox.page") { defer { span.end() } … }
/// ```
public struct PushgateTracing: Sendable {
    public let tracer: any Tracer
    /// The share of push-service requests traced besides the first of each batch (0 to 1).
    public let pushRequestSampleRatio: Double
    /// False for ``off`` (a `NoOpTracer`): no span is started, no context read.
    public let isEnabled: Bool

    public init(tracer: any Tracer, pushRequestSampleRatio: Double) {
        self.tracer = tracer
        self.pushRequestSampleRatio = min(1, max(0, pushRequestSampleRatio))
        isEnabled = !(tracer is NoOpTracer)
    }

    /// No tracing.
    public static let off = PushgateTracing(tracer: NoOpTracer(), pushRequestSampleRatio: 0)

    /// A span under `context` (the task's current one when nil: the request's or the page's), or
    /// nil when tracing is off. The caller ends it.
    public func startSpan(_ name: String, context: ServiceContext? = nil, ofKind kind: SpanKind = .internal) -> (any Span)? {
        guard isEnabled else { return nil }
        return tracer.startSpan(name, context: context ?? ServiceContext.current ?? .topLevel, ofKind: kind)
    }

    /// The spans of one push service's requests.
    func pushRequests(service: String) -> PushRequestSpans { PushRequestSpans(tracing: self, service: service) }
}

/// The push-service request spans of one provider: `push.request`, a client span per device
/// delivery (its retries included), child of the span current when the batch went out (the
/// outbox page's).
///
/// Sampled: the first request of every batch always, every other one with probability
/// ``PushgateTracing/pushRequestSampleRatio``; none at ratio 0. Attributes: the service, the last
/// HTTP status, the outcome and the retry count; never the handle, the URL (it holds the token
/// for WNS and Web Push), the payload, the service's reason text or a credential.
struct PushRequestSpans: Sendable {
    static let name = "push.request"

    let tracing: PushgateTracing
    /// `apns`, `fcm`, `gcm` (the legacy API), `wns` or `webpush`.
    let service: String

    static let off = PushRequestSpans(tracing: .off, service: "")

    /// Spans for a batch of `count` requests, sampled, under the current context; empty when
    /// tracing (or sampling) is off.
    func start(_ count: Int) -> [(any Span)?] {
        guard tracing.isEnabled, tracing.pushRequestSampleRatio > 0, count > 0 else { return [] }
        let context = ServiceContext.current ?? .topLevel
        return (0..<count).map { start(first: $0 == 0, context: context) }
    }

    /// A span for one request when it is sampled.
    func start(first: Bool, context: ServiceContext? = nil) -> (any Span)? {
        let ratio = tracing.pushRequestSampleRatio
        guard tracing.isEnabled, ratio > 0, first || ratio >= 1 || Double.random(in: 0..<1) < ratio else { return nil }
        let span = tracing.tracer.startSpan(Self.name, context: context ?? ServiceContext.current ?? .topLevel, ofKind: .client)
        span.attributes["pushgate.push.service"] = service
        return span
    }

    /// Ends `span` with a delivery's final word.
    static func end(_ span: (any Span)?, verdict: DeliveryVerdict, attempts: Int) {
        guard let span else { return }
        span.updateAttributes { attributes in
            if let status = verdict.statusCode { attributes["http.response.status_code"] = status }
            attributes["pushgate.push.outcome"] = verdict.outcome.rawValue
            attributes["pushgate.push.retries"] = max(0, attempts - 1)
        }
        if !verdict.outcome.isSuccess { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }

    /// Ends the span of a request to many devices at once (legacy GCM: up to 1,000 tokens), its
    /// retries of the tokens the service called transient included: the outcome when every
    /// device has the same one, the count of devices and of successes, the rounds after the first.
    static func end(_ span: (any Span)?, multicast verdicts: [DeliveryVerdict], lastStatus: Int?, rounds: Int) {
        guard let span else { return }
        let succeeded = verdicts.count(where: \.outcome.isSuccess)
        span.updateAttributes { attributes in
            if let lastStatus { attributes["http.response.status_code"] = lastStatus }
            if let outcome = verdicts.first?.outcome, verdicts.allSatisfy({ $0.outcome == outcome }) {
                attributes["pushgate.push.outcome"] = outcome.rawValue
            }
            attributes["pushgate.push.retries"] = max(0, rounds - 1)
            attributes["pushgate.push.targets"] = verdicts.count
            attributes["pushgate.push.succeeded"] = succeeded
        }
        if succeeded < verdicts.count { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }
}
