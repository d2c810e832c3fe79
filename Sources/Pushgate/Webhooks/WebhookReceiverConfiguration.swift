/// One receiver of an app's outcome webhooks (`apps.<app>.webhooks.receivers[]` in `config.json`).
///
/// ```json
/// {"name": "backend", "url": "https://hooks.example.com/pushgate",
///  "secrets": [{"env": "PUSHGATE_WEBHOOK_SECRET"}],
///  "events": ["registration.pruned", "delivery.failed"], "fullHandles": false, "deliveryFailedSampleRate": 0.1}
/// ```
public struct WebhookReceiverConfiguration: Sendable, Hashable {
    /// The receiver's name, unique in its app: its events are stored under it.
    public var name: String
    /// Where events are posted: `https://` on a host the gateway's `webhooks.allowedHosts` admits.
    public var url: String
    /// The signing secrets: one, or two while a secret is rotated (each signs: two `v1=` values).
    public var secrets: [SecretSource]
    /// The event kinds it wants (`ping` is posted whatever it asks for).
    public var events: Set<WebhookEventType>
    /// Whether handles are sent whole; masked by default (a handle is a credential of a sort).
    public var fullHandles: Bool
    /// The share of `delivery.failed` events stored, from 0 to 1 (default 1: all). Which failures
    /// are kept is decided by the notification and registration ids, so it is the same on a retry.
    public var deliveryFailedSampleRate: Double

    public init(
        name: String, url: String, secrets: [SecretSource], events: Set<WebhookEventType>, fullHandles: Bool = false,
        deliveryFailedSampleRate: Double = 1
    ) {
        self.name = name
        self.url = url
        self.secrets = secrets
        self.events = events
        self.fullHandles = fullHandles
        self.deliveryFailedSampleRate = deliveryFailedSampleRate
    }

    /// Whether `text` is a valid receiver name: 1 to 64 letters, digits, `-`, `.` or `_`.
    public static func isValidName(_ text: String) -> Bool {
        (1...64).contains(text.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }
    }
}

/// The gateway-wide settings of outcome webhooks (`webhooks` at the top of `config.json`).
public struct WebhooksConfiguration: Sendable, Hashable {
    /// The receiver hosts URLs may name, in `handles.webPushHosts`' syntax (`*.domain`, `host`,
    /// `host:port`). A private or loopback address is reached only through an exact `host:port`
    /// entry. An entry `http://host:port` admits plain HTTP to exactly that host and port: for
    /// tests and a receiver on the same machine, never for a public host.
    public var allowedHosts: [String] = []
    /// How long an event is retried (with backoff, honouring `Retry-After`) before it is parked. Default one day.
    public var retryForSeconds: Int = 86_400
    /// How long a posted event is kept before it is deleted. Default seven days.
    public var keepForSeconds: Int = 7 * 86_400
    /// The most events in one POST. Default 100.
    public var batchMaximumEvents: Int = 100
    /// The most bytes of one POST's body (a single larger event is still posted alone). Default 256 KiB.
    public var batchMaximumBytes: Int = 256 * 1024
    /// POSTs in flight per receiver at most. Default 2.
    public var concurrencyPerReceiver: Int = 2
    /// A POST's whole time limit, in seconds. Default 10.
    public var timeoutSeconds: Int = 10
    /// A CA bundle to trust for receivers instead of the system's (a private CA; the tests' own).
    public var caFile: String?

    public init() {}

    /// The entries naming plain-HTTP `host:port`s (`http://host:port`), without the scheme.
    public var plainHTTPHosts: [String] {
        allowedHosts.compactMap { $0.lowercased().hasPrefix("http://") ? String($0.dropFirst("http://".count)).lowercased() : nil }
    }

    /// The entries for `https` receivers.
    public var httpsHosts: [String] { allowedHosts.filter { !$0.lowercased().hasPrefix("http://") } }
}
