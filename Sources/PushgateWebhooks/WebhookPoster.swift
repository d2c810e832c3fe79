import Logging
import Pushgate
import ServiceLifecycle

/// A receiver as the poster reaches it: its URL and its secrets, read.
public struct WebhookEndpoint: Sendable, Hashable {
    public var app: AppID
    public var name: String
    public var url: String
    /// The signing secrets' bytes: the current one first (two while one is rotated).
    public var secrets: [[UInt8]]

    public init(app: AppID, name: String, url: String, secrets: [[UInt8]]) {
        self.app = app
        self.name = name
        self.url = url
        self.secrets = secrets
    }
}

/// Posts stored webhook events to their receivers, off the send path: per receiver, a few
/// workers (``WebhooksConfiguration/concurrencyPerReceiver``) each claim a batch of due events
/// under a lease, post it signed, and record the answer — posted, retried after a backoff (or
/// the receiver's `Retry-After`), or parked once ``WebhooksConfiguration/retryForSeconds`` have
/// passed since the first failure. A parked or retrying event never holds back the ones after it:
/// a claim takes the due ones. Posted events are deleted ``WebhooksConfiguration/keepForSeconds``
/// after they were posted.
///
/// Delivery is at least once: an event whose POST succeeded but whose record failed (or whose
/// poster died before recording it) is posted again, with the same `id`.
public struct WebhookPoster: Service {
    public let store: any WebhookEventStore
    public let endpoints: [WebhookEndpoint]
    public let settings: WebhooksConfiguration
    public let transport: any WebhookTransport
    public let clock: any PushgateClock
    public let metrics: any WebhookMetrics
    /// This instance's name in the events' leases.
    public let owner: String
    public let logger: Logger
    public var retry: WebhookRetry
    /// How often an idle worker looks for due events.
    public var pollInterval: Duration = .milliseconds(250)
    /// How often posted events past their keep time are deleted and the gauges refreshed.
    public var housekeepingInterval: Duration = .seconds(10)

    public init(
        store: any WebhookEventStore, endpoints: [WebhookEndpoint], settings: WebhooksConfiguration, transport: any WebhookTransport,
        clock: any PushgateClock, metrics: any WebhookMetrics = NoWebhookMetrics(), owner: String, logger: Logger
    ) {
        self.store = store
        self.endpoints = endpoints
        self.settings = settings
        self.transport = transport
        self.clock = clock
        self.metrics = metrics
        self.owner = owner
        self.logger = logger
        retry = WebhookRetry(retryForSeconds: Double(settings.retryForSeconds))
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                for endpoint in endpoints {
                    for _ in 0..<settings.concurrencyPerReceiver {
                        group.addTask { await self.work(endpoint) }
                    }
                }
                group.addTask { await self.keepHouse() }
            }
        }
        await transport.shutdown()
    }

    /// One worker: posts batches while there are due events, else waits a poll interval.
    func work(_ endpoint: WebhookEndpoint) async {
        while !Task.isCancelled {
            let posted = await postNext(endpoint)
            if !posted { try? await Task.sleep(for: pollInterval) }
        }
    }

    /// Claims and posts one claim's batches; whether there was anything to post.
    @discardableResult
    public func postNext(_ endpoint: WebhookEndpoint) async -> Bool {
        let now = clock.now
        let claimed: [WebhookDelivery]
        do {
            claimed = try await store.claimWebhookEvents(
                app: endpoint.app, receiver: endpoint.name, owner: owner,
                until: now.adding(seconds: Double(settings.timeoutSeconds) * 2 + 5),
                now: now, limit: settings.batchMaximumEvents)
        } catch {
            logger.warning("webhooks: cannot claim events", metadata: ["receiver": "\(endpoint.name)", "error": "\(error)"])
            return false
        }
        guard !claimed.isEmpty else { return false }
        var batches = WebhookBatch.split(claimed, maximumBytes: settings.batchMaximumBytes)[...]
        while let batch = batches.popFirst() {
            let answer = await post(batch.body, to: endpoint)
            if answer.isSuccess {
                await record { () throws(StoreError) in
                    try await store.webhookEventsPosted(app: endpoint.app, sequences: batch.sequences, now: clock.now)
                }
                metrics.webhookEventsPosted(batch.deliveries.count, receiver: endpoint.name)
                continue
            }
            // The receiver failed: this batch and the rest of the claim wait for the next try.
            metrics.webhookPostFailed(receiver: endpoint.name)
            let waiting = batch.deliveries + batches.flatMap(\.deliveries)
            let next = retry.next(
                attempts: waiting.map(\.attempts).max() ?? 0, firstFailedAt: waiting.compactMap(\.firstFailedAt).min(), now: clock.now,
                retryAfter: answer.retryAfter)
            await record { () throws(StoreError) in
                try await store.webhookEventsFailed(
                    app: endpoint.app, sequences: waiting.map(\.row.sequence), error: answer.description, retryAt: next, now: clock.now)
            }
            if next == nil {
                metrics.webhookEventsParked(waiting.count, receiver: endpoint.name)
                logger.warning(
                    "webhooks: events parked after their retry time",
                    metadata: ["receiver": "\(endpoint.name)", "events": "\(waiting.count)", "answer": "\(answer)"])
            } else {
                logger.info("webhooks: post failed; retrying", metadata: ["receiver": "\(endpoint.name)", "answer": "\(answer)"])
            }
            break
        }
        return true
    }

    /// POSTs `body` to `endpoint`, signed with each of its secrets.
    public func post(_ body: [UInt8], to endpoint: WebhookEndpoint) async -> WebhookAnswer {
        let timestamp = Int64(clock.now.secondsSinceEpoch.rounded(.down))
        return await transport.post(
            url: endpoint.url,
            headers: [
                ("Content-Type", "application/json"), ("User-Agent", "Pushgate-Webhooks/1"),
                (WebhookSignature.headerName, WebhookSignature.header(timestamp: timestamp, body: body, secrets: endpoint.secrets)),
            ], body: body)
    }

    /// Posts a `ping` event (not stored) to `endpoint`: `pushgate webhooks test`.
    public func ping(_ endpoint: WebhookEndpoint) async -> WebhookAnswer {
        let event = WebhookEvent.ping(app: endpoint.app, receiver: endpoint.name, now: clock.now)
        let row = StoredOutboxRow(
            sequence: 0, notificationID: "", page: 0, row: OutboxRecordRow(kind: "", body: event.body(fullHandles: false)))
        return await post(WebhookBatch([WebhookDelivery(row: row)]).body, to: endpoint)
    }

    private func record(_ write: () async throws(StoreError) -> Void) async {
        do { try await write() } catch {
            // The lease expires and the events are posted again (at least once).
            logger.error("webhooks: cannot record a post's answer", metadata: ["error": "\(error)"])
        }
    }

    private func keepHouse() async {
        let apps = Set(endpoints.map(\.app))
        while !Task.isCancelled {
            do {
                let before = clock.now.adding(seconds: -Double(settings.keepForSeconds))
                while try await store.pruneWebhookEvents(postedBefore: before, limit: 1000) == 1000 {}
                for app in apps { metrics.webhookEventsWaiting(try await store.webhookEventCounts(app: app), app: app) }
            } catch {
                logger.warning("webhooks: housekeeping failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: housekeepingInterval)
        }
    }
}
