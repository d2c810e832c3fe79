import Pushgate
import PushgateDispatch
import Synchronization
import Testing

/// A push service in the manner of Huawei Push Kit: one request carries many tokens (one per body
/// line), and the answer says per token what happened (one `token status` line each). Tokens
/// named `busy…` are refused as retryable the first time they are seen; `gone…` are refused for
/// good; the first request of all is refused as unauthorised when `expiredToken` is set.
final class ManyTokenService: Sendable {
    private struct State {
        var seen: Set<String> = []
        var expiredToken: Bool
        var credentials: [String] = []
    }

    private final class Shared: Sendable {
        let state: Mutex<State>
        init(_ state: State) { self.state = Mutex(state) }
    }

    private let shared: Shared
    let transport: InMemoryPushTransport

    init(expiredToken: Bool = false) {
        let shared = Shared(State(expiredToken: expiredToken))
        self.shared = shared
        transport = InMemoryPushTransport { request in
            let tokens = String(decoding: request.body, as: UTF8.self).split(separator: "\n").map(String.init)
            let authorization = request.headers.first { $0.name == "authorization" }?.value ?? ""
            let refused = shared.state.withLock { state -> Bool in
                state.credentials.append(authorization)
                defer { state.expiredToken = false }
                return state.expiredToken
            }
            if refused { return .success(PushHTTPResponse(status: 401)) }
            let lines = tokens.map { token -> String in
                let first = shared.state.withLock { $0.seen.insert(token).inserted }
                if token.hasPrefix("busy"), first { return "\(token) 503" }
                if token.hasPrefix("gone") { return "\(token) 404" }
                return "\(token) 200"
            }
            return .success(PushHTTPResponse(status: 200, body: Array(lines.joined(separator: "\n").utf8)))
        }
    }

    /// The credentials each request carried, in order.
    var credentials: [String] { shared.state.withLock { $0.credentials } }

    static func classify(
        _ answer: Result<PushHTTPResponse, PushTransportError>, _ targets: [DispatchTarget], _ now: Double
    ) -> [DeliveryVerdict] {
        guard case .success(let response) = answer else {
            return targets.map { _ in DeliveryVerdict(outcome: .pnsUnreachable, retry: .afterBackoff(retryAfterSeconds: nil)) }
        }
        if response.status == 401 {
            return targets.map { _ in DeliveryVerdict(outcome: .invalidCredentials, statusCode: 401, retry: .refreshCredentials) }
        }
        let statuses = Dictionary(
            String(decoding: response.body, as: UTF8.self).split(separator: "\n").map { line -> (String, Int) in
                let parts = line.split(separator: " ")
                return (String(parts[0]), Int(parts[1]) ?? 0)
            }, uniquingKeysWith: { first, _ in first })
        return targets.map { target in
            switch statuses[target.handle.value] {
            case 200?: DeliveryVerdict(outcome: .success, statusCode: 200)
            case 503?: DeliveryVerdict(outcome: .pnsUnavailable, statusCode: 503, retry: .afterBackoff(retryAfterSeconds: nil))
            case 404?: DeliveryVerdict(outcome: .expiredChannel, statusCode: 404, handleChange: .remove)
            default: DeliveryVerdict(outcome: .unknownError, reason: "no result for the token")
            }
        }
    }
}

/// A provider of many targets per request, on the shared batched retry loop: nothing about
/// batches or retries is its own.
final class ManyTokenProvider: PushProvider {
    let platform = Platform.fcm
    let service: ManyTokenService
    let delivery: BatchedRetryingDelivery
    private final class Counter: Sendable { let count = Mutex(0) }
    private let counter = Counter()
    var refreshes: Int { counter.count.withLock { $0 } }

    init(service: ManyTokenService, delivery: BatchedRetryingDelivery) {
        self.service = service
        self.delivery = delivery
    }

    func deliver(_ notification: RenderedNotification, to targets: [DispatchTarget], answers: DeliveryAnswers?) async -> [DeliveryReport] {
        await delivery.deliver(
            to: targets, transport: service.transport,
            credential: { [counter] refresh, _ in
                let issued = counter.count.withLock { count -> Int in
                    if refresh { count += 1 }
                    return count
                }
                return .issued("token-\(issued)")
            },
            request: { targets, credential in
                PushHTTPRequest(
                    url: "https://push.example/v1/app/messages:send", headers: [HTTPHeader(name: "authorization", value: credential ?? "")],
                    body: Array(targets.map(\.handle.value).joined(separator: "\n").utf8))
            },
            classify: ManyTokenService.classify, answers: answers)
    }

