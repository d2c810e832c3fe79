/// The one polling helper of the test suites: reads `probe` until `done` holds for what it
/// answered, or `timeout` has passed; the last answer either way, so that the test's own
/// `#expect` on it says what was wrong.
///
/// Polling is for what a test cannot step itself (another process, a socket, a sandbox on its
/// own event loop). Never follow it with a sleep and an assertion that nothing happened: assert
/// on recorded state (a notification's final telemetry, the store) instead.
///
/// ```swift
/// let inbox = try await eventually { await sandbox.state.inbox(deviceID: id) } until: { $0.count >= 2 }
/// ```
public func eventually<Value>(
    timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(100), _ probe: () async throws -> Value,
    until done: (Value) -> Bool
) async throws -> Value {
    let deadline = ContinuousClock.now + timeout
    while true {
        let value = try await probe()
        if done(value) || ContinuousClock.now >= deadline { return value }
        try await Task.sleep(for: interval)
    }
}

/// ``eventually(timeout:every:_:until:)`` for a condition: whether it held before `timeout`.
public func eventually(
    timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(100), _ condition: () async throws -> Bool
) async throws -> Bool {
    try await eventually(timeout: timeout, every: interval, condition, until: { $0 })
}
