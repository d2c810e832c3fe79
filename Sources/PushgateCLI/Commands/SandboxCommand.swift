import ArgumentParser
import Foundation
import Logging
import PNSSandbox
import PushgateConfig
import PushgateGateway
import PushgateLocal
import ServiceLifecycle

/// `pushgate sandbox`: runs the local APNs / FCM / GCM / WNS sandbox until interrupted.
struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract: "Run local APNs, FCM (v1 and legacy) and WNS services that speak the real protocols.",
        discussion: """
            Writes into --dir: ca.pem (trust it), the APNs key, APNs client certificates (apns-client.pem, \
            apns-client-production.pem), service-account.json, the GCM server key, \
            the WNS client secret, sandbox.json (endpoints and ids) and config.json, a gateway configuration \
            that delivers through the sandbox (check it with `pushgate templates check --secrets --config <dir>/config.json`). \
            The control API (plain HTTP) creates devices, shows their inboxes and scripts faults. \
            Stops on SIGINT or SIGTERM.
            """)

    @Option(help: "Folder for the credentials and the gateway configuration.")
    var dir: String = "sandbox"

    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "APNs port (0: any free port).")
    var apnsPort: Int = 0

    @Option(help: "Port for FCM v1, legacy GCM and Google's token endpoint (0: any free port).")
    var googlePort: Int = 0

    @Option(help: "WNS port (0: any free port).")
    var wnsPort: Int = 0

    @Option(help: "Web Push service port (0: any free port).")
    var webPushPort: Int = 0

    @Option(help: "Huawei Push Kit port, its token endpoint and send API (0: any free port).")
    var hmsPort: Int = 0

    @Option(help: "Control API port (0: any free port).")
    var controlPort: Int = 0

    @Option(help: "The app's bundle id (apns-topic).")
    var topic: String = "com.example.pushgate"

    @Option(help: "Port the generated gateway configuration listens on.")
    var gatewayPort: Int = 8080

    @Option(
        name: .customLong("gateway-tls-port"),
        help:
            "HTTPS port of the generated gateway configuration, with a certificate from the sandbox's CA (-1: no HTTPS; default 8443, or 0 with --gateway-port 0)."
    )
    var gatewayTLSOption: Int?

    var gatewayTLSPort: Int { gatewayTLSOption ?? (gatewayPort == 0 ? 0 : 8443) }

    @Option(help: "Notifications kept per device inbox (0: none, only counted; default: all). Bounds memory in long or large runs.")
    var inboxLimit: Int?

    func run() async throws {
        LineLogHandler.bootstrap(level: .info)
        let logger = Logger(label: "pushgate.sandbox")
        let sandbox = try await PushSandbox.start(
            configuration: SandboxConfiguration(
                host: host, apnsPort: apnsPort, googlePort: googlePort, wnsPort: wnsPort, webPushPort: webPushPort,
                hmsPort: hmsPort, controlPort: controlPort,
                apnsTopic: topic,
                inboxLimit: inboxLimit),
            logger: logger)
        let directory = URL(fileURLWithPath: dir).standardizedFileURL.path
        let configPath = try sandbox.writeGatewayConfiguration(
            to: directory, listenerPort: gatewayPort, listenerTLSPort: gatewayTLSPort < 0 ? nil : gatewayTLSPort)
        let caFile = (directory as NSString).appendingPathComponent("ca.pem")
        let endpoints = sandbox.endpoints
        let credentials = sandbox.credentials

        let banner = """
            Pushgate sandbox running (Ctrl-C to stop)
              APNs      \(endpoints.apns)   (HTTP/2, token or certificate auth, topic \(credentials.apnsTopic))
              FCM v1    \(endpoints.fcm)/v1/projects/\(credentials.fcmProjectID)/messages:send
              GCM       \(endpoints.gcm)
              OAuth     \(endpoints.googleToken)   \(endpoints.wnsToken)
              Entra ID  \(endpoints.entraToken)
              WNS       \(endpoints.wns)/?token=…
              Web Push  \(endpoints.webPush)/wpush/…   (VAPID key \(credentials.vapidPublicKey.prefix(12))…)
              Push Kit  \(endpoints.hms)/v1/\(credentials.hmsAppID)/messages:send   (token \(endpoints.hmsToken))
              control   \(endpoints.control)   (POST /devices {"platform":"apns"}, GET /devices/<id>/inbox, POST /faults)
              CA        \(caFile)
              gateway   \(configPath)   (HTTP on 127.0.0.1:\(gatewayPort)\(gatewayTLSPort < 0 ? "" : ", HTTPS on 127.0.0.1:\(gatewayTLSPort)"))

            """
        // Written unbuffered, so scripts that read the endpoints see them while the sandbox runs.
        FileHandle.standardOutput.write(Data(banner.utf8))
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: sandbox)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        print("sandbox stopped")
    }
}
