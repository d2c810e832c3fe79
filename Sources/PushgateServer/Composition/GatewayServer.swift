import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateGateway
import PushgateOutbox
import PushgateWebhooks
import ServiceLifecycle
import UnixSignals

/// The composition root: one place that assembles a running gateway from its configuration —
/// providers (curl pools and token managers), dispatcher, gateway, authenticator, router, the
/// HTTP listener with its connection limits — as ServiceLifecycle services in one `ServiceGroup`.
/// `pushgate serve`, `pushgate demo` (through `LocalGateway`) and the tests all start it here.
///
/// Shutdown (SIGTERM/SIGINT, or ``ServiceGroup/triggerGracefulShutdown()``) runs in reverse
/// order of ``services``: the listener stops accepting, every send stops claiming outbox pages,
/// and requests in flight get until `listener.shutdownDeadlineSeconds` to finish the pages they
/// have out; past the deadline they are cancelled (a synchronous send then answers 202 with what
/// it reached). The outbox delivery service gets the same deadline, counted from the same moment,
/// then releases every lease this instance holds, so that the next start resumes the rest at
/// once; then the sandbox bridge and the curl pools close, and last the store's own service if it
/// has one (PostgreSQL's connection pool, which the outbox released its leases through).
///
/// ```swift
/// let (store, pool) = try await PostgresStore.openForServiceGroup(settings: settings, password: password)
/// let server = try await GatewayServer.assemble(configuration: loaded, app: app, store: store, storeService: pool)
/// try await server.serviceGroup(signals: [.sigterm, .sigint]).run()
/// await store.close()
/// ```
public struct GatewayServer: Sendable {
    public let gateway: Gateway
    public let dispatcher: Dispatcher
    /// Every hub (configured app) with its gateway and shared access rules.
    public let hubs: HubDirectory
    public let connections: ConnectionRegistry
    public let metrics: GatewayMetrics
    public let sandboxBridge: SandboxBridge?
    /// The gateway's HTTP application (its router), also for in-process tests.
    public let application: Application<RouterResponder<GatewayContext>>
    /// HTTPS on its own port beside plain HTTP (`listener.tls.port`).
    let secureApplication: Application<RouterResponder<GatewayContext>>?
    /// `/metrics` on a listener of its own (`metrics.port`).
    let metricsApplication: Application<RouterResponder<GatewayContext>>?
    /// What a reload replaces, and what it was started with.
    package let settings: ReloadableSettings
    let listener: ListenerConfiguration
    let logger: Logger
    /// The span exporter's service when `tracing` is on.
    var tracingService: (any Service)? = nil
    /// What runs the store's connections (PostgreSQL's pool), when the group runs them.
    var storeService: (any Service)? = nil
    /// Posts the apps' outcome webhooks, when an app has a receiver.
    package var webhookPoster: WebhookPoster? = nil

