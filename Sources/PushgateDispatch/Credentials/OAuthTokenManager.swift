import Pushgate

/// An OAuth access token kept until shortly before it expires, fetched by one request at a time
/// however many callers ask (FCM service accounts, WNS client credentials).
public actor OAuthTokenManager {
    /// Fetches a new token: its value and lifetime in seconds.
    public typealias Fetch = @Sendable () async throws -> (token: String, expiresIn: Double)

    private let fetch: Fetch
    private let clock: any PushgateClock
    private var current: (token: String, expiresAt: Double)?
    private var inFlight: Task<String, any Error>?
    /// How many tokens were fetched (diagnostics and tests).
    public private(set) var fetchCount = 0

    public init(clock: any PushgateClock, fetch: @escaping Fetch) {
        self.clock = clock
        self.fetch = fetch
    }

    /// A valid token: the cached one until a minute (or a tenth of its life) before it expires.
    public func token() async throws -> String {
        if let current, clock.now.secondsSinceEpoch < current.expiresAt { return current.token }
        return try await fetchOnce()
    }

    /// The service refused `token`: fetch a new one unless another caller already did.
    public func refresh(after token: String) async throws -> String {
        if let current, current.token != token, clock.now.secondsSinceEpoch < current.expiresAt { return current.token }
        current = nil
        return try await fetchOnce()
    }

    /// One fetch at a time: callers arriving while a fetch runs wait for its result.
    private func fetchOnce() async throws -> String {
        if let inFlight { return try await inFlight.value }
        // Shared with the callers that arrive while it fetches (`inFlight`), so that one caller's
        // cancellation does not fail the others. It ends when `fetch` does: a request on the
        // provider's transport, bounded by its timeouts and failed at once by its shutdown.
        let task = Task<String, any Error> {
            let (token, lifetime) = try await fetch()
            store(token, lifetime: lifetime)
            return token
        }
        inFlight = task
        defer { inFlight = nil }
        return try await task.value
    }

    private func store(_ token: String, lifetime: Double) {
        let margin = min(60, lifetime / 10)
        current = (token, clock.now.secondsSinceEpoch + lifetime - margin)
        fetchCount += 1
    }
}
