import Foundation
import Logging
import Pushgate
import PushgateDispatch
import PushgateOutbox
import PushgateXML
import Synchronization

/// One app's gateway (the tutorial API's default app, or a hub), independent of HTTP: the
/// services each API calls, built here over the store, the app's dispatcher and its outbox
/// driver.
///
/// - ``sends``: every rule of a send (``Sends``);
/// - ``registrations``: the tutorial API's registrations (``Registrations``);
/// - ``installations``: the hub API's registrations and installations (``Installations``);
/// - ``notifications``: telemetry, cancelling, secure messages (``Notifications``).
public final class Gateway: Sendable {
    /// The settings of one app's gateway.
    public struct Settings: Sendable {
        public var limits: LimitsConfiguration
        public var outbox: OutboxConfiguration
        /// How long a secure-push payload can be fetched, in seconds. Default one day.
        public var secureMessageLifetime: Double

        public init(limits: LimitsConfiguration = .init(), outbox: OutboxConfiguration = .init(), secureMessageLifetime: Double = 86400) {
            self.limits = limits
            self.outbox = outbox
            self.secureMessageLifetime = secureMessageLifetime
        }
    }

    /// What the gateways of every hub share.
    public struct Shared: Sendable {
        public var metrics: GatewayMetrics
        public var logger: Logger
        /// The time registrations, reservations and secure messages expire by.
        public var clock: any PushgateClock
        /// Sends being delivered, so that shutdown can cancel them at its deadline.
        public var inFlight: InFlightSends
        /// Registration templates compiled by their text, for every hub's template sends.
        public var compiledTemplates = CompiledTemplates()

        public init(
            metrics: GatewayMetrics = GatewayMetrics(), logger: Logger = Logger(label: "pushgate.gateway"),
            clock: any PushgateClock = SystemClock(), inFlight: InFlightSends = InFlightSends()
        ) {
            self.metrics = metrics
            self.logger = logger
            self.clock = clock
            self.inFlight = inFlight
        }
    }

    /// The app's configuration and templates as they are now (a reload replaces them): a send
    /// is rendered with the templates of the moment it is accepted.
    public var app: LoadedApp { current.value }
    private let current: CurrentApp
    /// The app's id (a reload keeps it).
    public let appID: AppID
    public let store: any GatewayStore
    public let dispatcher: Dispatcher
    /// The outbox's settings and this instance's lease owner.
    public var outbox: OutboxControl { driver.control }
    /// Drives notifications through the outbox (the durable store's; with the outbox off, each
    /// send's ephemeral one): the one send path. The delivery service drives with it too.
    public let driver: OutboxDriver
    public let shared: Shared

    /// Every rule of a send (``Sends``).
    public let sends: Sends
    /// The tutorial API's registrations (``Registrations``).
    public let registrations: Registrations
    /// The hub API's registrations and installations (``Installations``).
    public let installations: Installations
    /// Telemetry, cancelling and secure messages (``Notifications``).
    public let notifications: Notifications
    public let liveActivities: LiveActivities
    /// The app's APNs broadcast channels (``Channels``).
    public let channels: Channels

    public init(app: LoadedApp, store: any GatewayStore, dispatcher: Dispatcher, settings: Settings = .init(), shared: Shared = .init()) {
        let current = CurrentApp(app)
        self.current = current
        self.appID = app.id
        self.store = store
        self.dispatcher = dispatcher
        self.shared = shared
        let (clock, logger) = (shared.clock, shared.logger)
        let control = OutboxControl(configuration: settings.outbox)
        let drives = ActiveDrives()
        driver = OutboxDriver(
            app: app.id, queue: store, registrations: store, dispatcher: dispatcher, control: control, clock: clock,
            drives: drives, metrics: shared.metrics, settings: OutboxDriver.settings(settings.outbox),
            templates: shared.compiledTemplates,
            hooks: OutboxHookChain([
                LiveActivityHooks(store: store, logger: logger),
                WebhookHooks(subscriptions: { WebhookSubscriptions(receivers: current.value.configuration.webhooks) }, clock: clock),
            ]))
        sends = Sends(
            store: store, app: current, driver: driver, inFlight: shared.inFlight,
            settings: Sends.Settings(limits: settings.limits, secureMessageLifetime: settings.secureMessageLifetime), logger: logger)
        let registrations = Registrations(
            store: store, app: app.id, current: { current.value }, limits: settings.limits, clock: clock, dispatcher: dispatcher)
        self.registrations = registrations
        installations = Installations(store: store, app: current, registrations: registrations, limits: settings.limits, clock: clock)
        notifications = Notifications(store: store, app: app.id, clock: clock, logger: logger, outbox: control, drives: drives)
        liveActivities = LiveActivities(store: store, appID: app.id, clock: clock)
        channels = Channels(store: store, app: { current.value }, clock: clock, logger: logger)
    }

