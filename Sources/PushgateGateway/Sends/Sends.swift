import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateOutbox
import Synchronization

/// Every rule of a send, decided once for both APIs: an API parses a request into a
/// ``SendCommand``, calls ``run(_:logger:)`` and answers the ``SendAnswer`` in its own terms.
///
/// The path of one send: ``check(_:)`` (the rules between its parts, and whether it needs the
/// outbox) → a dry run answers here → the idempotency key (a repeat answers the first send's
/// notification) → planned (validated and rendered in one step from the command: ``prepare(_:)``,
/// its audience by ``audience(of:platform:)``) → stored and answered
/// (asynchronous, scheduled, hub), or stored and driven by this request (synchronous, streamed,
/// test). The outbox counts what a drive reached in the metrics (``OutboxDriver``), once.
///
/// (About 30 members, past the 25 a type here keeps to: the issue this was built for asks for
/// one place that owns every rule of a send. They are split by phase, one extension file each:
/// `+Prepare`, `+Hub`, `+Deliver`, `+Idempotency`, `+DryRun`; pure rules of a payload live in
/// ``HubPayloads``, ``HubFormat`` and ``SendCommand``.)
public final class Sends: Sendable {
    /// What a send is checked against, beside the outbox's settings.
    public struct Settings: Sendable {
        public var limits: LimitsConfiguration
        /// How long a secure-push payload can be fetched, in seconds. Default one day.
        public var secureMessageLifetime: Double

        public init(limits: LimitsConfiguration = .init(), secureMessageLifetime: Double = 86400) {
            self.limits = limits
            self.secureMessageLifetime = secureMessageLifetime
        }
    }

    /// Registrations (a send's audience), secure messages, the outbox's queue and its log: not
    /// its maintenance (``OutboxMaintenance``), which the delivery service does.
    let store: any SendStore
    private let current: CurrentApp
    /// Drives a notification through the outbox (the durable store's, or a send's own ephemeral
    /// one with the outbox off); its dispatcher, outbox control, clock and metrics are the sends'.
    let driver: OutboxDriver
    /// Sends being delivered, so that shutdown can cancel them at its deadline.
    let inFlight: InFlightSends
    let settings: Settings
    let logger: Logger
    /// What each user of the tutorial API has stored lately (``admitStored(_:)``): a bucket of
    /// `limits.maxStoredPerUserPerDay` sends that refills over a day.
    let storedPerUser: Mutex<TokenBuckets>

    init(store: any SendStore, app: CurrentApp, driver: OutboxDriver, inFlight: InFlightSends, settings: Settings, logger: Logger) {
        self.store = store
        self.current = app
        self.driver = driver
        self.inFlight = inFlight
        self.settings = settings
        self.logger = logger
        let perDay = Double(settings.limits.maximumStoredPerUserPerDay)
        storedPerUser = Mutex(TokenBuckets(ratePerSecond: perDay / 86400, burst: perDay))
    }

    /// The app's configuration and templates as they are now (a reload replaces them).
    var app: LoadedApp { current.value }
    var appID: AppID { driver.app }
    var outbox: OutboxControl { driver.control }
    var dispatcher: Dispatcher { driver.dispatcher }
    var metrics: any OutboxMetrics { driver.metrics }
    var limits: LimitsConfiguration { settings.limits }
    func now() -> Timestamp { driver.clock.now }

    /// How a send is answered.
    public enum SendAnswer: Sendable {
        /// Delivered (or a repeat of a delivered send): the result, and how the run ended.
        case delivered(SendOutcome)
        /// Stored for background delivery (or a repeat of a stored send).
        case accepted(Accepted)
        /// A dry run's report.
        case dryRun(DryRun)
        /// A streamed send, run by the API while it writes (``StreamedSend/run(progress:)``).
        case streamed(StreamedSend)
    }

    /// A streamed send, prepared and not yet started: the API runs it while it writes progress.
    public struct StreamedSend: Sendable {
        let sends: Sends
        let prepared: PreparedSend
        let idempotencyKey: IdempotencyKey?
        let disclosed: Bool
        let logger: Logger

        /// Delivers it to its end, even when the client goes away; the outcome lists devices
        /// only to whom may see them. (A synchronous send runs the same way, without progress.)
        public func run(progress: (@Sendable (DispatchProgress) -> Void)? = nil) async -> SendOutcome {
            var outcome = await sends.deliverToCompletion(prepared, logger: logger, key: idempotencyKey, progress: progress)
            if !disclosed { outcome.result = outcome.result.withoutDevices() }
            return outcome
        }
    }

    /// Runs a send: checks it, answers a dry run or a repeat, prepares it, and stores it or
    /// delivers it as its mode says.
    public func run(_ command: SendCommand, logger: Logger) async throws(GatewayError) -> SendAnswer {
        try check(command)
        if case .dryRun(let sample) = command.mode {
            guard case .user(let user) = command.sender else { throw .badRequest("a dry run is the tutorial API's") }
            return .dryRun(try await dryRun(command, user: user, sample: sample))
        }
        let key = try idempotencyKey(command)
        if let record = try await repeatedSend(key, sender: command.sender.name) {
            return command.isAccepted
                ? .accepted(Accepted(record: record, replayed: true)) : .delivered(replayed(record))
        }
        let prepared = try await prepare(command)
        try admitStored(command.sender)
        if command.isAccepted {
            return .accepted(try await enqueue(prepared, deliverAt: command.deliverAt?.value, idempotencyKey: key))
        }
        let send = StreamedSend(
            sends: self, prepared: prepared, idempotencyKey: key,
            disclosed: mayInspectDevices(command, audience: prepared.audience), logger: logger)
        if command.mode == .streamed { return .streamed(send) }
        return .delivered(await send.run())
    }

