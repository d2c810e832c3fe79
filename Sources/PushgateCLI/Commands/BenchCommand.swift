import ArgumentParser
import Foundation
import Pushgate
import PushgateCurl
import PushgateDispatch

/// `pushgate bench`: throughput measurements.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Measure throughput (see scripts/bench-dispatch.sh).", subcommands: [Dispatch.self])

    struct Dispatch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Send APNs-shaped notifications through the dispatch engine (libcurl, HTTP/2, TLS) to a sink and report notifications/s.",
            discussion: "The sink only has to answer POST /3/device/<token>; scripts/bench-dispatch.sh runs nghttpd and h2load beside it.")

        @Option(help: "Base URL of the sink (https://127.0.0.1:PORT).")
        var url: String

        @Option(help: "CA file to verify the sink with.")
        var caFile: String?

        @Option(help: "Notifications to send.")
        var count: Int = 100_000

        @Option(help: "HTTP/2 connections to the sink.")
        var connections: Int = 1

        @Option(help: "Concurrent streams per connection.")
        var streams: Int = 100

        @Option(help: "Connection pools (each with its own libcurl loop thread and connections).")
        var pools: Int = 1

        @Option(help: "Device token (hex) in the request path.")
        var token: String = String(repeating: "ab", count: 32)

        @Option(help: "Warm-up notifications sent (and not measured) first.")
        var warmup: Int = 2_000

        func run() async throws {
            let transport = try CurlPushTransport(
                configuration: .init(caFile: caFile, maximumConnectionsPerHost: connections, maximumStreamsPerConnection: streams),
                pools: pools)
            let provider = APNSProvider(
                endpoint: url, topic: "com.example.bench", tokens: nil, transport: transport, policy: .none, clock: SystemClock(),
                maximumInFlight: pools * connections * streams * 2)
            let payload = try PlatformTemplate(
                platform: .apns, template: try Template(json: #"{"aps":{"alert":"{'From ' + $(user) + ': ' + $(message)}"}}"#),
                headers: [("apns-push-type", "alert"), ("apns-priority", "10")]
            ).render(["user": "bench", "message": "throughput"])
            let target = DispatchTarget(registrationID: .random(), handle: DeviceHandle(uncheckedPlatform: .apns, value: token))

            _ = await provider.deliver(payload, to: Array(repeating: target, count: warmup))
            var outcomes: [Outcome: Int] = [:]
            var failures: [String: Int] = [:]
            let batch = 10_000
            let started = ContinuousClock.now
            var sent = 0
            while sent < count {
                let size = min(batch, count - sent)
                for report in await provider.deliver(payload, to: Array(repeating: target, count: size)) {
                    outcomes[report.verdict.outcome, default: 0] += 1
                    if !report.verdict.outcome.isSuccess {
                        failures[report.verdict.reason ?? "\(report.verdict.statusCode ?? 0)", default: 0] += 1
                    }
                }
                sent += size
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            await provider.shutdown()
            let rate = Double(count) / seconds
            print("pushgate dispatch: \(count) notifications in \(String(format: "%.2f", seconds)) s = \(Int(rate)) notifications/s")
            print("outcomes: " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            for (reason, number) in failures.sorted(by: { $0.value > $1.value }).prefix(5) { print("  \(number) × \(reason)") }
        }
    }
}
