import Foundation
import Logging
import Pushgate
import PushgateConfig
import PushgateDispatch

/// The app backend of the Notification Hubs tutorials, independent of HTTP: registrations with the
/// tutorial's semantics (`Gateway+Registrations.swift`), and sends rendered per platform,
/// dispatched, and reported as one result (`Gateway+Sends.swift`).
///
/// A note for whoever edits the `async throws(GatewayError)` methods: Swift 6.3.1's optimizer
/// crashed (signal 11, "While splitting coroutine") on an async typed-throws method whose `do`
/// block threw a `GatewayError` itself and whose `catch` mapped the error again
/// (`do { guard … else { throw GatewayError… }; try await store… } catch { throw Self.failure(error) }`).
/// Store calls go through ``stored(_:)``, which maps only `StoreError`; refusals are thrown
/// outside any `do`/`catch`. `scripts/test.sh` builds the release binary, so a return of the
/// pattern fails CI.
public final class Gateway: Sendable {
    public let app: LoadedApp
    public let store: any RegistrationStore & SecureMessageStore
    /// How long a secure-push payload can be fetched, in seconds. Default one day.
    public let secureMessageLifetime: Double
    public let limits: LimitsConfiguration
    public let dispatcher: Dispatcher
    let metrics: GatewayMetrics
    let logger: Logger
    let now: @Sendable () -> Timestamp

    public init(
        app: LoadedApp, store: any RegistrationStore & SecureMessageStore, dispatcher: Dispatcher, secureMessageLifetime: Double = 86400,
        limits: LimitsConfiguration = .init(), metrics: GatewayMetrics = GatewayMetrics(),
        logger: Logger = Logger(label: "pushgate.gateway"),
        now: @escaping @Sendable () -> Timestamp = { Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970) }
    ) {
        self.app = app
        self.store = store
        self.secureMessageLifetime = secureMessageLifetime
        self.limits = limits
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    var appID: AppID { app.id }

    /// Runs a store operation, turning its failure into the answer it deserves.
    func stored<T: Sendable>(_ body: () async throws(StoreError) -> T) async throws(GatewayError) -> T {
        let result: Result<T, StoreError>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw Self.storeFailure(error)
        }
    }

    static func storeFailure(_ error: StoreError) -> GatewayError {
        switch error.kind {
        case .gone: GatewayError.gone(error.message)
        case .limitReached: GatewayError(429, error.message)
        case .storage: GatewayError(503, "the registration store is unavailable")
        }
    }
}