    /// Builds every part; nothing listens until the service group runs. `onListening` gets the
    /// bound port of `listener.port`, `onListeningSecurely` that of `listener.tls.port` (`port`
    /// and `securePort` override them). `providers` gives each app's push services instead of
    /// building them from the configuration (the in-memory test gateway's). `storeService` runs
    /// the store's connections when the store does not run them itself (PushgatePostgres'
    /// `PostgresPoolService`): it starts before every service that uses the store and stops after
    /// them.
    ///
    /// (Its parameters are the composition root's inputs, each defaulted; callers name the few
    /// they set.)
    public static func assemble(
        configuration loaded: LoadedConfiguration, app: LoadedApp, store: any GatewayStore, storeService: (any Service)? = nil,
        health: HealthMonitor? = nil, policy: RetryPolicy = RetryPolicy(), port: Int? = nil, securePort: Int? = nil,
        logger: Logger = Logger(label: "pushgate"),
        clock: any PushgateClock = SystemClock(), onListening: @escaping @Sendable (Int) -> Void = { _ in },
        onListeningSecurely: @escaping @Sendable (Int) -> Void = { _ in },
        onMetricsListening: @escaping @Sendable (Int) -> Void = { _ in },
        providers makeProviders: (@Sendable (LoadedApp) async throws -> [any PushProvider])? = nil
    ) async throws -> GatewayServer {
        let configuration = loaded.configuration
        let listener = configuration.listener
        let secrets = SecretResolver(baseDirectory: loaded.baseDirectory)
        // Read and checked before anything starts: a bad certificate stops the start, naming it.
        let tls = try listener.tls.map { try SecureListener.tlsConfiguration($0, secrets: secrets) }
        let metrics = GatewayMetrics()
        let (tracing, tracingService) = try makeTracing(configuration.tracing, logger: logger)
        let shared = Gateway.Shared(metrics: metrics, logger: Logger(label: "pushgate.gateway"), clock: clock)
        // The clocks of early answers, one per interval for the whole server (every hub's sends).
        let answerTickers = AnswerFlushTickers()
        // One gateway per hub (its own providers and outbox driver), sharing the store, metrics and
        // sends in flight; the tutorial API `/api` is the default app's.
        var gateways: [Gateway] = []
        do {
            for hubApp in [app] + loaded.apps.filter({ $0.id != app.id }) {
                let providers =
                    if let makeProviders {
                        try await makeProviders(hubApp)
                    } else {
                        try await GatewayAssembly.providers(for: hubApp, secrets: secrets, policy: policy, clock: clock, tracing: tracing)
                    }
                gateways.append(
                    Gateway(
                        app: hubApp, store: store,
                        dispatcher: Dispatcher(providers: providers, tracing: tracing, answerTickers: answerTickers),
                        settings: Gateway.Settings(limits: configuration.limits, outbox: configuration.outbox), shared: shared))
                gateways.last?.channels.connect(await GatewayAssembly.channelAccess(for: hubApp, secrets: secrets, clock: clock))
            }
            let gateway = gateways[0]
            let dispatcher = gateway.dispatcher
            let hubs = try HubDirectory(
                gateways: gateways, secrets: secrets, clock: clock, maximumLifetimeSeconds: listener.sasMaximumLifetimeSeconds,
                hostnames: listener.hostnames)
            // One router per listener, so that the links the hub API writes (Location, Atom ids) carry
            // the scheme the request came in on; both share every part.
            let authenticator = Authenticator(configuration: configuration.auth, trustedProxies: listener.trustedProxies)
            let metricsAccess: MetricsAccess
            do {
                metricsAccess = MetricsAccess(
                    bearerToken: try configuration.metrics.bearerToken.map {
                        let token = try secrets.resolve($0).trimmingCharacters(in: .whitespacesAndNewlines)
                        guard !token.isEmpty else { throw GatewayError(.misconfigured, "is empty") }
                        return token
                    })
            } catch {
                throw GatewayError(.misconfigured, "metrics.bearerToken: \(error)")
            }
            let webhookPoster = try makeWebhookPoster(
                configuration: configuration, apps: loaded.apps, store: store, secrets: secrets, clock: clock, metrics: metrics,
                owner: gateway.driver.control.owner, logger: logger)
            // The last part that may refuse the start is built last: it owns a curl client.
            let sandboxBridge = try configuration.console.sandboxControl.map(SandboxBridge.init(controlURL:))
            // On a listener of its own, /metrics is not on the gateway's.
            let ownMetricsListener = configuration.metrics.port != nil
            func router(scheme: String) -> Router<GatewayContext> {
                GatewayHTTP.router(
                    gateway: gateway, authenticator: authenticator, maximumBodyBytes: listener.maximumBodyBytes, metrics: metrics,
                    console: configuration.console, sandbox: sandboxBridge, hubs: hubs, scheme: scheme,
                    metricsAccess: ownMetricsListener ? nil : metricsAccess, tracing: tracing, health: health, webhooks: webhookPoster)
            }
            let connections = ConnectionRegistry(
                limits: ConnectionLimits(
                    headerTimeout: .seconds(Int64(listener.headerTimeoutSeconds)),
                    bodyTimeout: .seconds(Int64(listener.bodyTimeoutSeconds)),
                    bodyDeadline: .seconds(Int64(listener.bodyDeadlineSeconds)),
                    idleTimeout: .seconds(Int64(listener.idleTimeoutSeconds)), maximumConnections: listener.maximumConnections))
            let mainIsSecure = tls != nil && listener.tls?.port == nil
            let responder = router(scheme: mainIsSecure ? "https" : "http").buildResponder()
            let idleTimeout = TimeAmount.seconds(Int64(listener.idleTimeoutSeconds))
            let plain = HTTPServerBuilder.http1(
                configuration: .init(
                    additionalChannelHandlers: [ConnectionGuard(registry: connections), UnsupportedMethodHandler()],
                    idleTimeout: idleTimeout))
            // Either the one port speaks HTTPS, or HTTPS has its own port beside plain HTTP.
            let secure = tls.map { SecureListener.server(tls: $0, registry: connections, idleTimeout: idleTimeout) }
            let application = Application(
                responder: responder, server: listener.tls?.port == nil ? (secure ?? plain) : plain,
                configuration: .init(address: .hostname(listener.host, port: port ?? listener.port), serverName: nil),
                onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
                logger: logger)
            var secureApplication: Application<RouterResponder<GatewayContext>>?
            if let secure, let securePortSetting = listener.tls?.port {
                secureApplication = Application(
                    responder: router(scheme: "https").buildResponder(), server: secure,
                    configuration: .init(address: .hostname(listener.host, port: securePort ?? securePortSetting), serverName: nil),
                    onServerRunning: { channel in onListeningSecurely(channel.localAddress?.port ?? 0) },
                    logger: logger)
            }
            let metricsApplication = configuration.metrics.port.map { metricsPort in
                Application(
                    responder: GatewayHTTP.metricsRouter(metrics: metrics, access: metricsAccess).buildResponder(), server: plain,
                    configuration: .init(address: .hostname(configuration.metrics.host, port: metricsPort), serverName: nil),
                    onServerRunning: { channel in onMetricsListening(channel.localAddress?.port ?? 0) }, logger: logger)
            }
            return GatewayServer(
                gateway: gateway, dispatcher: dispatcher, hubs: hubs, connections: connections, metrics: metrics,
                sandboxBridge: sandboxBridge,
                application: application, secureApplication: secureApplication, metricsApplication: metricsApplication,
                settings: ReloadableSettings(configuration: configuration, policy: policy, clock: clock, authenticator: authenticator),
                listener: listener, logger: logger, tracingService: tracingService, storeService: storeService, webhookPoster: webhookPoster
            )
        } catch {
            // A refused start leaves no connection pool open (tests start many gateways in one process).
            for built in gateways { await built.dispatcher.shutdown() }
            throw error
        }
    }

