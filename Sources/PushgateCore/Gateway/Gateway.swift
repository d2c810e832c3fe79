import Foundation
import Logging
import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateOutbox
import Synchronization

/// The app backend of the Notification Hubs tutorials, independent of HTTP: registrations with the
/// tutorial's semantics (`Gateway+Registrations.swift`), and sends rendered per platform,
/// dispatched, and reported as one result (`Gateway+Sends.swift`).
public final class Gateway: Sendable {
    /// The app's configuration and templates as they are now (a reload replaces them): a send
    /// is rendered with the templates of the moment it is accepted.
    public var app: LoadedApp { current.value }
    private let current: CurrentApp
    public let store: any GatewayStore
    /// How long a secure-push payload can be fetched, in seconds. Default one day.
    public let secureMessageLifetime: Double
    public let limits: LimitsConfiguration
    public let dispatcher: Dispatcher
    package let metrics: GatewayMetrics
    package let logger: Logger
    /// The time registrations, reservations and secure messages expire by.
    package let clock: any PushgateClock
    /// Sends being delivered, so that shutdown can cancel them at its deadline.
    public let inFlight: InFlightSends
    /// The outbox's settings and this instance's lease owner.
    public let outbox: OutboxControl
    /// Drives notifications through the outbox (the durable store's; with the outbox off, each
    /// send's ephemeral one): the one send path.
    public let driver: OutboxDriver

    public init(
        app: LoadedApp, store: any GatewayStore, dispatcher: Dispatcher, secureMessageLifetime: Double = 86400,
        limits: LimitsConfiguration = .init(), outbox: OutboxConfiguration = .init(), metrics: GatewayMetrics = GatewayMetrics(),
        logger: Logger = Logger(label: "pushgate.gateway"), clock: any PushgateClock = SystemClock(),
        inFlight: InFlightSends = InFlightSends()
    ) {
        self.inFlight = inFlight
        let current = CurrentApp(app)
        self.current = current
        self.appID = app.id
        self.store = store
        self.secureMessageLifetime = secureMessageLifetime
        self.limits = limits
        reservationRate = Mutex(
            TokenBuckets(ratePerSecond: Double(limits.hubReservationsPerSecond), burst: Double(limits.hubReservationBurst)))
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        let control = OutboxControl(configuration: outbox)
        self.outbox = control
        let drives = ActiveDrives()
        notifications = Notifications(store: store, app: app.id, clock: clock, logger: logger, outbox: control, drives: drives)
        registrations = Registrations(store: store, app: app.id, current: { current.value }, limits: limits, clock: clock)
        driver = OutboxDriver(
            app: app.id, queue: store, registrations: store, dispatcher: dispatcher, control: control, clock: clock,
            drives: drives, metrics: metrics, settings: OutboxDriver.settings(outbox),
            grouping: { [store, id = app.id] delivery, payloads in
                Gateway.payloadGrouping(for: delivery, payloads: payloads, store: store, app: id)
            })
    }

    /// How fast each hub key reserves registration ids (``reserveHubRegistrationID(rule:)``).
    let reservationRate: Mutex<TokenBuckets>

    /// Telemetry, cancelling and secure messages (``Notifications``).
    public let notifications: Notifications
    /// The tutorial API's registrations (``Registrations``).
    public let registrations: Registrations

    /// The app's id (a reload keeps it).
    public let appID: AppID

    /// Takes a reloaded configuration of this app: templates and settings for what is accepted
    /// from now on, `providers` (new credentials) for what is sent from now on. Pages on the wire
    /// finish with the providers they started with.
    public func reload(_ app: LoadedApp, providers: [any PushProvider]) async {
        precondition(app.id == appID, "a reload keeps the app's id")
        current.replace(app)
        await dispatcher.replace(providers: providers)
    }

    package func now() -> Timestamp { clock.now }

    /// Runs a store operation, turning its failure into the answer it deserves. (Store calls go
    /// through here, refusals are thrown outside any `do`/`catch`: Swift 6.3.1's optimizer crashes
    /// on an async typed-throws `do` that throws and whose `catch` maps the error again.)
    package func stored<T: Sendable>(_ body: () async throws(StoreError) -> T) async throws(GatewayError) -> T {
        try await storeCall(body)
    }

    package static func storeFailure(_ error: StoreError) -> GatewayError {
        switch error.kind {
        case .gone: GatewayError.gone(error.message)
        case .limitReached: GatewayError(.tooManyRequests, error.message)
        case .storage: GatewayError(.unavailable, "the registration store is unavailable")
        // The reason names the database's state (down, no connection in time), never a secret.
        case .unavailable: GatewayError(.unavailable, "\(error.message); retry later")
        case .forbidden: GatewayError.forbidden(error.message)
        case .conflict: GatewayError(.conflict, error.message)
        }
    }
}

/// The deliveries running now. At the shutdown deadline ``cancelAll()`` cancels them: each then
/// answers its caller while its connection is still open (stored in the outbox, 202: it resumes;
/// with the outbox off, 503 with what it reached).
public final class InFlightSends: Sendable {
    private let tasks = Mutex<[UInt64: Task<Gateway.SendOutcome, Never>]>([:])
    private let counter = Atomic<UInt64>(0)

    public init() {}

    /// Runs `delivery` to its end even when the caller goes away (a disconnect does not cancel
    /// it); cancelling the caller, or ``cancelAll()``, cancels it.
    package func run(_ delivery: @escaping @Sendable () async -> Gateway.SendOutcome) async -> Gateway.SendOutcome {
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
