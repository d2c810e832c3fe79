import Pushgate
import PushgateDispatch
import Synchronization

/// A push service in memory: answers each target with what `answer` says for its handle
/// (`Success` unless told otherwise) and records every delivery, so that outbox and send tests
/// run without sockets. While ``hold()`` is in force, deliveries wait for ``release()`` or their
/// task's cancellation (then their targets are `Abandoned`, as a real provider answers what it
/// did not send).
public final class InMemoryPushProvider: PushProvider {
    public let platform: Platform
    private let answer: @Sendable (DispatchTarget) -> DeliveryVerdict

    private struct State {
        var delivered: [String: Int] = [:]
        var deliveries = 0
        var held = false
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init(
        _ platform: Platform = .apns,
        answer: @escaping @Sendable (DispatchTarget) -> DeliveryVerdict = { _ in DeliveryVerdict(outcome: .success) }
    ) {
        self.platform = platform
        self.answer = answer
    }

    public func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget]) async -> [DeliveryReport] {
        let number = state.withLock { state -> Int in
            state.deliveries += 1
            return state.deliveries
        }
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
            return targets.map {
                DeliveryReport(
                    target: $0, verdict: DeliveryVerdict(outcome: .abandoned, reason: "cancelled"), attempts: 0, latencyMilliseconds: 0)
            }
        }
        let reports = targets.map { DeliveryReport(target: $0, verdict: answer($0), attempts: 1, latencyMilliseconds: 0) }
        state.withLock { state in
            for report in reports where report.verdict.outcome.isSuccess { state.delivered[report.target.handle.value, default: 0] += 1 }
        }
        return reports
    }

    /// How often each handle was delivered to (successfully).
    public var delivered: [String: Int] { state.withLock { $0.delivered } }

    /// Deliveries started so far (one per batch of a platform).
    public var deliveries: Int { state.withLock { $0.deliveries } }

    /// Deliveries waiting for ``release()``.
    public var waiting: Int { state.withLock { $0.waiting.count } }

    /// Makes deliveries wait.
    public func hold() { state.withLock { $0.held = true } }

    /// Lets every delivery go.
    public func release() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.held = false
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume() }
    }

    public func shutdown() async { release() }
}
