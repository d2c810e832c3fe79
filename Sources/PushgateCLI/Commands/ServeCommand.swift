import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateGateway
import PushgateSQLite
import PushgateServer
import ServiceLifecycle

/// `pushgate serve`: runs the gateway from a configuration file.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the gateway: the app-backend API of the Notification Hubs tutorials.",
        discussion: """
            Stops gracefully on SIGINT or SIGTERM: requests in flight are finished first. SIGHUP (or \
            `pushgate reload`) reads the configuration again: templates, credentials, hub rules and \
            users are taken without a restart; a configuration that does not load is refused and the \
            running one kept.
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: "Override the listener port from the configuration.")
    var port: Int?

    @Option(name: .customLong("tls-port"), help: "Override listener.tls.port (HTTPS beside plain HTTP) from the configuration.")
    var tlsPort: Int?

    @Option(name: .customLong("pid-file"), help: "Write the process id here while serving (for `pushgate reload --pid-file`).")
    var pidFile: String?

    func run() async throws {
        LineLogHandler.bootstrap(
            level: ProcessInfo.processInfo.environment["PUSHGATE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info)
        let logger = Logger(label: "pushgate")
        FatalSignalLog.install()
        FileDescriptorLimit.raiseToHardLimit()
        let loaded = try options.load()
        let app = try options.selectedApp(in: loaded)
        let configuration = loaded.configuration
        let listener = configuration.listener

        // The store's connections (PostgreSQL's pool) run in the server's service group, first, so
        // that they stop last; until the group runs, the store is not called.
        let served = try await options.openServedStore(loaded)
        let store = served.store
        // One port speaks HTTPS when listener.tls has no port of its own.
        let scheme = listener.tls != nil && listener.tls?.port == nil ? "https" : "http"
        let server = try await GatewayServer.assemble(
            configuration: loaded, app: app, store: store, storeService: served.service, health: store.health, port: port,
            securePort: tlsPort, logger: logger,
            onListening: { port in logger.info("listening on \(scheme)://\(listener.host):\(port)") },
            onListeningSecurely: { port in logger.info("listening on https://\(listener.host):\(port) (HTTP/2 and HTTP/1.1)") },
            onMetricsListening: { port in logger.info("metrics: http://\(configuration.metrics.host):\(port)/metrics") })

        logger.info("store: \(store.summary) (schema \(served.schemaVersion))")
        for platform in app.configuration.services.configuredPlatforms {
            logger.info("service \(platform.serviceName): \(Self.endpoint(of: platform, in: app.configuration.services))")
        }
        if configuration.auth.demoPasswordEqualsName {
            logger.warning(
                "DEMO AUTHENTICATION IS ON: any user whose password equals the user name is accepted (auth.demoPasswordEqualsName). Never use this in production."
            )
        }
        logger.info("users: \(configuration.auth.users.count) configured, admins: \(configuration.auth.admins.joined(separator: ", "))")
        for warning in configuration.warnings { logger.warning("\(warning)") }
        if configuration.console.enabled { logger.info("web console: /console") }
        if configuration.metrics.port == nil {
            logger.info(
                "metrics: /metrics on the gateway's listener, \(configuration.metrics.bearerToken == nil ? "open" : "with a bearer token")")
        }
        for id in server.hubs.order {
            guard let hub = server.hubs.hubs[id] else { continue }
            let rules = hub.ruleNames.map { rule in
                "\(rule) (\((hub.rights(of: rule) ?? []).sorted().map(\.rawValue).joined(separator: ", ")))"
            }
            logger.info(
                "hub \(id): /\(id)/… \(rules.isEmpty ? "has no shared access rules: the hub API refuses every call" : "rules: " + rules.joined(separator: "; "))"
            )
        }
        if let bridge = server.sandboxBridge {
            logger.warning("sandbox mode: the console can create devices on the sandbox at \(bridge.controlURL)")
        }
        logger.info(
            "limits: \(listener.maximumConnections) connections, header timeout \(listener.headerTimeoutSeconds) s, body timeout \(listener.bodyTimeoutSeconds) s, idle timeout \(listener.idleTimeoutSeconds) s, shutdown deadline \(listener.shutdownDeadlineSeconds) s"
        )
        if let pidFile {
            try "\(ProcessInfo.processInfo.processIdentifier)\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
        }
        defer { if let pidFile { try? FileManager.default.removeItem(atPath: pidFile) } }
        let options = self.options
        try await server.serviceGroup(signals: [.sigterm, .sigint], reloading: { try options.load() }).run()
        await store.close()
        logger.info("stopped")
    }

    static func endpoint(of platform: Platform, in services: ServicesConfiguration) -> String {
        switch platform {
        case .apns: services.apns?.endpoint ?? ""
        case .fcm: services.fcm?.endpoint ?? ""
        case .gcm: services.gcmDelivery == .fcmV1 ? "through FCM v1 \(services.fcm?.endpoint ?? "")" : services.gcm?.endpoint ?? ""
        case .wns: services.wns?.tokenEndpoint ?? ""
        case .browser: services.browser.map { _ in "each subscription's endpoint" } ?? ""
        case .hms: services.hms?.endpoint ?? ""
        case .unifiedpush: services.unifiedpush.map { _ in "each subscription's endpoint (handles.unifiedPushHosts)" } ?? ""
        }
    }
}

/// `pushgate users`: user administration helpers.
struct UsersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Manage gateway users.", subcommands: [Hash.self])

    struct Hash: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a password hash for auth.users[].passwordHash (the password is read from standard input).")

        @Option(help: "PBKDF2 iterations: 1000 to 10000000, at least 210000 recommended.")
        var iterations: Int = PasswordHash.defaultIterations

        func run() throws {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw ValidationError("type the password on standard input, for example: echo -n 'secret' | pushgate users hash")
            }
            print(try PasswordHash.make(password: line, iterations: iterations))
        }
    }
}
