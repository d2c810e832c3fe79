import Hummingbird
import Pushgate
import PushgateGateway
import PushgateWebhooks

/// The app's outcome webhooks for admins (`/api/webhooks/…`): parked events and the counts
/// waiting, retrying parked events, and a `ping` to the receivers (`pushgate webhooks
/// list|retry|test`).
struct WebhooksAPI: Sendable {
    let gateway: Gateway
    /// Posts the pings; nil when no app has a receiver.
    let poster: WebhookPoster?

    func add(to api: RouteCollection<GatewayContext>) {
        api.get("webhooks/parked", use: parked)
        api.post("webhooks/retry", use: retry)
        api.post("webhooks/test", use: test)
    }

    /// A parked event: where it was going, why it stopped, and the event as it is posted.
    struct ParkedEvent: Encodable, Sendable {
        var sequence: Int64
        var receiver: String
        var notification: String
        var attempts: Int
        var parkedAt: Double?
        var lastError: String?
        /// The event's JSON, as it is posted.
        var event: String
    }

    struct Parked: Encodable, Sendable {
        var pending: Int
        var parked: Int
        var events: [ParkedEvent]
    }

    struct Retried: Encodable, Sendable {
        var retried: Int
    }

    struct Ping: Encodable, Sendable {
        var receiver: String
        var url: String
        /// The receiver's HTTP status; absent when it could not be reached.
        var status: Int?
        var ok: Bool
        var answer: String
    }

    /// `GET /api/webhooks/parked?limit=100&after=0`: parked events, oldest first, and the counts.
    @Sendable func parked(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<Parked> {
        try ChannelsAPI.admin(context)
        let query = try QueryParameters(request.uri, accepting: ["limit", "after"])
        let limit = try Self.integer(query, "limit", in: 1...1000) ?? 100
        let after = try Self.integer(query, "after", in: 0...Int.max) ?? 0
        let store = gateway.store
        let app = gateway.appID
        let events = try await store.parkedWebhookEvents(app: app, after: Int64(after), limit: limit)
        let counts = try await store.webhookEventCounts(app: app)
        return JSONAnswer(
            Parked(
                pending: counts.pending, parked: counts.parked,
                events: events.map {
                    ParkedEvent(
                        sequence: $0.row.sequence, receiver: $0.receiver, notification: $0.row.notificationID, attempts: $0.attempts,
                        parkedAt: $0.parkedAt?.secondsSinceEpoch, lastError: $0.lastError,
                        event: WebhookEvent.posted(body: $0.row.row.body, sequence: $0.row.sequence))
                }))
    }

    /// `POST /api/webhooks/retry` (every parked event) or `?sequence=42` (one): due again, with fresh retries.
    @Sendable func retry(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<Retried> {
        try ChannelsAPI.admin(context)
        let query = try QueryParameters(request.uri, accepting: ["sequence"])
        let sequence = try Self.integer(query, "sequence", in: 1...Int.max)
        let retried = try await gateway.store.retryParkedWebhookEvents(
            app: gateway.appID, sequences: sequence.map { [Int64($0)] }, now: SystemClock().now)
        return JSONAnswer(Retried(retried: retried))
    }

    /// `POST /api/webhooks/test` (every receiver of the app) or `?receiver=name`: posts a `ping`
    /// event (not stored) and answers what each receiver said.
    @Sendable func test(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<[Ping]> {
        try ChannelsAPI.admin(context)
        let query = try QueryParameters(request.uri, accepting: ["receiver"])
        let name = query.get("receiver")
        let endpoints = (poster?.endpoints ?? []).filter { $0.app == gateway.appID && (name == nil || $0.name == name) }
        guard let poster, !endpoints.isEmpty else {
            throw GatewayError.notFound(
                name.map { "no webhook receiver '\($0.prefix(64))' in app \(gateway.appID)" }
                    ?? "app \(gateway.appID) has no webhook receiver")
        }
        var pings: [Ping] = []
        for endpoint in endpoints {
            let answer = await poster.ping(endpoint)
            pings.append(
                Ping(receiver: endpoint.name, url: endpoint.url, status: answer.status, ok: answer.isSuccess, answer: answer.description))
        }
        return JSONAnswer(pings)
    }

    static func integer(_ query: QueryParameters, _ name: String, in range: ClosedRange<Int>) throws(GatewayError) -> Int? {
        guard query.has(name) else { return nil }
        guard let text = query.get(name), let value = Int(text), range.contains(value) else {
            throw .badRequest("\(name) must be a whole number in \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }
}
