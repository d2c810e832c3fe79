import Pushgate
import PushgateDispatch
import Synchronization

/// A push service in memory: answers each target with what `answer` says for its handle
/// (`Success` unless told otherwise) and records every delivery, so that outbox and send tests
/// run without sockets. While ``hold()`` is in force, deliveries wait for ``release()`` or their
/// task's cancellation (then their targets are `Abandoned`, as a real provider answers what it
/// did not send). `hold(answering:)` lets each held delivery answer its first targets at once
/// (they reach ``PushProvider/deliver(_:to:answers:)``'s `answers` early, as a real provider's
/// first answers do while the rest of the batch is on the wire).
public final class InMemoryPushProvider: PushProvider {
    public let platform: Platform
    private let answer: @Sendable (DispatchTarget) -> DeliveryVerdict

    private struct State {
        var delivered: [String: Int] = [:]
        var received: [String: [RenderedNotification]] = [:]
        var deliveries = 0
        var held = false
        var answeredWhileHeld = 0
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
        var shutdowns = 0
    }

    private let state = Mutex(State())

    public init(
        _ platform: Platform = .apns,
        answer: @escaping @Sendable (DispatchTarget) -> DeliveryVerdict = { _ in DeliveryVerdict(outcome: .success) }
    ) {
        self.platform = platform
        self.answer = answer
    }

    public func deliver(
        _ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?
    ) async -> [DeliveryReport] {
        let (number, early) = state.withLock { state -> (Int, Int) in
            state.deliveries += 1
            return (state.deliveries, state.held ? min(state.answeredWhileHeld, targets.count) : 0)
        }
        // Answered before the hold: delivered, and handed out at once.
        let first = targets.prefix(early).map { DeliveryReport(target: $0, verdict: answer($0), attempts: 1, latencyMilliseconds: 0) }
        count(first, notification)
        for report in first { answers?.record(report) }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let go = state.withLock { state -> Bool in
                    guard state.held, !Task.isCancelled else { return true }
                    state.waiting[number] = continuation
                    return false
                }
                if go { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: number) }?.resume()
        }
        if Task.isCancelled {
            return first
                + targets.dropFirst(early).map {
                    DeliveryReport(
                        target: $0, verdict: DeliveryVerdict(outcome: .abandoned, reason: "cancelled"), attempts: 0, latencyMilliseconds: 0)
                }
        }
        let rest = targets.dropFirst(early).map { DeliveryReport(target: $0, verdict: answer($0), attempts: 1, latencyMilliseconds: 0) }
        count(rest, notification)
        return first + rest
    }

    private func count(_ reports: [DeliveryReport], _ notification: RenderedNotification) {
        state.withLock { state in
            for report in reports where report.verdict.outcome.isSuccess {
                state.delivered[report.target.handle.value, default: 0] += 1
                state.received[report.target.handle.value, default: []].append(notification)
            }
        }
    }

    /// What `handle` received, in order (kept for tests: every notification delivered).
    public func received(by handle: String) -> [RenderedNotification] { state.withLock { $0.received[handle] ?? [] } }

    /// How often each handle was delivered to (successfully).
    public var delivered: [String: Int] { state.withLock { $0.delivered } }

    /// Deliveries started so far (one per batch of a platform).
    public var deliveries: Int { state.withLock { $0.deliveries } }

    /// Deliveries waiting for ``release()``.
    public var waiting: Int { state.withLock { $0.waiting.count } }

    /// Makes deliveries wait; each answers its first `answering` targets before it waits.
    public func hold(answering: Int = 0) {
        state.withLock { state in
            state.held = true
            state.answeredWhileHeld = answering
        }
    }

    /// Lets every delivery go.
    public func release() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.held = false
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Times ``shutdown()`` was called.
    public var shutdowns: Int { state.withLock { $0.shutdowns } }

    public func shutdown() async {
        state.withLock { $0.shutdowns += 1 }
        release()
    }
}
