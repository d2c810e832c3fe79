import ArgumentParser
import Crypto
import Foundation
import Pushgate
import PushgateCurl
import PushgateDispatch
import PushgateServer
import PushgateXML
import Synchronization

/// `pushgate bench`: throughput measurements.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Measure throughput (see scripts/bench-dispatch.sh).", subcommands: [Dispatch.self, SAS.self])

    struct Dispatch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Send APNs (or Web Push) notifications through the dispatch engine (libcurl, HTTP/2, TLS) to a sink and report notifications/s and CPU per notification.",
            discussion: """
                Every notification goes to a device token of its own (as a broadcast does: the dispatcher skips a handle \
                repeated in a page), token i being \(BenchToken.pattern). The sink must answer POST /3/device/<token> \
                with 200 for each of them (nginx does; scripts/bench-dispatch.sh gives nghttpd one file per token). The \
                run fails (exit 1) unless every notification ends Success. With --pns browser each notification is a \
                Web Push message to a subscription whose endpoint is the same URL: encrypted for it (a fresh P-256 key, \
                ECDH, HKDF, AES-128-GCM) and sent with a VAPID token (signed once for the sink's origin).
                """)

        @Option(
            help:
                "apns, wns (HTTP/1.1 to the sink's /wns/ channel URIs, --connections per pool; its OAuth token from /wns-token) or browser (Web Push: the same sink, each payload encrypted for its subscription)."
        )
        var pns: String = "apns"

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

        @Option(help: "Warm-up notifications sent (and not measured) first.")
        var warmup: Int = 2_000

        @Option(help: "Targets per page, as the send path reads them from the store.")
        var page: Int = 500

        func run() async throws {
            // WNS speaks HTTP/1.1: one request per connection at a time.
            let transport = try CurlPushTransport(
                configuration: .init(
                    httpVersion: pns == "wns" ? .http1 : .http2, caFile: caFile, maximumConnectionsPerHost: connections,
                    maximumStreamsPerConnection: streams),
                pools: pools)
            let maximumInFlight = pools * connections * streams * 2
            let provider: any PushProvider
            let payload: RenderedNotification
            let platform: Platform
            switch pns {
            case "apns":
                platform = .apns
                provider = APNSProvider(
                    endpoint: url, topic: "com.example.bench", tokens: nil, transport: transport, policy: .none, clock: SystemClock(),
                    maximumInFlight: maximumInFlight)
                payload = try PlatformTemplate(
                    platform: .apns, template: try Template(json: #"{"aps":{"alert":"{'From ' + $(user) + ': ' + $(message)}"}}"#),
                    headers: [("apns-push-type", "alert"), ("apns-priority", "10")]
                ).render(["user": "bench", "message": "throughput"])
            case "browser":
                platform = .browser
                let pair = VAPIDSigner.generateKeyPair()
                let signer = try await VAPIDSigner(
                    subject: "mailto:bench@example.com", publicKey: pair.publicKey, privateKey: pair.privateKey, clock: SystemClock())
                let host = String(url.dropFirst("https://".count).prefix { $0 != "/" })
                provider = WebPushProvider(
                    signer: signer, handles: HandlePolicy(webPushHosts: [host]), transport: transport, policy: .none, clock: SystemClock(),
                    maximumInFlight: maximumInFlight)
                payload = try PlatformTemplate(
                    platform: .browser, template: try Template(json: #"{"title":"{'From ' + $(user) + ': ' + $(message)}"}"#),
                    headers: [("TTL", "60")]
                ).render(["user": "bench", "message": "throughput"])
            case "wns":
                platform = .wns
                let host = String(url.dropFirst("https://".count).prefix { $0 != "/" })
                provider = WNSProvider(
                    tokenEndpoint: url + "/wns-token", clientID: "ms-app://s-1-15-2-bench", clientSecret: "bench-secret",
                    handles: HandlePolicy(wnsChannelHosts: [host]), transport: transport, policy: .none, clock: SystemClock(),
                    maximumInFlight: maximumInFlight)
                payload = try PlatformTemplate(
                    platform: .wns,
                    template: try Template(
                        xmlText:
                            "<toast><visual><binding template=\"ToastText01\"><text id=\"1\">{'From ' + $(user) + ': ' + $(message)}</text></binding></visual></toast>"
                    ),
                    headers: [("X-WNS-Type", "wns/toast")]
                ).render(["user": "bench", "message": "throughput"])
            default:
                throw ValidationError("--pns is apns, wns or browser, not '\(pns.prefix(20))'")
            }
            let target = BenchToken.target(platform: platform, url: url)
            let warmupReports = await provider.deliver(payload, to: (0..<warmup).map(target))
            let warmupFailures = warmupReports.filter { !$0.verdict.outcome.isSuccess }.count
            guard warmupFailures == 0 else {
                throw ValidationError(
                    "\(warmupFailures) of \(warmup) warm-up notifications did not succeed: does the sink answer every token?")
            }
            // The send path's pipeline: pages of `page` distinct targets, up to three batches on the wire.
            let pages = AsyncStream<[DispatchTarget]>(unfolding: { [sent = PageCounter(total: count, page: page)] in
                sent.next().map { range in range.map(target) }
            })
            let dispatcher = Dispatcher(providers: [provider])
            let cpuBefore = Self.cpuSeconds()
            let started = ContinuousClock.now
            let summary = await dispatcher.dispatch(
                notificationID: "bench", selection: .all, payloads: [platform: payload], targets: pages, maximumReportedTargets: 100)
            let elapsed = ContinuousClock.now - started
            let cpu = Self.cpuSeconds() - cpuBefore
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            await provider.shutdown()
            var outcomes: [Outcome: Int] = [:]
            for platform in summary.result.platforms { outcomes.merge(platform.counts, uniquingKeysWith: +) }
            var failures: [String: Int] = [:]
            for target in summary.result.targets where !target.outcome.isSuccess {
                failures[target.reason ?? "\(target.statusCode ?? 0)", default: 0] += 1
            }
            let rate = Double(count) / seconds
            print(
                "pushgate dispatch (\(platform.serviceName)): \(count) notifications in \(String(format: "%.2f", seconds)) s = \(Int(rate)) notifications/s, CPU \(String(format: "%.1f", cpu / Double(count) * 1e6)) us per notification"
            )
            print("outcomes: " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            for (reason, number) in failures.sorted(by: { $0.value > $1.value }).prefix(5) {
                print("  \(number) × \(reason) (among the listed)")
            }
            // A figure of anything but real sends is no figure: every notification must have
            // been answered Success by the sink, each exactly once.
            let succeeded = outcomes[.success, default: 0]
            let counted = outcomes.values.reduce(0, +)
            guard succeeded == count, counted == count else {
                throw ValidationError(
                    "not a measurement: \(succeeded) of \(count) notifications succeeded (\(counted) counted); the figure above is void")
            }
        }
    }
}

extension BenchCommand.Dispatch {
    /// This process's CPU time (user and system), in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// The bench's device tokens: one per notification, 64 hex digits, never ending in `ff` (the
/// benchmark scripts' nginx answers such a token 410 Unregistered, as APNs answers a gone device).
enum BenchToken {
    static let pattern = "\"ab\" 27 times, then i as 8 hex digits, then \"01\""

    static func token(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return String(repeating: "ab", count: 27) + String(repeating: "0", count: max(0, 8 - hex.count)) + hex + "01"
    }

    static func target(_ index: Int) -> DispatchTarget {
        DispatchTarget(
            registrationID: try! RegistrationID("bench-\(index)"),  // letters, digits and '-': always valid
            handle: DeviceHandle(uncheckedPlatform: .apns, value: token(index)))
    }

    /// The targets of a platform: APNs tokens, or browser subscriptions whose endpoints are the
    /// sink's `/3/device/<token>` (one receiving key pair for all: a sender's cost per message
    /// is the same for any receiver).
    static func target(platform: Platform, url: String) -> @Sendable (Int) -> DispatchTarget {
        if platform == .wns {
            // Channel URIs on the sink (nginx answers /wns/ with 200 and X-WNS-Status: received).
            return { index in
                DispatchTarget(
                    registrationID: try! RegistrationID("bench-\(index)"),
                    handle: DeviceHandle(uncheckedPlatform: .wns, value: "\(url)/wns/?token=\(token(index))"))
            }
        }
        guard platform == .browser else { return target }
        let receiver = P256.KeyAgreement.PrivateKey()
        let p256dh = Array(receiver.publicKey.x963Representation)
        let auth = Array(repeating: UInt8(7), count: 16)
        return { index in
            let subscription = WebPushSubscription(endpoint: "\(url)/3/device/\(token(index))", p256dh: p256dh, auth: auth)
            return DispatchTarget(
                registrationID: try! RegistrationID("bench-\(index)"),
                handle: DeviceHandle(uncheckedPlatform: .browser, value: subscription.handleValue))
        }
    }
}

/// Hands out ranges of target indices, a page at a time, until `total` targets are paged.
private final class PageCounter: Sendable {
    private let state: Mutex<Int>
    private let total: Int
    private let page: Int

    init(total: Int, page: Int) {
        state = Mutex(0)
        self.total = total
        self.page = max(1, page)
    }

    func next() -> Range<Int>? {
        state.withLock { start in
            guard start < total else { return nil }
            let end = min(start + page, total)
            defer { start = end }
            return start..<end
        }
    }
}

extension BenchCommand {
    /// `pushgate bench sas`: what a hub request's Shared Access Signature check costs — the same
    /// token again (verified before: a cache lookup), a fresh token each time (HMAC-SHA256), and
    /// a bare HMAC-SHA256 of the same string-to-sign as the reference, interleaved in rounds.
    struct SAS: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sas",
            abstract: "Measure the Shared Access Signature check per request: cached, uncached, and a bare HMAC beside them.")

        @Option(help: "Checks per measurement.")
        var count: Int = 200_000

        @Option(help: "Interleaved rounds (the median is reported).")
        var rounds: Int = 5

        func run() throws {
            let key = "c2FzLWJlbmNoLWtleS1vZi0zMi1ieXRlcy0tLS0tLS0="
            let rules: [String: (rights: Set<AccessRight>, key: String)] = [
                SharedAccessRule.defaultFullName: ([.listen, .send, .manage], key)
            ]
            let hub = AppID.default
            let now = Int64(Date().timeIntervalSince1970)
            let resource = "https://127.0.0.1:8443/default"
            let header = SharedAccessSignature.token(
                resourceURI: resource, keyName: SharedAccessRule.defaultFullName, key: key, expiry: now + 3600)
            // Distinct tokens (distinct expiries), made before the clock starts.
            let fresh = (0..<count).map {
                SharedAccessSignature.token(
                    resourceURI: resource, keyName: SharedAccessRule.defaultFullName, key: key, expiry: now + 3600 + Int64($0))
            }
            let encoded = SharedAccessSignature.formEncode(resource.lowercased())
            func check(_ text: String, cache: SignatureCache) -> Bool {
                if case .success = HubDirectory.verify(
                    text, rules: rules, hub: hub, host: "127.0.0.1:8443", path: "/default/messages", now: now, cache: cache)
                {
                    return true
                }
                return false
            }
            func nanoseconds(_ body: () -> Int) -> Double {
                let started = ContinuousClock.now
                let done = body()
                let elapsed = ContinuousClock.now - started
                precondition(done == count, "a check failed")
                return (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(count)
            }
            var cached: [Double] = []
            var uncached: [Double] = []
            var bare: [Double] = []
            for _ in 0..<rounds {
                let warm = SignatureCache()
                _ = check(header, cache: warm)
                cached.append(nanoseconds { (0..<count).reduce(0) { sum, _ in sum + (check(header, cache: warm) ? 1 : 0) } })
                // A cache as large as the run: every token is new, so every check computes the HMAC.
                let cold = SignatureCache(capacity: count + 1)
                uncached.append(nanoseconds { fresh.reduce(0) { sum, token in sum + (check(token, cache: cold) ? 1 : 0) } })
                bare.append(
                    nanoseconds {
                        (0..<count).reduce(0) { sum, _ in
                            sum + (SharedAccessSignature.sign(encodedResource: encoded, expiry: now + 3600, key: key).isEmpty ? 0 : 1)
                        }
                    })
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            let (c, u, b) = (median(cached), median(uncached), median(bare))
            print(String(format: "sas cached: %.0f ns/request", c))
            print(String(format: "sas uncached: %.0f ns/request", u))
            print(String(format: "hmac-sha256 reference: %.0f ns", b))
            print(String(format: "uncached / reference: %.2f, cached / uncached: %.2f", u / b, c / u))
        }
    }
}