    /// The services in start order; shutdown runs the other way round.
    public var services: [any Service] {
        let gateways = hubs.order.compactMap { hubs.hubs[$0]?.gateway }
        // The span exporter first: it stops last, once every span has ended.
        var services: [any Service] = tracingService.map { [$0] } ?? []
        // Then the store's connections: they stop once nothing uses the store.
        if let storeService { services.append(storeService) }
        services.append(ShutdownAction(label: "curl pools") { for gateway in gateways { await gateway.dispatcher.shutdown() } })
        if let sandboxBridge { services.append(ShutdownAction(label: "sandbox bridge") { await sandboxBridge.shutdown() }) }
        // Off the send path; stops after the sends (it posts what they stored meanwhile).
        if let webhookPoster { services.append(webhookPoster) }
        for gateway in gateways {
            var logger = self.logger
            if gateways.count > 1 { logger[metadataKey: "hub"] = "\(gateway.app.id)" }
            services.append(
                OutboxDeliveryService(
                    driver: gateway.driver, maintenance: gateway.store, deadline: .seconds(listener.shutdownDeadlineSeconds),
                    logger: logger))
        }
        services.append(
            HTTPListenerService(
                applications: [application] + [secureApplication, metricsApplication].compactMap { $0 }, sends: gateway.inFlight,
                outboxes: gateways.map(\.outbox),
                deadline: .seconds(listener.shutdownDeadlineSeconds), logger: logger))
        return services
    }

