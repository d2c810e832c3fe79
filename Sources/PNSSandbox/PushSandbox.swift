import Crypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Pushgate
import ServiceLifecycle

/// A local, faithful stand-in for APNs, FCM (HTTP v1 and legacy), WNS, Web Push and Huawei Push
/// Kit: TLS everywhere with its own CA, HTTP/2 for APNs, real JWT and OAuth checks, the services'
/// exact status codes and reasons, device inboxes and scripted faults. APNs includes Live Activities (push-to-start and update
/// tokens, ActivityKit's ordering rule), broadcast channel management and broadcast sends, on the
/// APNs listener.
///
/// ```swift
/// let sandbox = try await PushSandbox.start()
/// let phone = try await sandbox.createDevice(.apns)
/// // … point a gateway at sandbox.endpoints with sandbox.credentials, trusting sandbox.caCertificatePEM …
/// let received = await sandbox.state.inbox(deviceID: phone.id)
/// try await sandbox.shutdown()
/// ```
public final class PushSandbox: Service, Sendable {
    public let configuration: SandboxConfiguration
    public let credentials: SandboxCredentials
    public let endpoints: SandboxEndpoints
    /// Devices, inboxes and faults.
    public let state: SandboxState
    /// The CA certificate (PEM) a client must trust to talk to the sandbox.
    public let caCertificatePEM: String
    /// A certificate chain and key (PEM) the CA issued for a gateway's HTTPS listener on this
    /// machine (`localhost`, `127.0.0.1`, `::1`).
    public let gatewayCertificatePEM: String
    public let gatewayPrivateKeyPEM: String

    private let listeners: [SandboxListener]
    private let group: MultiThreadedEventLoopGroup
    private let logger: Logger

    private init(
        configuration: SandboxConfiguration, credentials: SandboxCredentials, endpoints: SandboxEndpoints, state: SandboxState,
        caCertificatePEM: String, gatewayCertificatePEM: String, gatewayPrivateKeyPEM: String, listeners: [SandboxListener],
        group: MultiThreadedEventLoopGroup, logger: Logger
    ) {
        self.configuration = configuration
        self.credentials = credentials
        self.endpoints = endpoints
        self.state = state
        self.caCertificatePEM = caCertificatePEM
        self.gatewayCertificatePEM = gatewayCertificatePEM
        self.gatewayPrivateKeyPEM = gatewayPrivateKeyPEM
        self.listeners = listeners
        self.group = group
        self.logger = logger
    }