    func shutdown() async {}
}

@Suite struct BatchedDeliveryTests {
    static func targets(_ names: [String]) -> [DispatchTarget] {
        names.enumerated().map { index, name in
            DispatchTarget(
                registrationID: try! RegistrationID(String(format: "m%05d", index)),
                handle: DeviceHandle(uncheckedPlatform: .fcm, value: name))
        }
    }

    static func provider(_ service: ManyTokenService, perRequest: Int) -> ManyTokenProvider {
        ManyTokenProvider(
            service: service, delivery: BatchedRetryingDelivery(policy: RetryPolicy(), clock: ManualClock(), maximumPerRequest: perRequest))
    }

    /// A page of 1,000 targets goes out in one request; the answer calls 7 of them retryable and
    /// 3 gone: only the 7 are sent again, together, in one request, and every target ends with
    /// its own outcome.
    @Test func onlyTheTargetsTheServiceCalledRetryableAreSentAgainInOneRequest() async throws {
        let service = ManyTokenService()
        let names = (0..<1000).map { index in
            index % 100 == 5 && index < 700 ? "busy\(index)" : index >= 997 ? "gone\(index)" : "ok\(index)"
        }
        let provider = Self.provider(service, perRequest: 1000)
        let reports = await provider.deliver(try Payloads.notify(.fcm), to: Self.targets(names), answers: nil)
        let requests = service.transport.requests.map { String(decoding: $0.body, as: UTF8.self).split(separator: "\n").map(String.init) }
        #expect(requests.count == 2, "one request for the page, one for its retryable targets")
        #expect(requests.first?.count == 1000)
        #expect(requests.last == names.filter { $0.hasPrefix("busy") }, "only the retryable ones, in one request")
        #expect(reports.map(\.target.handle.value) == names, "a report per target, in order")
        #expect(reports.filter { $0.verdict.outcome == .success }.count == 997)
        #expect(reports.filter { $0.verdict.outcome == .expiredChannel }.count == 3)
        #expect(
            reports.filter { $0.target.handle.value.hasPrefix("busy") }.allSatisfy { $0.attempts == 2 && $0.verdict.outcome == .success })
        #expect(reports.filter { $0.target.handle.value.hasPrefix("ok") }.allSatisfy { $0.attempts == 1 })
    }

    /// Past the service's bound per request, a page is split; a refused credential is refreshed
    /// once per request, not once per target.
    @Test func aPageIsSplitAtTheBoundAndACredentialIsRefreshedOncePerRequest() async throws {
        let service = ManyTokenService(expiredToken: true)
        let names = (0..<250).map { "ok\($0)" }
        let provider = Self.provider(service, perRequest: 100)
        let reports = await provider.deliver(try Payloads.notify(.fcm), to: Self.targets(names), answers: nil)
        let sizes = service.transport.requests.map { String(decoding: $0.body, as: UTF8.self).split(separator: "\n").count }
        // The first request (100 targets) is refused: its targets go again with the second round.
        #expect(sizes == [100, 100, 50, 100], "\(sizes)")
        #expect(service.credentials == ["token-0", "token-0", "token-0", "token-1"])
        #expect(provider.refreshes == 1)
        #expect(reports.allSatisfy { $0.verdict.outcome == .success })
    }
}

/// A fan-out is split across the curl pools only where each part carries enough requests: a
/// user's three devices go to one pool in one submission (one crossing to its thread and back).
@Suite struct TransportSplitTests {
    @Test func aFewRequestsGoToOnePoolAndAFanOutIsSplit() {
        #expect(CurlPushTransport.parts(requests: 3, pools: 2) == 1)
        #expect(CurlPushTransport.parts(requests: 15, pools: 2) == 1)
        #expect(CurlPushTransport.parts(requests: 16, pools: 2) == 2)
        #expect(CurlPushTransport.parts(requests: 25, pools: 2) == 2)
        #expect(CurlPushTransport.parts(requests: 500, pools: 2) == 2)
        #expect(CurlPushTransport.parts(requests: 500, pools: 1) == 1)
        #expect(CurlPushTransport.parts(requests: 1, pools: 4) == 1)
    }
}
