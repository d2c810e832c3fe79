import Foundation
import Logging
import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateGateway
import ServiceLifecycle
import Synchronization
import UnixSignals

/// What a running gateway can take again without a restart, and what it was started with.
package final class ReloadableSettings: Sendable {
    let configuration: Mutex<PushgateConfiguration>
    let policy: RetryPolicy
    let clock: any PushgateClock
    package let authenticator: Authenticator
    /// One reload at a time.
    let gate = Mutex(false)

    init(configuration: PushgateConfiguration, policy: RetryPolicy, clock: any PushgateClock, authenticator: Authenticator) {
        self.configuration = Mutex(configuration)
        self.policy = policy
        self.clock = clock
        self.authenticator = authenticator
    }
}

extension GatewayServer {
    /// What a reload did.
    public struct ReloadReport: Sendable, Hashable {
        /// The apps (hubs) whose templates, credentials and rules were taken.
        public var apps: [AppID]
        /// Sections of `config.json` that changed but only take effect at the next start.
        public var restartNeeded: [String]
        /// What the configuration taken should change (``PushgateConfiguration/warnings``).
        public var warnings: [String] = []
    }

    /// Takes a configuration read again (`SIGHUP`, `pushgate reload`): every app's templates,
    /// settings and push-service credentials, the hubs' shared access rules, the users. All of it
    /// is read and checked first; anything wrong refuses the whole reload, naming it, and the
    /// running configuration stays as it was. Sends accepted before keep the payloads they were
    /// rendered with; a page of targets on the wire finishes with the credentials it went out
    /// with, and the next page uses the new ones. The listener, store, outbox, limits, metrics and
    /// console settings need a restart (``ReloadReport/restartNeeded`` names those that changed).
    public func reload(_ loaded: LoadedConfiguration) async throws(GatewayError) -> ReloadReport {
        let busy = settings.gate.withLock { busy in
            defer { busy = true }
            return busy
        }
        guard !busy else { throw GatewayError(.conflict, "a reload is already running") }
        defer { settings.gate.withLock { $0 = false } }

        let running = hubs.order
        let offered = loaded.apps.map(\.id)
        guard Set(offered) == Set(running) else {
            let added = Set(offered).subtracting(running).map(\.rawValue).sorted()
            let removed = Set(running).subtracting(offered).map(\.rawValue).sorted()
            throw GatewayError(
                .misconfigured,
                "apps: adding or removing apps needs a restart (added: \(added.isEmpty ? "none" : added.joined(separator: ", ")); "
                    + "removed: \(removed.isEmpty ? "none" : removed.joined(separator: ", ")))")
        }
        // Everything built and checked before anything changes.
        let secrets = SecretResolver(baseDirectory: loaded.baseDirectory)
        var prepared: [(gateway: Gateway, app: LoadedApp, providers: [any PushProvider])] = []
        var rules: [AppID: HubDirectory.Rules] = [:]
        for app in loaded.apps {
            guard let gateway = hubs.hubs[app.id]?.gateway else { continue }
            do {
                // The rules first: a refusal after the providers are built would leave their pools open.
                rules[app.id] = try HubDirectory.rules(of: app, secrets: secrets)
                let providers = try await GatewayAssembly.providers(
                    for: app, secrets: secrets, policy: settings.policy, clock: settings.clock, tracing: gateway.dispatcher.tracing)
                prepared.append((gateway, app, providers))
            } catch {
                for built in prepared { for provider in built.providers { await provider.shutdown() } }
                throw GatewayError(.misconfigured, "apps.\(app.id): \(error)")
            }
        }
        for built in prepared {
            await built.gateway.reload(built.app, providers: built.providers)
            built.gateway.channels.connect(await GatewayAssembly.channelAccess(for: built.app, secrets: secrets, clock: settings.clock))
        }
        hubs.replace(rules: rules)
        let next = loaded.configuration
        await settings.authenticator.reload(next.auth)
        let before = settings.configuration.withLock { current in
            defer { current = next }
            return current
        }
        var restartNeeded: [String] = []
        if before.listener != next.listener { restartNeeded.append("listener") }
        if before.store != next.store { restartNeeded.append("store") }
        if before.outbox != next.outbox { restartNeeded.append("outbox") }
        if before.limits != next.limits { restartNeeded.append("limits") }
        if before.metrics != next.metrics { restartNeeded.append("metrics") }
        if before.console != next.console { restartNeeded.append("console") }
        return ReloadReport(apps: offered, restartNeeded: restartNeeded, warnings: next.warnings)
    }
}

/// Reloads the configuration on `SIGHUP` (systemd's `ExecReload`, `pushgate reload`): `load`
/// reads it again; a configuration that does not load or check is refused with its error in
/// the log, and the running one kept.
public struct ReloadService: Service {
    let server: GatewayServer
    let load: @Sendable () throws -> LoadedConfiguration
    let logger: Logger

    public init(server: GatewayServer, logger: Logger, load: @escaping @Sendable () throws -> LoadedConfiguration) {
        self.server = server
        self.load = load
        self.logger = logger
    }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            await reloadOnce()
        }
    }

    /// One reload, logged: what was taken, or why nothing was.
    public func reloadOnce() async {
        logger.notice("SIGHUP: reloading the configuration")
        do {
            let report = try await server.reload(try load())
            logger.notice(
                "configuration reloaded",
                metadata: [
                    "apps": "\(report.apps.map(\.rawValue).joined(separator: ","))",
                    "restartNeeded": "\(report.restartNeeded.isEmpty ? "none" : report.restartNeeded.joined(separator: ","))",
                ])
            for warning in report.warnings { logger.warning("\(warning)") }
            if !report.restartNeeded.isEmpty {
                logger.warning(
                    "these settings changed but take effect only at the next start: \(report.restartNeeded.joined(separator: ", "))")
            }
        } catch {
            logger.error("reload refused, the running configuration is kept: \(error)")
        }
    }
}
