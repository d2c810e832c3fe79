import Pushgate
import PushgateDispatch
import Synchronization
import Tracing

/// The `outbox.page` spans of one round of a drive: a page's span starts when the page is claimed
/// for delivery, under the span current then (a synchronous send's request, a background drive's
/// `outbox.deliver`), is the context its batch is delivered in (the push-service requests' spans
/// are its children), and ends once the page's outcomes are recorded.
///
/// Attributes: the notification id, the page number and attempt, its targets, and when it ends
/// the outcome counts (`succeeded`, `failed`, `deferred`, and every outcome by name). No handle,
/// no payload.
///
/// Batches are numbered in the order their pages are sent (``DispatchedBatch/index``): the n-th
/// page claimed for delivery in a round is batch n.
final class OutboxPageSpans: Sendable {
    static let name = "outbox.page"

    private struct State {
        var claimed = 0
        var open: [Int: any Span] = [:]
    }

    private let tracing: PushgateTracing
    private let notificationID: String
    private let state = Mutex(State())

    /// nil when tracing is off: the round then does no span bookkeeping at all.
    init?(tracing: PushgateTracing, notificationID: String) {
        guard tracing.isEnabled else { return nil }
        self.tracing = tracing
        self.notificationID = notificationID
    }

    /// A page claimed for delivery: its span starts, as the next batch's.
    func claimed(_ page: OutboxPage) {
        guard let span = tracing.startSpan(Self.name) else { return }
        span.updateAttributes { attributes in
            attributes["pushgate.notification.id"] = notificationID
            attributes["pushgate.outbox.page.number"] = page.number
            attributes["pushgate.outbox.page.attempt"] = page.attempt
            attributes["pushgate.outbox.page.targets"] = page.targets.count
            if page.reclaimed { attributes["pushgate.outbox.page.reclaimed"] = true }
        }
        state.withLock { state in
            state.open[state.claimed] = span
            state.claimed += 1
        }
    }

    /// The context the page claimed last is delivered in (``DispatchWire/send(_:context:)``): its span's.
    func nextContext() -> ServiceContext? {
        state.withLock { $0.open[$0.claimed - 1]?.context }
    }

    /// Batch `batch` is done and its page recorded as `record` says (nil: not recorded, its page is
    /// delivered again). `recorded`: whether the store took the record.
    func finished(_ batch: DispatchedBatch, record: OutboxDrive.PageRecord?, recorded: Bool) {
        guard let span = state.withLock({ $0.open.removeValue(forKey: batch.index) }) else { return }
        var byOutcome: [Outcome: Int] = [:]
        if let record {
            for counts in record.counts.values { byOutcome.merge(counts, uniquingKeysWith: +) }
        } else {
            for report in batch.reports { byOutcome[report.verdict.outcome, default: 0] += 1 }
        }
        let succeeded = byOutcome[.success] ?? 0
        let failed = byOutcome.values.reduce(0, +) - succeeded
        span.updateAttributes { attributes in
            attributes["pushgate.outbox.page.succeeded"] = succeeded
            attributes["pushgate.outbox.page.failed"] = failed
            attributes["pushgate.outbox.page.deferred"] = record?.retry?.targets.count ?? 0
            attributes["pushgate.outbox.page.outcomes"] = byOutcome.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=\($0.value)" }
                .joined(separator: ",")
            attributes["pushgate.outbox.page.recorded"] = recorded
        }
        if !recorded { span.setStatus(SpanStatus(code: .error, message: "the page's outcomes were not recorded")) }
        span.end()
    }

    /// The round is over: pages whose batches never finished (cancelled, the store failed) end
    /// unrecorded.
    func endAll() {
        let open = state.withLock { state in
            defer { state.open.removeAll() }
            return Array(state.open.values)
        }
        for span in open {
            span.attributes["pushgate.outbox.page.recorded"] = false
            span.setStatus(SpanStatus(code: .error, message: "the round ended before the page was delivered"))
            span.end()
        }
    }
}