    /// Creates credentials and certificates, binds every listener and returns when they accept
    /// connections.
    public static func start(
        configuration: SandboxConfiguration = .init(), logger: Logger = Logger(label: "pushgate.sandbox")
    )
        async throws -> PushSandbox
    {
        let authority = try SandboxCertificateAuthority()
        let credentials = try SandboxCredentials(
            topic: configuration.apnsTopic, projectID: configuration.fcmProjectID, authority: authority)
        let state = SandboxState(
            clock: configuration.clock, inboxLimit: configuration.inboxLimit, channelLimit: configuration.apnsChannelLimit)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let certificate = try NIOSSLCertificate(bytes: Array(authority.serverCertificatePEM.utf8), format: .pem)
            let key = try NIOSSLPrivateKey(bytes: Array(authority.serverPrivateKeyPEM.utf8), format: .pem)
            let caCertificate = try NIOSSLCertificate(bytes: Array(authority.caCertificatePEM.utf8), format: .pem)
            func tls(_ protocols: [String], clientCertificates: Bool = false) throws -> NIOSSLContext {
                var tls = TLSConfiguration.makeServerConfiguration(
                    certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
                tls.minimumTLSVersion = .tlsv12
                tls.applicationProtocols = protocols
                if clientCertificates {
                    // Request a certificate (optional: token auth presents none), naming the CA.
                    tls.certificateVerification = .optionalVerification
                    tls.trustRoots = .certificates([caCertificate])
                    tls.sendCANameList = true
                }
                return try NIOSSLContext(configuration: tls)
            }
            let host = configuration.host
            let urlHost = host.contains(":") ? "[\(host)]" : host

            let authenticator = try await APNSAuthenticator(state: state, credentials: credentials, authority: authority)
            let apnsRouter = APNSRouter(
                devices: APNSService(state: state, credentials: credentials, authenticator: authenticator),
                channels: APNSChannelService(state: state, authenticator: authenticator),
                broadcasts: APNSBroadcastService(state: state, authenticator: authenticator))
            let apns = try await SandboxListener.bind(
                host: host, port: configuration.apnsPort,
                settings: .init(
                    protocols: .http2Only, tls: try tls(["h2"], clientCertificates: true),
                    maximumConcurrentStreams: configuration.apnsMaximumConcurrentStreams, requestClientCertificates: true),
                responder: apnsRouter, group: group, logger: logger)

            // Google's token URI must be known before its service is built (it is the JWT audience),
            // so bind first with a forwarding responder.
            let googleForwarder = ForwardingResponder()
            let google = try await SandboxListener.bind(
                host: host, port: configuration.googlePort, settings: .init(protocols: .http2AndHTTP1, tls: try tls(["h2", "http/1.1"])),
                responder: googleForwarder, group: group, logger: logger)
            let googleBase = "https://\(urlHost):\(google.port)"
            googleForwarder.target.setTarget(
                try await GoogleService(state: state, credentials: credentials, tokenURI: googleBase + "/token"))

            let wns = try await SandboxListener.bind(
                host: host, port: configuration.wnsPort, settings: .init(protocols: .http1Only, tls: try tls(["http/1.1"])),
                responder: WNSService(state: state, credentials: credentials), group: group, logger: logger)
            let wnsBase = "https://\(urlHost):\(wns.port)"

            // The Web Push service's origin is the VAPID audience it checks: bind, then build.
            let webPushForwarder = ForwardingResponder()
            let webPush = try await SandboxListener.bind(
                host: host, port: configuration.webPushPort,
                settings: .init(protocols: .http2AndHTTP1, tls: try tls(["h2", "http/1.1"])), responder: webPushForwarder, group: group,
                logger: logger)
            let webPushBase = "https://\(urlHost):\(webPush.port)"
            webPushForwarder.target.setTarget(try await WebPushService(state: state, credentials: credentials, origin: webPushBase))

            // Huawei's token endpoint and send API, on one listener with distinct paths.
            let hms = try await SandboxListener.bind(
                host: host, port: configuration.hmsPort, settings: .init(protocols: .http2AndHTTP1, tls: try tls(["h2", "http/1.1"])),
                responder: HuaweiService(state: state, credentials: credentials), group: group, logger: logger)
            let hmsBase = "https://\(urlHost):\(hms.port)"

            let controlForwarder = ForwardingResponder()
            let control = try await SandboxListener.bind(
                host: host, port: configuration.controlPort, settings: .init(protocols: .http1Only, tls: nil),
                responder: controlForwarder, group: group, logger: logger)

            let endpoints = SandboxEndpoints(
                apns: "https://\(urlHost):\(apns.port)", fcm: googleBase, gcm: googleBase + "/fcm/send", googleToken: googleBase + "/token",
                wnsToken: wnsBase + "/accesstoken.srf", wnsChannelHost: "\(urlHost):\(wns.port)", wns: wnsBase,
                entraToken: WNSConfiguration.entraTokenEndpoint(tenantID: credentials.entraTenantID, authority: wnsBase),
                webPush: webPushBase, webPushHost: "\(urlHost):\(webPush.port)", hms: hmsBase, hmsToken: hmsBase + HuaweiService.tokenPath,
                control: "http://\(urlHost):\(control.port)")
            let sandbox = PushSandbox(
                configuration: configuration, credentials: credentials, endpoints: endpoints, state: state,
                caCertificatePEM: authority.caCertificatePEM, gatewayCertificatePEM: authority.gatewayCertificatePEM,
                gatewayPrivateKeyPEM: authority.gatewayPrivateKeyPEM, listeners: [apns, google, wns, webPush, hms, control], group: group,
                logger: logger)
            controlForwarder.target.setTarget(ControlAPI(sandbox: sandbox))
            logger.info(
                "sandbox listening",
                metadata: [
                    "apns": "\(endpoints.apns)", "google": "\(googleBase)", "wns": "\(wnsBase)", "webPush": "\(webPushBase)",
                    "hms": "\(hmsBase)",
                    "control": "\(endpoints.control)",
                ])
            return sandbox
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// A new APNs signing key of the sandbox's team, trusted from now on beside the first (a key
    /// rotation): its id and its private key in PEM (a `.p8` file's content).
    public func issueAPNSKey() -> (keyID: String, privateKeyPEM: String) {
        let key = P256.Signing.PrivateKey()
        let id = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10)).uppercased()
        state.trustAPNSKey(id: id, publicKeyPEM: key.publicKey.pemRepresentation)
        return (id, key.pemRepresentation)
    }