    /// One group with the shutdown deadline of the configuration: requests in flight get
    /// `shutdownDeadlineSeconds`, cancelled work then gets 5 seconds more.
    ///
    /// With `reloading`, `SIGHUP` reloads the configuration it reads (``ReloadService``).
    public func serviceGroup(
        signals: [UnixSignal] = [], listening: Bool = true, reloading: (@Sendable () throws -> LoadedConfiguration)? = nil
    ) -> ServiceGroup {
        // Not listening (in-process tests call the router): everything but the listener.
        var services = listening ? self.services : self.services.filter { !($0 is HTTPListenerService) }
        if let reloading { services.append(ReloadService(server: self, logger: logger, load: reloading)) }
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) }, gracefulShutdownSignals: signals, logger: logger)
        // The backstop: ``HTTPListenerService`` cancels sends at the deadline, so this should not fire.
        configuration.maximumGracefulShutdownDuration = Duration.seconds(listener.shutdownDeadlineSeconds + 5)
        configuration.maximumCancellationDuration = Duration.seconds(5)
        return ServiceGroup(configuration: configuration)
    }
}

/// The HTTP listener. On shutdown it stops accepting at once and lets requests in flight
/// finish; at `deadline` it cancels the sends still running, each of which then answers while its
/// connection is still open: 202 with the outbox on (the notification is stored and resumes), 503
/// with what it reached with the outbox off.
struct HTTPListenerService: Service {
    /// The plain and the HTTPS listener (one of them, or both on two ports).
    let applications: [Application<RouterResponder<GatewayContext>>]
    let sends: InFlightSends
    let outboxes: [OutboxControl]
    let deadline: Duration
    let logger: Logger

    func run() async throws {
        let (sends, outboxes, deadline, logger) = (self.sends, self.outboxes, self.deadline, self.logger)
        let applications = self.applications
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The shutdown deadline, a child of this service: it waits for graceful shutdown, then
            // for what is left of the deadline. When the listeners have stopped first, it is
            // cancelled below (or with the service), so it never outlives run().
            group.addTask {
                do {
                    try await gracefulShutdown()
                    try await Task.sleep(for: outboxes[0].remaining(of: deadline))
                } catch {
                    return
                }
                let count = sends.count
                guard count > 0 else { return }
                logger.warning("shutdown deadline reached: cancelling \(count) sends in flight")
                sends.cancelAll()
            }
            defer { group.cancelAll() }
            try await withGracefulShutdownHandler {
                // Child tasks inherit the graceful-shutdown context: each listener stops accepting.
                try await withThrowingTaskGroup(of: Void.self) { listeners in
                    for application in applications { listeners.addTask { try await application.run() } }
                    try await listeners.waitForAll()
                }
            } onGracefulShutdown: {
                // Sends in flight (synchronous ones included) stop claiming pages now; the deadline
                // counts from here.
                for outbox in outboxes { outbox.beginDraining() }
            }
        }
    }
}

/// A service that does nothing until shutdown, then runs `action` (closing what it owns).
struct ShutdownAction: Service {
    let label: String
    let action: @Sendable () async -> Void

    func run() async throws {
        try? await gracefulShutdown()
        await action()
    }
}