    /// Admits a send that stores a notification (kept 7 days) and perhaps a secure message (a
    /// day): a user of the tutorial API stores at most `limits.maxStoredPerUserPerDay` a day, so
    /// that one signed-in user cannot fill the disk (429 with `Retry-After`). Hub keys (backends)
    /// are not limited by it. Kept in this instance's memory.
    func admitStored(_ sender: SendCommand.Sender) throws(GatewayError) {
        guard case .user(let user) = sender else { return }
        guard case .wait(let seconds) = storedPerUser.withLock({ $0.take(user.name, now: now().secondsSinceEpoch) }) else { return }
        throw GatewayError(
            .tooManyRequests,
            "too many notifications stored: a user stores at most \(limits.maximumStoredPerUserPerDay) a day (limits.maxStoredPerUserPerDay); retry in \(seconds) s",
            retryAfterSeconds: seconds)
    }

    /// The rules between a send's parts, checked before anything is stored or sent.
    public func check(_ command: SendCommand) throws(GatewayError) {
        if command.validateOnly && command.isSecure {
            throw .badRequest("validateOnly cannot be combined with secure: a secure send stores its message")
        }
        if command.deliverAt != nil {
            switch command.mode {
            case .synchronous?:
                throw .badRequest("async=false contradicts deliverAt: a scheduled send is always answered 202 at once")
            case .test?:
                throw .badRequest("a scheduled send cannot be a test send (?test)")
            default: break
            }
        }
        if case .dryRun = command.mode { return }
        // What needs the outbox, refused by name before anything is stored.
        if command.isAccepted {
            if case .notificationHubs = command.content {
                try outbox.require(for: "the hub API's sends")
            } else {
                try outbox.require(for: "asynchronous and scheduled sends")
            }
        }
        if command.idempotencyKey != nil { try outbox.require(for: "idempotent sends (Idempotency-Key)") }
    }

    /// Who may see which devices a send reached: a hub key (the backend) always; a user when the
    /// audience is theirs (``AuthenticatedUser/mayInspectDevices(ofAudience:)``).
    private func mayInspectDevices(_ command: SendCommand, audience: Audience) -> Bool {
        guard case .user(let user) = command.sender else { return true }
        return user.mayInspectDevices(ofAudience: audience.description)
    }

    /// The key and fingerprint of an idempotent send (nil without a key).
    func idempotencyKey(_ command: SendCommand) throws(GatewayError) -> IdempotencyKey? {
        guard let header = command.idempotencyKey else { return nil }
        let key = try Self.idempotencyKeyValue(header)
        let window = Double(outbox.configuration.idempotencyWindowSeconds)
        let fingerprint = command.fingerprint() ?? ""
        let others = SendCommand.knownFingerprintVersions.filter { $0 != SendCommand.fingerprintVersion }.compactMap {
            command.fingerprint(version: $0)
        }
        return IdempotencyKey(
            key: key, fingerprint: fingerprint, otherVersions: others,
            storedSince: Timestamp(secondsSinceEpoch: now().secondsSinceEpoch - window))
    }

    /// Runs a send to its end even when the client goes away (a disconnect does not cancel it);
    /// cancelling the request itself (shutdown past its deadline) cancels the send, which then
    /// reports what it reached.
    func deliverToCompletion(
        _ prepared: PreparedSend, logger: Logger, key: IdempotencyKey?, progress: (@Sendable (DispatchProgress) -> Void)? = nil
    ) async -> SendOutcome {
        await inFlight.run { await self.deliver(prepared, progress: progress, logger: logger, idempotencyKey: key) }
    }
}

extension SendCommand.Audience {
    /// The tutorial API's audience from its parameters as given (`to_tag`, `tags`, `topic`,
    /// `condition`; empty ones are not given): exactly one of them.
    public static func tutorial(toTag: String?, tags: String?, topic: String?, condition: String?) throws(GatewayError) -> Self {
        func given(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }
        let (toTag, tags, topic, condition) = (given(toTag), given(tags), given(topic), given(condition))
        if topic != nil || condition != nil {
            if topic != nil && condition != nil { throw .badRequest("give topic or condition, not both (an FCM message has one target)") }
            if toTag != nil || tags != nil {
                throw .badRequest("topic and condition replace to_tag and tags: Firebase picks the devices; give one of them")
            }
            return topic.map { .fcmTopic($0) } ?? .fcmCondition(condition ?? "")
        }
        if toTag != nil && tags != nil { throw .badRequest("give to_tag (a user name) or tags (a tag expression), not both") }
        if let tags { return .tags(tags) }
        if let toTag { return .user(toTag) }
        throw .badRequest("to_tag is required (the recipient's user name), or tags= with a tag expression, or topic= / condition= (FCM)")
    }
}
