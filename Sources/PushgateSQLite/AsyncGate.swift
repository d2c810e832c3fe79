import Synchronization

/// A lock for async code: one holder at a time, the others wait their turn (first come, first
/// served) without blocking a thread.
final class AsyncGate: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func acquire() async {
        if state.withLock({ state in
            guard !state.held else { return false }
            state.held = true
            return true
        }) {
            return
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard state.held else {
                    state.held = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Hands the gate to the first waiter, or opens it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
