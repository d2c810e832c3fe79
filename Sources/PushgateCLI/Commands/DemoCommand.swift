import ArgumentParser
import Foundation
import Hummingbird
import Logging
import PNSSandbox
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateGateway
import PushgateLocal
import PushgateSQLite
import PushgateServer
import ServiceLifecycle
import UnixSignals

/// `pushgate demo`: the main job on an embedded default, end to end, on this machine.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract:
            "Run the push-service sandbox and a gateway, register a device per platform, send one message everywhere, show what happened.",
        discussion: """
            Needs no configuration and no credentials: everything runs locally in a temporary folder. \
            Exits 0 only if every step worked. With --keep-running the sandbox and the gateway stay up \
            (Ctrl-C to stop) so you can try the API yourself.
            """)

    @Option(help: "The message bob sends to alice.")
    var message: String = "Hello from Pushgate"

    @Flag(help: "Keep the sandbox and the gateway running afterwards.")
    var keepRunning = false

    typealias StepFailure = LocalGatewayError

    func run() async throws {
        LineLogHandler.bootstrap(level: .error)
        let out = DemoOutput()
        var step = "starting"
        let environment: LocalGateway
        do {
            step = "1. start the push-service sandbox and the gateway"
            out.heading(step)
            environment = try await LocalGateway.start()
            out.line("sandbox   APNs \(environment.sandbox.endpoints.apns)  (HTTP/2, TLS, JWT)")
            out.line("          FCM/GCM \(environment.sandbox.endpoints.fcm)  WNS \(environment.sandbox.endpoints.wns)")
            out.line("          Web Push \(environment.sandbox.endpoints.webPush)  (VAPID, aes128gcm)")
            out.line("gateway   \(environment.baseURL)  (SQLite store, demo users: password = name)")
            if let secure = environment.secureBaseURL {
                out.line("          \(secure)/default/  (Notification Hubs REST API)")
            }
        } catch {
            out.failure(step, "\(error)")
            throw ExitCode(1)
        }
        do {
            try await runSteps(environment, out: out, step: &step)
            out.heading("all steps worked")
        } catch {
            out.failure(step, "\(error)")
            await environment.stop()
            throw ExitCode(1)
        }
        if keepRunning {
            out.line("")
            out.line("Still running (Ctrl-C to stop). Try:")
            out.line("  web console: \(environment.baseURL)/console  (sign in as alice/alice)")
            out.line("  pushgate send --server \(environment.baseURL) --user bob:bob --to-tag alice 'Hi'")
            out.line("  curl -u bob:bob -H 'Content-Type: application/json' -d '\"hi\"' \\")
            out.line("    '\(environment.baseURL)/api/notifications?pns=all&to_tag=alice'")
            out.line("  sandbox control API: \(environment.sandbox.endpoints.control)/devices")
            out.line("  gateway config: \(environment.directory)/config.json")
            out.line("  pushgate registrations list --config \(environment.directory)/config.json")
            if let secure = environment.secureBaseURL,
                let connection = environment.server.hubs.connectionString(
                    hub: .default, rule: SharedAccessRule.defaultFullName, endpointHost: String(secure.dropFirst("https://".count)))
            {
                out.line("  Notification Hubs SDKs (trusting \(environment.directory)/ca.pem), hub 'default':")
                out.line("    \(connection)")
            }
            await waitForInterrupt()
            out.line("stopping: the gateway, the sandbox, and \(environment.directory) removed")
        }
        await environment.stop()
    }

    private func runSteps(_ environment: LocalGateway, out: DemoOutput, step: inout String) async throws {
        step = "2. register one device per platform for alice through the gateway's API"
        out.heading(step)
        var devices: [Platform: SandboxDevice] = [:]
        for platform in Platform.allCases {
            let device = await environment.sandbox.createDevice(platform)
            devices[platform] = device
            let id = try await environment.register(device, user: "alice")
            let handle = DeviceHandle(uncheckedPlatform: platform, value: device.handle).masked
            out.line(
                "\(platform.paddedServiceName) \(handle.padding(toLength: 34, withPad: " ", startingAt: 0)) registration \(id.prefix(12))…"
            )
        }

        step = "3. bob sends \"\(message)\" to alice on all platforms"
        out.heading(step)
        let sent = try await environment.call(
            "POST", "/api/notifications?pns=all&to_tag=alice", user: "bob", body: Escaping.jsonString(message))
        guard sent.status == 200 else { throw StepFailure(description: "the gateway answered \(sent.status): \(sent.bodyText)") }
        let result = try JSONDecoder().decode(NotificationResult.self, from: Data(sent.body))
        out.table(result)
        let platforms = Platform.allCases.count
        guard result.successCount == platforms else {
            throw StepFailure(description: "\(result.failureCount) of \(platforms) deliveries failed")
        }
        out.line("")
        out.line("what each device received:")
        for platform in Platform.allCases {
            let inbox = await environment.sandbox.state.inbox(deviceID: devices[platform]!.id)
            guard let last = inbox.last else { throw StepFailure(description: "the \(platform.serviceName) device received nothing") }
            out.received(platform, last)
        }

        step = "4. failure path: alice uninstalls the app on her iPhone"
        out.heading(step)
        await environment.sandbox.state.setStatus(.uninstalled, deviceID: devices[.apns]!.id)
        let gone = try await environment.call(
            "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: Escaping.jsonString(message))
        let goneResult = try JSONDecoder().decode(NotificationResult.self, from: Data(gone.body))
        // bob sees what his send did to alice's device, not which device it was.
        guard goneResult.platforms.first(where: { $0.platform == .apns })?.counts[.expiredChannel] == 1 else {
            throw StepFailure(description: "expected ExpiredChannel, got \(gone.bodyText)")
        }
        out.line("APNs answered that the device is gone -> \(Outcome.expiredChannel)")
        out.line("the gateway removed the registration and recorded why")
        let again = try await environment.call(
            "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: Escaping.jsonString(message))
        guard again.status == 404 else { throw StepFailure(description: "the removed registration was still targeted (\(again.status))") }
        out.line("sending to alice on APNs again: \(again.status) NoTargetFound")

        step = "5. secure push: only an id travels through the push service"
        out.heading(step)
        let secure = try await environment.call(
            "POST", "/api/notifications?pns=fcm&to_tag=alice&secure=true", user: "bob", body: Escaping.jsonString("Your code is 4711"))
        guard secure.status == 200, let secureID = secure.header("X-Pushgate-Secure-Id") else {
            throw StepFailure(description: "secure send answered \(secure.status): \(secure.bodyText)")
        }
        let pushed = await environment.sandbox.state.inbox(deviceID: devices[.fcm]!.id).last?.payload ?? ""
        guard pushed.contains(secureID), !pushed.contains("4711") else {
            throw StepFailure(description: "the FCM payload carried more than the id: \(pushed)")
        }
        out.line("FCM device received only the id:")
        out.line("    " + DemoOutput.payload(.fcm, pushed))
        let redeemed = try await environment.call("GET", "/api/notifications/\(secureID)", user: "alice")
        let payload = (try? JSONParser.parse(redeemed.body))?["Payload"]?.stringValue
        guard redeemed.status == 200, payload == "Your code is 4711" else {
            throw StepFailure(description: "alice could not redeem the secure message (\(redeemed.status))")
        }
        out.line("alice fetched it with her credentials: \"\(payload!)\"")
        let stranger = try await environment.call("GET", "/api/notifications/\(secureID)", user: "mallory")
        guard stranger.status == 404 else { throw StepFailure(description: "mallory could read alice's secure message") }
        out.line("mallory asking for the same id: 404")
    }

    /// Waits for SIGINT or SIGTERM, trapped (not their default action, which would end the process
    /// and leave the folder behind), while the gateway and the sandbox run; the caller then stops
    /// both and removes what the demo created.
    private func waitForInterrupt() async {
        for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { return }
    }
}
