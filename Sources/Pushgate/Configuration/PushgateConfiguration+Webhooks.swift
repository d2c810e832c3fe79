/// Outcome webhooks in `config.json`: the gateway-wide `webhooks` settings and each app's
/// `webhooks.receivers`.
extension PushgateConfiguration {
    static func decodeWebhooks(_ object: inout JSONObjectReader) throws(ConfigurationError) -> WebhooksConfiguration {
        var webhooks = WebhooksConfiguration()
        if let hosts = try object.stringArray("allowedHosts") {
            for (index, entry) in hosts.enumerated() {
                let pattern = entry.lowercased().hasPrefix("http://") ? String(entry.dropFirst("http://".count)) : entry
                if let problem = HandlePolicy.wnsChannelHostProblem(pattern) {
                    throw object.error(
                        "\(problem) (entries: *.domain, host, host:port, or http://host:port for plain HTTP to exactly that host and port)",
                        key: "allowedHosts", index: index)
                }
                if entry.lowercased().hasPrefix("http://"), !pattern.contains(":") || pattern.hasPrefix("*") {
                    throw object.error(
                        "plain HTTP is allowed only to an exact host:port (http://127.0.0.1:8080)", key: "allowedHosts", index: index)
                }
            }
            webhooks.allowedHosts = hosts
        }
        webhooks.retryForSeconds = try object.int("retryForSeconds", in: 1...(30 * 86_400)) ?? webhooks.retryForSeconds
        webhooks.keepForSeconds = try object.int("keepForSeconds", in: 0...(366 * 86_400)) ?? webhooks.keepForSeconds
        webhooks.batchMaximumEvents = try object.int("batchMaxEvents", in: 1...10_000) ?? webhooks.batchMaximumEvents
        webhooks.batchMaximumBytes =
            try object.int("batchMaxBytes", in: OutboxRecordRow.maximumBodyBytes...(16 << 20)) ?? webhooks.batchMaximumBytes
        webhooks.concurrencyPerReceiver = try object.int("concurrencyPerReceiver", in: 1...64) ?? webhooks.concurrencyPerReceiver
        webhooks.timeoutSeconds = try object.int("timeoutSeconds", in: 1...600) ?? webhooks.timeoutSeconds
        webhooks.caFile = try object.string("caFile")
        try object.finish(expected: [
            "allowedHosts", "retryForSeconds", "keepForSeconds", "batchMaxEvents", "batchMaxBytes", "concurrencyPerReceiver",
            "timeoutSeconds", "caFile",
        ])
        return webhooks
    }

    /// An app's `webhooks`: `{"receivers": [...]}`, each URL checked against the gateway's allow-list.
    static func decodeAppWebhooks(
        _ object: inout JSONObjectReader, gateway: WebhooksConfiguration
    ) throws(ConfigurationError) -> [WebhookReceiverConfiguration] {
        guard let list = object.raw("receivers") else {
            try object.finish(expected: ["receivers"])
            return []
        }
        guard let elements = list.arrayElements else { throw object.error("expected an array of receivers", key: "receivers") }
        var receivers: [WebhookReceiverConfiguration] = []
        for (index, element) in elements.enumerated() {
            var receiver = try JSONObjectReader(element, path: "\(jsonPath(object.path, "receivers"))[\(index)]", source: object.source)
            let name = try receiver.requiredString("name")
            guard WebhookReceiverConfiguration.isValidName(name) else {
                throw receiver.error("'\(name.prefix(60))' must be 1 to 64 letters, digits, '-', '.' or '_'", key: "name")
            }
            if receivers.contains(where: { $0.name == name }) {
                throw receiver.error("receiver '\(name)' is configured twice", key: "name")
            }
            let url = try receiver.requiredString("url")
            let canonical: String
            switch gateway.checkReceiverURL(url) {
            case .success(let checked): canonical = checked
            case .failure(let refusal):
                throw receiver.error(
                    "'\(url.prefix(120))' is refused: \(refusal.reason) (webhooks.allowedHosts admits receiver hosts)", key: "url")
            }
            var secrets = [try receiver.requiredSecret("secret")]
            if let previous = try receiver.secret("previousSecret") { secrets.append(previous) }
            guard let names = try receiver.stringArray("events"), !names.isEmpty else {
                throw receiver.error("missing required key 'events' (a non-empty array of \(WebhookEventType.names))")
            }
            var events = Set<WebhookEventType>()
            for (position, name) in names.enumerated() {
                guard let type = WebhookEventType(rawValue: name) else {
                    throw receiver.error(
                        "unknown event kind '\(name.prefix(40))'; expected one of \(WebhookEventType.names)", key: "events", index: position
                    )
                }
                events.insert(type)
            }
            let fullHandles = try receiver.bool("fullHandles") ?? false
            let rate = try receiver.number("deliveryFailedSampleRate", in: 0...1) ?? 1
            try receiver.finish(expected: ["name", "url", "secret", "previousSecret", "events", "fullHandles", "deliveryFailedSampleRate"])
            receivers.append(
                WebhookReceiverConfiguration(
                    name: name, url: canonical, secrets: secrets, events: events, fullHandles: fullHandles, deliveryFailedSampleRate: rate))
        }
        try object.finish(expected: ["receivers"])
        return receivers
    }
}