    /// Sends being delivered (shared by every hub's gateway).
    public var inFlight: InFlightSends { shared.inFlight }
    package var metrics: GatewayMetrics { shared.metrics }
    package var logger: Logger { shared.logger }

    /// Takes a reloaded configuration of this app: templates and settings for what is accepted
    /// from now on, `providers` (new credentials) for what is sent from now on. Pages on the wire
    /// finish with the providers they started with.
    public func reload(_ app: LoadedApp, providers: [any PushProvider]) async {
        precondition(app.id == appID, "a reload keeps the app's id")
        current.replace(app)
        await dispatcher.replace(providers: providers)
    }

    package static func storeFailure(_ error: StoreError) -> GatewayError {
        switch error.kind {
        case .gone: GatewayError.gone(error.message)
        case .limitReached: GatewayError(.tooManyRequests, error.message)
        case .storage: GatewayError(.unavailable, "the registration store is unavailable")
        // The reason names the database's state (down, no connection in time), never a secret.
        case .unavailable: GatewayError(.unavailable, "\(error.message); retry later")
        case .forbidden: GatewayError.forbidden(error.message)
        case .conflict, .changed: GatewayError(.conflict, error.message)
        }
    }
}

/// The deliveries running now. At the shutdown deadline ``cancelAll()`` cancels them: each then
/// answers its caller while its connection is still open (stored in the outbox, 202: it resumes;
/// with the outbox off, 503 with what it reached).
public final class InFlightSends: Sendable {
    private let tasks = Mutex<[UInt64: Task<Sends.SendOutcome, Never>]>([:])
    private let counter = Atomic<UInt64>(0)

    public init() {}

    /// Runs `delivery` to its end even when the caller goes away (a disconnect does not cancel
    /// it); cancelling the caller, or ``cancelAll()``, cancels it.
    package func run(_ delivery: @escaping @Sendable () async -> Sends.SendOutcome) async -> Sends.SendOutcome {
        let id = counter.add(1, ordering: .relaxed).newValue
        // Unstructured so that a client that goes away does not cancel the send; awaited below
        // (the delivery ends it), cancelled with the caller or by ``cancelAll()``.
        let task = Task { await delivery() }
        tasks.withLock { $0[id] = task }
        defer { _ = tasks.withLock { $0.removeValue(forKey: id) } }
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
    }

    public var count: Int { tasks.withLock { $0.count } }

    public func cancelAll() {
        for task in tasks.withLock({ Array($0.values) }) { task.cancel() }
    }
}

/// Runs a store operation, turning its failure into the answer it deserves (``Gateway/storeFailure(_:)``).
/// Every service's store calls go through here; refusals are thrown outside any `do`/`catch`
/// (Swift 6.3.1's optimizer crashes on an async typed-throws `do` that throws and whose `catch`
/// maps the error again).
package func storeCall<T: Sendable>(_ body: () async throws(StoreError) -> T) async throws(GatewayError) -> T {
    let result: Result<T, StoreError>
    do { result = .success(try await body()) } catch { result = .failure(error) }
    switch result {
    case .success(let value): return value
    case .failure(let error): throw Gateway.storeFailure(error)
    }
}

/// The app's configuration and templates as they are now, shared by the gateway and its services
/// (a reload replaces it for all of them at once).
final class CurrentApp: Sendable {
    private let app: Mutex<LoadedApp>

    init(_ app: LoadedApp) { self.app = Mutex(app) }

    var value: LoadedApp { app.withLock { $0 } }

    func replace(_ app: LoadedApp) { self.app.withLock { $0 = app } }
}