    /// Creates a device on `platform` and returns it with its handle: an APNs device token (64 hex
    /// digits), an FCM / GCM registration token, a Huawei Push Kit token, a WNS channel URI on the
    /// sandbox, a browser's push subscription (JSON: its endpoint on the sandbox, its own P-256
    /// key and auth secret, made for the sandbox's VAPID key), or a UnifiedPush app's subscription
    /// on the sandbox's distributor (``createUnifiedPushDevice(vapid:)``, unsigned).
    public func createDevice(_ platform: Platform, belongsToAnotherApp: Bool = false) async -> SandboxDevice {
        let handle: String
        switch platform {
        case .browser:
            return webPushDevice(.browser, endpoint: endpoints.webPush + WebPushService.pathPrefix + SandboxCredentials.randomToken(120))
        case .unifiedpush:
            return await createUnifiedPushDevice()
        case .apns:
            handle = SandboxCredentials.randomHex(64)
        case .fcm, .gcm:
            handle = SandboxCredentials.randomToken(22) + ":APA91b" + SandboxCredentials.randomToken(134)
        case .hms:
            // Push Kit tokens are opaque, about 130 characters.
            handle = "IQAAAACy" + SandboxCredentials.randomToken(122)
        case .wns:
            handle = "\(endpoints.wns)/?token=" + SandboxCredentials.randomToken(88).replacingOccurrences(of: "-", with: "%2b")
        }
        return state.addDevice(platform: platform, handle: handle, belongsToAnotherApp: belongsToAnotherApp)
    }

    /// Creates a UnifiedPush app on the sandbox's distributor (ntfy's way): its subscription's
    /// endpoint is `/up/<token>` on the Web Push listener; with `vapid`, it was made for the
    /// sandbox's VAPID key (`"vapid": true`) and the distributor wants messages signed.
    public func createUnifiedPushDevice(vapid: Bool = false) async -> SandboxDevice {
        webPushDevice(
            .unifiedpush, endpoint: endpoints.webPush + WebPushService.unifiedPushPrefix + SandboxCredentials.randomToken(43), vapid: vapid)
    }

    /// A subscription of its own P-256 key and auth secret at `endpoint`.
    private func webPushDevice(_ platform: Platform, endpoint: String, vapid: Bool = false) -> SandboxDevice {
        let key = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let subscription = WebPushSubscription(
            endpoint: endpoint, p256dh: Array(key.publicKey.x963Representation), auth: auth, vapid: vapid)
        return state.addWebPushDevice(
            platform: platform, handle: subscription.handleValue, endpoint: endpoint,
            keys: SandboxWebPushKeys(privateKey: Array(key.rawRepresentation), auth: auth))
    }

    /// Writes what a gateway needs into `directory`: `ca.pem`, the APNs key
    /// (`AuthKey_<keyID>.p8`), `service-account.json`, the other services' secrets (`…-secret.txt`,
    /// `hms-app-secret.txt`, …), and `sandbox.json` (endpoints, ids and the non-file secrets).
    /// Returns the paths by name.
    @discardableResult
    public func writeGatewayFiles(to directory: String) throws -> [String: String] {
        var paths = try writeCredentialFiles(to: directory)
        paths["summary"] = try writeSummary(to: directory, files: paths)
        return paths
    }

