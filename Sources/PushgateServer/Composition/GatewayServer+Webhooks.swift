import Logging
import Prometheus
import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateGateway
import PushgateWebhooks

extension GatewayServer {
    /// The poster of every app's outcome webhooks, nil when no app has a receiver. Secrets are
    /// read here: one that cannot be read stops the start, naming its receiver.
    static func makeWebhookPoster(
        configuration: PushgateConfiguration, apps: [LoadedApp], store: any GatewayStore, secrets: SecretResolver,
        clock: any PushgateClock, metrics: GatewayMetrics, owner: String, logger: Logger
    ) throws -> WebhookPoster? {
        var endpoints: [WebhookEndpoint] = []
        for app in apps {
            for (index, receiver) in app.configuration.webhooks.enumerated() {
                var keys: [[UInt8]] = []
                for (position, secret) in receiver.secrets.enumerated() {
                    do {
                        let text = try secrets.resolve(secret)
                        var trimmed = Substring(text)
                        while trimmed.last == "\n" || trimmed.last == "\r" { trimmed = trimmed.dropLast() }
                        guard !trimmed.isEmpty else { throw GatewayError(.misconfigured, "is empty") }
                        keys.append(Array(trimmed.utf8))
                    } catch {
                        throw GatewayError(
                            .misconfigured,
                            "apps.\(app.id).webhooks.receivers[\(index)].\(position == 0 ? "secret" : "previousSecret"): \(error)")
                    }
                }
                endpoints.append(WebhookEndpoint(app: app.id, name: receiver.name, url: receiver.url, secrets: keys))
            }
        }
        guard !endpoints.isEmpty else { return nil }
        let settings = configuration.webhooks
        let transport: CurlWebhookTransport
        do {
            transport = try CurlWebhookTransport(
                settings: settings, caFile: settings.caFile.map { ConfigurationLoader.resolve($0, against: secrets.baseDirectory) },
                outbound: OutboundGuard(clock: clock))
        } catch {
            throw GatewayError(.misconfigured, "webhooks: cannot start the HTTP client: \(error)")
        }
        var posterLogger = logger
        posterLogger[metadataKey: "part"] = "webhooks"
        return WebhookPoster(
            store: store, endpoints: endpoints, settings: settings, transport: transport, clock: clock,
            metrics: GatewayWebhookMetrics(metrics: metrics), owner: owner,
            logger: posterLogger)
    }
}

/// The poster's counts in the gateway's registry (`pushgate_webhook_…`).
struct GatewayWebhookMetrics: WebhookMetrics {
    let metrics: GatewayMetrics
    var registry: PrometheusCollectorRegistry { metrics.registry }

    private func webhookCounter(_ name: String, _ help: String, receiver: String) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(namespace: "pushgate", metricName: "webhook_\(name)", unitName: "total", helpText: help),
            labels: [("receiver", receiver)])
    }

    func webhookEventsPosted(_ count: Int, receiver: String) {
        webhookCounter("events_posted", "Webhook events a receiver accepted (2xx)", receiver: receiver).increment(by: Int64(count))
    }

    func webhookPostFailed(receiver: String) {
        webhookCounter("post_failures", "Webhook POSTs that failed (no answer or not 2xx)", receiver: receiver).increment()
    }

    func webhookEventsParked(_ count: Int, receiver: String) {
        webhookCounter("events_parked", "Webhook events parked after their retry time", receiver: receiver).increment(by: Int64(count))
    }

    func webhookEventsWaiting(_ counts: WebhookEventCounts, app: AppID) {
        for (name, value, help) in [
            ("pending_events", counts.pending, "Webhook events stored and not yet posted (retrying ones included)"),
            ("parked_events", counts.parked, "Webhook events parked (retries ran out); `pushgate webhooks retry` makes them due"),
        ] {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(namespace: "pushgate", metricName: "webhook_\(name)", unitName: "", helpText: help),
                labels: [("app", app.rawValue)]
            ).set(to: Double(value))
        }
    }
}
