import Foundation
import Hummingbird
import Logging
import PNSSandbox
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateServer
import PushgateStore
import ServiceLifecycle

/// The sandbox and a gateway configured against it, in a temporary folder, plus an HTTP client
/// for the gateway's API.
struct DemoEnvironment {
    let sandbox: PushSandbox
    let directory: String
    let baseURL: String
    let client: CurlHTTPClient
    let dispatcher: Dispatcher
    let services: ServiceGroup
    let serverTask: Task<Void, any Error>

    static func start() async throws -> DemoEnvironment {
        let sandbox = try await PushSandbox.start()
        let directory = NSTemporaryDirectory() + "pushgate-demo-" + UUID().uuidString.prefix(8)
        let files = try sandbox.writeGatewayFiles(to: directory)
        let credentials = sandbox.credentials
        let endpoints = sandbox.endpoints
        let configPath = try SandboxGatewayConfiguration(
            apnsEndpoint: endpoints.apns, apnsTopic: credentials.apnsTopic, apnsKeyID: credentials.apnsKeyID,
            apnsTeamID: credentials.apnsTeamID,
            fcmEndpoint: endpoints.fcm, gcmEndpoint: endpoints.gcm, wnsTokenEndpoint: endpoints.wnsToken,
            wnsClientID: credentials.wnsClientID,
            wnsChannelHost: endpoints.wnsChannelHost, files: files, listenerPort: 0
        ).write(to: directory)
        let loaded = try ConfigurationLoader.load(file: configPath)
        let app = loaded.defaultApp
        let providers = try await GatewayAssembly.providers(for: app, secrets: SecretResolver(baseDirectory: directory))
        let dispatcher = Dispatcher(providers: providers)
        let store = try await SQLiteRegistrationStore.open(path: directory + "/pushgate.sqlite")
        let gateway = Gateway(app: app, store: store, dispatcher: dispatcher)
        let router = GatewayHTTP.router(
            gateway: gateway, authenticator: Authenticator(configuration: loaded.configuration.auth), maximumBodyBytes: 65536)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) })
        let services = ServiceGroup(configuration: .init(services: [.init(service: application)], logger: Logger(label: "pushgate.demo")))
        let serverTask = Task { try await services.run() }
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        return DemoEnvironment(
            sandbox: sandbox, directory: directory, baseURL: "http://127.0.0.1:\(port)",
            client: try CurlHTTPClient(configuration: .init(httpVersion: .http1, maximumConnectionsPerHost: 4)), dispatcher: dispatcher,
            services: services, serverTask: serverTask)
    }

    func stop() async {
        await services.triggerGracefulShutdown()
        _ = try? await serverTask.value
        await client.shutdown()
        await dispatcher.shutdown()
        try? await sandbox.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A call to the gateway with Basic credentials (demo users: password = name).
    func call(_ method: String, _ path: String, user: String, body: String = "") async throws -> CurlResponse {
        let credentials = Data("\(user):\(user)".utf8).base64EncodedString()
        return try await client.execute(
            CurlRequest(
                method: method, url: baseURL + path,
                headers: [("Authorization", "Basic \(credentials)"), ("Content-Type", "application/json; charset=utf-8")],
                body: Array(body.utf8)))
    }

    /// Registers `device` the way the tutorial client does; returns the registration id.
    func register(_ device: SandboxDevice, user: String) async throws -> String {
        let encodedHandle = device.handle.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? device.handle
        let created = try await call("POST", "/api/register?handle=\(encodedHandle)", user: user)
        guard created.status == 200 else { throw DemoCommand.StepFailure(description: "POST /api/register answered \(created.status)") }
        let id = String(created.bodyText.dropFirst().dropLast())
        let body = #"{"Platform": "\#(device.platform.rawValue)", "Handle": "\#(device.handle)", "Tags": []}"#
        let updated = try await call("PUT", "/api/register/\(id)", user: user, body: body)
        guard updated.status == 200 else {
            throw DemoCommand.StepFailure(description: "PUT /api/register answered \(updated.status): \(updated.bodyText)")
        }
        return id
    }
}

/// The demo's 80-column output.
final class DemoOutput: Sendable {
    func heading(_ text: String) { print("\n== \(text)") }

    func line(_ text: String) { print(text) }

    func failure(_ step: String, _ reason: String) {
        FileHandle.standardError.write(Data("\nFAILED at step \"\(step)\": \(reason)\n".utf8))
    }

    func table(_ result: NotificationResult) {
        print("platform  outcome          status  attempts  ms   service message id")
        for target in result.targets.sorted(by: { $0.platform < $1.platform }) {
            let platform = target.platform.serviceName.padding(toLength: 9, withPad: " ", startingAt: 0)
            let outcome = target.outcome.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0)
            let status = String(target.statusCode ?? 0).padding(toLength: 7, withPad: " ", startingAt: 0)
            let attempts = String(target.attempts).padding(toLength: 9, withPad: " ", startingAt: 0)
            let milliseconds = String(Int(target.latencyMilliseconds)).padding(toLength: 4, withPad: " ", startingAt: 0)
            print("\(platform) \(outcome) \(status) \(attempts) \(milliseconds) \(Self.clip(target.serviceMessageID ?? "-", 24))")
        }
        print("state \(result.state): \(result.successCount) delivered, \(result.failureCount) failed")
    }

    /// What a device received: the payload itself (FCM and GCM without the request envelope),
    /// wrapped to 80 columns.
    func received(_ platform: Platform, _ notification: ReceivedNotification) {
        let type = notification.header("x-wns-type") ?? notification.header("apns-push-type") ?? "data message"
        print("\(platform.serviceName) (\(type)):")
        for line in Self.wrap(Self.payload(platform, notification.payload), width: 76) { print("    \(line)") }
    }

    static func payload(_ platform: Platform, _ text: String) -> String {
        guard platform == .fcm || platform == .gcm, let json = try? JSONParser.parse(text) else { return text }
        let data = platform == .fcm ? json["message"]?["data"] : json["data"]
        guard let data, let template = try? Template(json: data), let rendered = try? template.renderString([:]) else { return text }
        return #"{"data":\#(rendered)}"#
    }

    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var rest = Substring(text)
        while rest.count > width {
            lines.append(String(rest.prefix(width)))
            rest = rest.dropFirst(width)
        }
        lines.append(String(rest))
        return lines
    }

    static func clip(_ text: String, _ length: Int) -> String {
        text.count <= length ? text : String(text.prefix(length - 1)) + "…"
    }
}
