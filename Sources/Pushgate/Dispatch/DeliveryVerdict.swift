/// What one answer of a push service means for one device: the outcome, what the service said, and
/// what to do next (retry, refresh credentials, remove or replace the handle).
public struct DeliveryVerdict: Sendable, Hashable {
    public var outcome: Outcome
    public var statusCode: Int?
    /// The service's reason or error code.
    public var reason: String?
    /// The service's id for the message.
    public var serviceMessageID: String?
    public var retry: RetryAdvice
    public var handleChange: HandleChange?
    /// Answer headers the service asks senders to quote in problem reports (WNS
    /// `X-WNS-Debug-Trace`, `MS-CV`, `X-WNS-DeviceConnectionStatus`; APNs `apns-unique-id`).
    public var diagnostics: [HTTPHeader] = []

    public init(
        outcome: Outcome, statusCode: Int? = nil, reason: String? = nil, serviceMessageID: String? = nil, retry: RetryAdvice = .never,
        handleChange: HandleChange? = nil
    ) {
        self.outcome = outcome
        self.statusCode = statusCode
        self.reason = reason
        self.serviceMessageID = serviceMessageID
        self.retry = retry
        self.handleChange = handleChange
    }

    /// The verdict for a request that got no answer.
    public static func transportFailure(_ failure: TransportFailure, detail: String) -> DeliveryVerdict {
        switch failure {
        case .cancelled:
            DeliveryVerdict(outcome: .abandoned, reason: detail, retry: .never)
        case .local:
            DeliveryVerdict(outcome: .unknownError, reason: detail, retry: .never)
        case .connect, .tls, .timeout, .connectionLost:
            DeliveryVerdict(
                outcome: .pnsUnreachable, reason: "\(failure.rawValue): \(detail)", retry: .afterBackoff(retryAfterSeconds: nil))
        }
    }
}

/// Whether and how a failed delivery may be tried again.
public enum RetryAdvice: Sendable, Hashable {
    /// A permanent answer: never retry.
    case never
    /// A transient failure: retry with backoff, no sooner than `Retry-After` when the service gave one.
    case afterBackoff(retryAfterSeconds: Double?)
    /// The service refused the gateway's access token as expired or invalid: refresh it and retry once.
    case refreshCredentials
    /// The connection is unusable for this request (APNs `TooManyProviderTokenUpdates`: the rule
    /// is per connection): retry once at once on a new connection.
    case newConnection
}

/// A change the service asks for to the stored handle.
public enum HandleChange: Sendable, Hashable {
    /// The handle is gone for good: delete the registration.
    case remove
    /// Legacy GCM returned a canonical registration id: store this handle instead.
    case replace(with: String)
}

extension DeliveryVerdict {
    /// The answers RFC 8030 gives every Web Push service and UnifiedPush distributor alike: 404
    /// or 410, the subscription is gone (removed); 413, too large; 429, throttled (retried after
    /// `Retry-After`). False, and the verdict unchanged, for any other status.
    mutating func classifyRFC8030(status: Int, retryAfter: Double?) -> Bool {
        switch status {
        case 404, 410:
            outcome = .expiredChannel
            handleChange = .remove
        case 413: outcome = .invalidNotificationSize
        case 429:
            outcome = .throttled
            retry = .afterBackoff(retryAfterSeconds: retryAfter)
        default: return false
        }
        return true
    }

    /// A status the service's own table does not name: a server error (`serverErrors`) or 503 is
    /// retried after a backoff (`Retry-After` when given), any other 5xx is `PNSUnavailable`, any
    /// other status an answer the gateway did not expect.
    mutating func classifyOther(status: Int, retryAfter: Double?, serverErrors: Set<Int>) {
        if serverErrors.contains(status) {
            outcome = .pnsServerError
            retry = .afterBackoff(retryAfterSeconds: retryAfter)
        } else if status == 503 {
            outcome = .pnsUnavailable
            retry = .afterBackoff(retryAfterSeconds: retryAfter)
        } else {
            outcome = status >= 500 ? .pnsUnavailable : .pnsInterfaceError
        }
    }
}
