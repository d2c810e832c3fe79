import Foundation
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateGateway

/// Builds a gateway's providers from an app's configuration: reads secrets, signs nothing yet.
public enum GatewayAssembly {
    /// Providers for every configured service of `app`. Secrets are read through `secrets`;
    /// errors name the service and the secret's source, never its value. `tracing`: the spans of
    /// their push-service requests.
    public static func providers(
        for app: LoadedApp, secrets: SecretResolver, policy: RetryPolicy = RetryPolicy(), clock: any PushgateClock = SystemClock(),
        tracing: PushgateTracing = .off
    ) async throws -> [any PushProvider] {
        var built: [any PushProvider] = []
        do {
            try await build(for: app, secrets: secrets, policy: policy, clock: clock, tracing: tracing, into: &built)
            return built
        } catch {
            // A refused start or reload leaves no connection pool open for the services read before.
            for provider in built { await provider.shutdown() }
            throw error
        }
    }

    private static func build(
        for app: LoadedApp, secrets: SecretResolver, policy: RetryPolicy, clock: any PushgateClock, tracing: PushgateTracing,
        into providers: inout [any PushProvider]
    ) async throws {
        let services = app.configuration.services
        let baseDirectory = secrets.baseDirectory
        func caFile(_ path: String?) -> String? { path.map { ConfigurationLoader.resolve($0, against: baseDirectory) } }
        // Broadcasts: one libcurl loop thread saturates a core at about 20k requests/s, so every
        // service but legacy GCM (1,000 tokens a request) gets a connection pool (thread and
        // connections) per core, up to 2.
        let pools = min(2, max(1, ProcessInfo.processInfo.activeProcessorCount))
        if let apns = services.apns {
            switch apns.authentication {
            case .token(let keyID, let teamID, let privateKey):
                let tokens: APNSTokenManager
                do {
                    tokens = try await APNSTokenManager(
                        keyID: keyID, teamID: teamID, privateKeyPEM: try secrets.resolve(privateKey), clock: clock)
                } catch {
                    throw GatewayError(.misconfigured, "services.apns.token.privateKey (key \(keyID)): \(error)")
                }
                let transport = try CurlPushTransport(configuration: .init(httpVersion: .http2, caFile: caFile(apns.caFile)), pools: pools)
                providers.append(
                    APNSProvider(
                        endpoint: apns.endpoint, broadcastEndpoint: apns.broadcastEndpoint, topic: apns.topic, tokens: tokens,
                        transport: transport, policy: policy, clock: clock, tracing: tracing))
            case .certificate(let certificate, let privateKey):
                guard case .file(let certificatePath) = certificate, case .file(let keyPath) = privateKey else {
                    throw GatewayError(.misconfigured, "APNs certificate authentication needs the certificate and key as files")
                }
                let transport = try CurlPushTransport(
                    configuration: .init(
                        httpVersion: .http2, caFile: caFile(apns.caFile),
                        clientCertificateFile: ConfigurationLoader.resolve(certificatePath, against: baseDirectory),
                        clientKeyFile: ConfigurationLoader.resolve(keyPath, against: baseDirectory)), pools: pools)
                providers.append(
                    APNSProvider(
                        endpoint: apns.endpoint, broadcastEndpoint: apns.broadcastEndpoint, topic: apns.topic, tokens: nil,
                        transport: transport, policy: policy, clock: clock, tracing: tracing))
            }
        }
        if let fcm = services.fcm {
            let account = try await GoogleServiceAccount(json: try secrets.resolve(fcm.serviceAccount))
            let transport = try CurlPushTransport(configuration: .init(httpVersion: .http2, caFile: caFile(fcm.caFile)), pools: pools)
            providers.append(
                FCMProvider(endpoint: fcm.endpoint, account: account, transport: transport, policy: policy, clock: clock, tracing: tracing))
            if services.gcmDelivery == .fcmV1 {
                // Legacy GCM after Google's shutdown: the same tokens, through v1, translated.
                let transport = try CurlPushTransport(configuration: .init(httpVersion: .http2, caFile: caFile(fcm.caFile)), pools: pools)
                providers.append(
                    FCMProvider(
                        endpoint: fcm.endpoint, account: account, transport: transport, policy: policy, clock: clock, platform: .gcm,
                        tracing: tracing))
            }
        }
        if let gcm = services.gcm, services.gcmDelivery == .legacy, let serverKey = gcm.serverKey {
            let key = try secrets.resolve(serverKey).trimmingCharacters(in: .whitespacesAndNewlines)
            let transport = try CurlPushTransport(configuration: .init(httpVersion: .http2, caFile: caFile(gcm.caFile)))
            providers.append(
                GCMProvider(endpoint: gcm.endpoint, serverKey: key, transport: transport, policy: policy, clock: clock, tracing: tracing))
        }
        if let wns = services.wns {
            let secret = try secrets.resolve(wns.clientSecret).trimmingCharacters(in: .whitespacesAndNewlines)
            let transport = try CurlPushTransport(
                configuration: .init(
                    httpVersion: .http1, caFile: caFile(wns.caFile), maximumConnectionsPerHost: WNSProvider.connectionsPerHost),
                pools: pools)
            providers.append(
                WNSProvider(
                    tokenEndpoint: wns.tokenEndpoint, clientID: wns.clientID, clientSecret: secret, scope: wns.scope,
                    handles: app.configuration.handles, transport: transport, policy: policy, clock: clock, tracing: tracing))
        }
        func vapidSigner(_ keys: WebPushConfiguration, service: String) async throws -> VAPIDSigner {
            do {
                return try await VAPIDSigner(
                    subject: keys.subject, publicKey: keys.vapidPublicKey, privateKey: try secrets.resolve(keys.vapidPrivateKey),
                    clock: clock)
            } catch let error as VAPIDSigner.Failure {
                throw GatewayError(.misconfigured, "app \(app.configuration.id) services.\(service): \(error.description)")
            }
        }
        if let browser = services.browser {
            let signer = try await vapidSigner(browser, service: "browser")
            let transport = try CurlPushTransport(configuration: .init(httpVersion: .http2, caFile: caFile(browser.caFile)), pools: pools)
            providers.append(
                WebPushProvider(
                    signer: signer, handles: app.configuration.handles, transport: transport, policy: policy, clock: clock, tracing: tracing
                ))
        }
        if let unifiedPush = services.unifiedpush {
            var signer: VAPIDSigner?
            if let keys = unifiedPush.vapid { signer = try await vapidSigner(keys, service: "unifiedpush") }
            // Every request pinned to the address the guard checked (https only, no redirects).
            let outbound = OutboundGuard(clock: clock)
            let timeout = Int(unifiedPush.discoveryTimeoutSeconds * 1000)
            let discovery = UnifiedPushDiscovery(
                transport: try CurlPushTransport(
                    configuration: .init(
                        httpVersion: .http1, caFile: caFile(unifiedPush.caFile), connectTimeoutMilliseconds: timeout,
                        totalTimeoutMilliseconds: timeout)),
                outbound: outbound, clock: clock, successSeconds: unifiedPush.discoveryCacheSeconds,
                failureSeconds: unifiedPush.discoveryFailureCacheSeconds)
            let sendTimeout = Int(unifiedPush.sendTimeoutSeconds * 1000)
            let transport = try CurlPushTransport(
                configuration: .init(
                    httpVersion: .http2, caFile: caFile(unifiedPush.caFile), connectTimeoutMilliseconds: min(sendTimeout, 5000),
                    totalTimeoutMilliseconds: sendTimeout),
                pools: pools)
            providers.append(
                WebPushProvider(
                    unifiedPush: UnifiedPushRules(
                        outbound: outbound, discovery: discovery, noActiveSubscriber: unifiedPush.noActiveSubscriber),
                    signer: signer, handles: app.configuration.handles, transport: transport, policy: policy, clock: clock, tracing: tracing
                ))
        }
        if let hms = services.hms {
            let secret = try secrets.resolve(hms.appSecret).trimmingCharacters(in: .whitespacesAndNewlines)
            let transport = try CurlPushTransport(configuration: .init(httpVersion: .http2, caFile: caFile(hms.caFile)), pools: pools)
            providers.append(
                HMSProvider(
                    endpoint: hms.endpoint, tokenEndpoint: hms.tokenEndpoint, appID: hms.appID, appSecret: secret, transport: transport,
                    policy: policy, clock: clock, maximumTokensPerRequest: hms.maximumTokensPerRequest))
        }
    }
}
