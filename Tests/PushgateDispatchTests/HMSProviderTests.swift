import Foundation
import Pushgate
import PushgateDispatch
import Synchronization
import Testing

/// Huawei Push Kit's provider against Push Kit's answers (`protocols.md` §9), in memory: a page of
/// 1,000 tokens in one request, the illegal tokens of a partial success pruned alone, the OAuth
/// token refreshed once a round, internal errors retried for their tokens only.
@Suite struct HMSProviderTests {
    /// Answers as Push Kit: a token request issues `token-N`; a send answers by `script`, given the
    /// send's tokens and the access token it carried.
    final class PushKit: Sendable {
        final class Counter: Sendable {
            let value = Mutex(0)
            func next() -> Int {
                value.withLock {
                    $0 += 1; return $0
                }
            }
        }

        let transport: InMemoryPushTransport
        private let issued = Counter()

        init(script: @escaping @Sendable (_ tokens: [String], _ accessToken: String, _ attempt: Int) -> PushHTTPResponse) {
            let issued = self.issued
            let sends = Counter()
            transport = InMemoryPushTransport { request in
                if request.url.hasSuffix("/oauth2/v3/token") {
                    let body = String(decoding: request.body, as: UTF8.self)
                    guard body.contains("client_secret=s3cret") else {
                        return .success(PushHTTPResponse(status: 400, body: Array(#"{"error":1101,"sub_error":12304}"#.utf8)))
                    }
                    let number = issued.next()
                    return .success(
                        PushHTTPResponse(status: 200, body: Array(#"{"access_token":"token-\#(number)","expires_in":3600}"#.utf8)))
                }
                let json = try! JSONParser.parse(request.body)
                let tokens = json["message"]?["token"]?.arrayElements?.compactMap(\.stringValue) ?? []
                let access = request.headers.first { $0.name == "authorization" }?.value ?? ""
                let attempt = sends.next()
                return .success(script(tokens, String(access.dropFirst("Bearer ".count)), attempt))
            }
        }

        var tokensIssued: Int { issued.value.withLock { $0 } }
    }

    static func answer(_ code: String, msg: String = "", status: Int = 200) -> PushHTTPResponse {
        var body: [UInt8] = Array(#"{"code":"\#(code)","msg":"#.utf8)
        Escaping.appendJSONString(msg, to: &body)
        body += Array(#","requestId":"r1"}"#.utf8)
        return PushHTTPResponse(status: status, body: body)
    }

    static func targets(_ count: Int) -> [DispatchTarget] {
        (0..<count).map {
            DispatchTarget(
                registrationID: try! RegistrationID(String(format: "r%04d", $0)),
                handle: DeviceHandle(
                    uncheckedPlatform: .hms, value: String(format: "IQAAAACy%04d", $0) + String(repeating: "x", count: 100)))
        }
    }

    func provider(_ kit: PushKit, secret: String = "s3cret") -> HMSProvider {
        HMSProvider(
            endpoint: "https://push-api.example", tokenEndpoint: "https://oauth.example/oauth2/v3/token", appID: "10492735",
            appSecret: secret, transport: kit.transport, policy: RetryPolicy(maximumAttempts: 3, initialBackoffSeconds: 0),
            clock: ManualClock())
    }

    static let notification = RenderedNotification(
        platform: .hms, body: Array(#"{"android": {"notification": {"title": "Hi", "body": "x", "click_action": {"type": 3}}}}"#.utf8),
        headers: [], contentType: "application/json")

    @Test func aPageOf1000TokensIsOneRequestAndAPartialSuccessPrunesTheIllegalTokensAlone() async throws {
        let targets = Self.targets(1000)
        let illegal = [targets[3].handle.value, targets[999].handle.value]
        let kit = PushKit { tokens, _, _ in
            Self.answer(
                "80100000", msg: #"{"success":\#(tokens.count - 2),"failure":2,"illegal_tokens":["\#(illegal[0])","\#(illegal[1])"]}"#)
        }
        let reports = await provider(kit).deliver(Self.notification, to: targets)
        let sends = kit.transport.requests.filter { $0.url.hasSuffix("messages:send") }
        #expect(sends.count == 1)
        #expect(sends.first?.url == "https://push-api.example/v1/10492735/messages:send")
        let body = try JSONParser.parse(try #require(sends.first).body)
        #expect(body["validate_only"]?.kind == .bool(false))
        #expect(body["message"]?["token"]?.arrayElements?.count == 1000)
        #expect(body["message"]?["android"]?["notification"]?["title"]?.stringValue == "Hi", "the template's message, and the tokens")
        #expect(reports.count == 1000)
        for (index, report) in reports.enumerated() {
            if index == 3 || index == 999 {
                #expect(report.verdict.outcome == .expiredChannel && report.verdict.handleChange == .remove, "\(index)")
            } else {
                #expect(report.verdict.outcome == .success, "\(index)")
            }
        }
    }

    @Test func allInvalidArePrunedAndTooLargeIsFinal() async throws {
        let targets = Self.targets(3)
        let invalid = await provider(PushKit { _, _, _ in Self.answer("80300007") }).deliver(Self.notification, to: targets)
        #expect(invalid.allSatisfy { $0.verdict.outcome == .expiredChannel && $0.verdict.handleChange == .remove && $0.attempts == 1 })
        let large = await provider(PushKit { _, _, _ in Self.answer("80300008") }).deliver(Self.notification, to: targets)
        #expect(large.allSatisfy { $0.verdict.outcome == .invalidNotificationSize && $0.attempts == 1 })
        let bad = await provider(PushKit { _, _, _ in Self.answer("80100003") }).deliver(Self.notification, to: targets)
        #expect(bad.allSatisfy { $0.verdict.outcome == .invalidNotificationFormat && $0.verdict.reason?.hasPrefix("80100003") == true })
        // A partial success whose msg names no token it can read: sent, the service's words kept.
        let unreadable = await provider(PushKit { _, _, _ in Self.answer("80100000", msg: "2 of 3 failed") }).deliver(
            Self.notification, to: targets)
        #expect(unreadable.allSatisfy { $0.verdict.outcome == .success && $0.verdict.reason == "80100000: 2 of 3 failed" })
        // An answer of no known shape: the service's own words, not sent again.
        let odd = await provider(PushKit { _, _, _ in PushHTTPResponse(status: 400, body: Array("nope".utf8)) }).deliver(
            Self.notification, to: targets)
        #expect(odd.allSatisfy { $0.verdict.outcome == .pnsInterfaceError && $0.attempts == 1 })
    }

    @Test func anExpiredAccessTokenIsRefreshedOncePerRequest() async throws {
        let targets = Self.targets(250)
        let kit = PushKit { _, access, _ in access == "token-1" ? Self.answer("80200003") : Self.answer("80000000") }
        let hms = HMSProvider(
            endpoint: "https://push-api.example", tokenEndpoint: "https://oauth.example/oauth2/v3/token", appID: "10492735",
            appSecret: "s3cret", transport: kit.transport, policy: RetryPolicy(maximumAttempts: 3, initialBackoffSeconds: 0),
            clock: ManualClock(), maximumTokensPerRequest: 100)
        let reports = await hms.deliver(Self.notification, to: targets)
        #expect(reports.allSatisfy { $0.verdict.outcome == .success })
        #expect(kit.tokensIssued == 2, "one refresh, however many requests the token was refused in")
        let sends = kit.transport.requests.filter { $0.url.hasSuffix("messages:send") }
        #expect(
            sends.map { (try? JSONParser.parse($0.body))?["message"]?["token"]?.arrayElements?.count ?? 0 } == [100, 100, 50, 100, 100, 50])
    }

    @Test func anInternalErrorIsRetriedAndAWrongSecretIsNamed() async throws {
        let targets = Self.targets(2)
        let kit = PushKit { _, _, attempt in attempt == 1 ? Self.answer("81000001", status: 500) : Self.answer("80000000") }
        let reports = await provider(kit).deliver(Self.notification, to: targets)
        #expect(reports.allSatisfy { $0.verdict.outcome == .success && $0.attempts == 2 })
        let refused = await provider(PushKit { _, _, _ in Self.answer("80000000") }, secret: "wrong").deliver(
            Self.notification, to: targets)
        #expect(refused.allSatisfy { $0.verdict.outcome == .invalidCredentials })
        #expect(refused.first?.verdict.reason?.contains("s3cret") != true, "never the secret")
    }

    @Test func aDryRunIsValidateOnly() async throws {
        let kit = PushKit { _, _, _ in Self.answer("80000000") }
        _ = await provider(kit).deliver(try #require(Self.notification.validatingOnly()), to: Self.targets(1))
        let send = try #require(kit.transport.requests.last)
        #expect(try JSONParser.parse(send.body)["validate_only"]?.kind == .bool(true))
    }
}