    /// Writes the credential files (everything `writeGatewayFiles` writes but `sandbox.json`) and
    /// returns their paths by name.
    public func writeCredentialFiles(to directory: String) throws -> [String: String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files: [(String, String, String)] = [
            ("ca", "ca.pem", caCertificatePEM),
            ("apnsKey", "AuthKey_\(credentials.apnsKeyID).p8", credentials.apnsPrivateKeyPEM),
            ("serviceAccount", "service-account.json", credentials.serviceAccountJSON(tokenURI: endpoints.googleToken)),
            ("gcmServerKey", "gcm-server-key.txt", credentials.gcmServerKey),
            ("wnsClientSecret", "wns-client-secret.txt", credentials.wnsClientSecret),
            ("entraClientSecret", "entra-client-secret.txt", credentials.entraClientSecret),
            ("vapidPrivateKey", "vapid-private-key.txt", credentials.vapidPrivateKey),
            ("hmsAppSecret", "hms-app-secret.txt", credentials.hmsAppSecret),
            ("apnsCertificate", "apns-client.pem", credentials.apnsClientCertificatePEM),
            ("apnsProductionCertificate", "apns-client-production.pem", credentials.apnsProductionClientCertificatePEM),
            ("gatewayCertificate", "gateway-certificate.pem", gatewayCertificatePEM),
            ("gatewayKey", "gateway-key.pem", gatewayPrivateKeyPEM),
        ]
        var paths: [String: String] = [:]
        for (name, file, content) in files {
            let path = (directory as NSString).appendingPathComponent(file)
            try content.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            paths[name] = path
        }
        return paths
    }

    /// Writes `sandbox.json` (endpoints, ids, the non-file secrets and the paths of `files`)
    /// atomically and returns its path. Scripts poll for it as the sign that the sandbox is ready, so
    /// callers write it after every other file they hand out.
    @discardableResult
    public func writeSummary(to directory: String, files paths: [String: String]) throws -> String {
        let summary: [String: Any] = [
            "endpoints": [
                "apns": endpoints.apns, "fcm": endpoints.fcm, "gcm": endpoints.gcm, "googleToken": endpoints.googleToken,
                "wnsToken": endpoints.wnsToken, "wnsChannelHost": endpoints.wnsChannelHost, "webPush": endpoints.webPush,
                "webPushHost": endpoints.webPushHost, "entraToken": endpoints.entraToken, "hms": endpoints.hms,
                "hmsToken": endpoints.hmsToken,
                "control": endpoints.control,
            ],
            "apns": ["keyId": credentials.apnsKeyID, "teamId": credentials.apnsTeamID, "topic": credentials.apnsTopic],
            "fcm": ["projectId": credentials.fcmProjectID],
            "wns": [
                "clientId": credentials.wnsClientID, "entraTenantId": credentials.entraTenantID, "entraClientId": credentials.entraClientID,
            ],
            "browser": ["vapidPublicKey": credentials.vapidPublicKey],
            "hms": ["appId": credentials.hmsAppID],
            "files": paths,
        ]
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.prettyPrinted, .sortedKeys])
        let summaryPath = (directory as NSString).appendingPathComponent("sandbox.json")
        try data.write(to: URL(fileURLWithPath: summaryPath), options: .atomic)
        return summaryPath
    }

    /// Says GOAWAY (`{"reason":"Shutdown"}`) on every APNs and FCM HTTP/2 connection, closes
    /// everything and stops the event loop.
    public func shutdown() async throws {
        for listener in listeners {
            await listener.shutdown(goAwayReason: #"{"reason":"Shutdown"}"#)
        }
        try await group.shutdownGracefully()
    }

    /// Runs until graceful shutdown is requested (ServiceLifecycle), then shuts down.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }
}

/// A responder whose target is set once, after the listener is bound (when the target needs the
/// listener's port).
final class ForwardingResponder: SandboxHTTPResponder {
    let target = ResponderBox()

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        guard let responder = target.value else { return .text(503, "starting") }
        return await responder.respond(to: request)
    }
}
