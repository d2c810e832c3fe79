import Foundation
import PNSSandbox
import Pushgate
import PushgateDispatch
import Testing

/// Every documented error answer of every service, made by the sandbox on the wire, and what the
/// gateway does with it: the outcome, whether it retries (and then delivers), whether it removes
/// the handle. The table is the services' documentation (Apple's status
/// and reason table, Firebase's ErrorCode page and legacy error strings, Microsoft's WNS response
/// codes), one row per documented answer.
@Suite struct FaultTableTests {
    /// What the gateway must do with one documented answer.
    enum Expected {
        /// A permanent answer: this outcome after one attempt, the handle removed or kept, nothing delivered.
        case final(Outcome, removed: Bool = false)
        /// A transient answer (or one a refreshed credential or a new connection cures): retried, then delivered.
        case retriedThenDelivered
    }

    struct Row: CustomStringConvertible {
        var service: SandboxFault.Service
        var status: Int
        var reason: String?
        var expected: Expected
        var description: String { "\(service) \(status) \(reason ?? "-")" }
    }

    static let apns: [Row] = [
        Row(service: .apns, status: 400, reason: "BadCollapseId", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "BadDeviceToken", expected: .final(.badChannel)),
        Row(service: .apns, status: 400, reason: "BadExpirationDate", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "BadMessageId", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "BadPriority", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "BadTopic", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "DeviceTokenNotForTopic", expected: .final(.wrongChannel)),
        Row(service: .apns, status: 400, reason: "DuplicateHeaders", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "IdleTimeout", expected: .retriedThenDelivered),
        Row(service: .apns, status: 400, reason: "InvalidPushType", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "MissingDeviceToken", expected: .final(.badChannel)),
        Row(service: .apns, status: 400, reason: "MissingTopic", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "PayloadEmpty", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "TopicDisallowed", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 403, reason: "BadCertificate", expected: .final(.invalidCredentials)),
        Row(service: .apns, status: 403, reason: "BadCertificateEnvironment", expected: .final(.invalidCredentials)),
        Row(service: .apns, status: 403, reason: "ExpiredProviderToken", expected: .retriedThenDelivered),
        Row(service: .apns, status: 403, reason: "Forbidden", expected: .final(.invalidCredentials)),
        Row(service: .apns, status: 403, reason: "InvalidProviderToken", expected: .final(.invalidCredentials)),
        Row(service: .apns, status: 403, reason: "MissingProviderToken", expected: .final(.invalidCredentials)),
        Row(service: .apns, status: 404, reason: "BadPath", expected: .final(.pnsInterfaceError)),
        Row(service: .apns, status: 405, reason: "MethodNotAllowed", expected: .final(.pnsInterfaceError)),
        Row(service: .apns, status: 410, reason: "ExpiredToken", expected: .final(.expiredChannel, removed: true)),
        Row(service: .apns, status: 410, reason: "Unregistered", expected: .final(.expiredChannel, removed: true)),
        Row(service: .apns, status: 413, reason: "PayloadTooLarge", expected: .final(.invalidNotificationSize)),
        Row(service: .apns, status: 429, reason: "TooManyProviderTokenUpdates", expected: .retriedThenDelivered),
        Row(service: .apns, status: 429, reason: "TooManyRequests", expected: .retriedThenDelivered),
        Row(service: .apns, status: 500, reason: "InternalServerError", expected: .retriedThenDelivered),
        Row(service: .apns, status: 503, reason: "ServiceUnavailable", expected: .retriedThenDelivered),
        Row(service: .apns, status: 503, reason: "Shutdown", expected: .retriedThenDelivered),
    ]

    static let fcm: [Row] = [
        Row(service: .fcm, status: 400, reason: "INVALID_ARGUMENT", expected: .final(.invalidNotificationFormat)),
        Row(service: .fcm, status: 404, reason: "UNREGISTERED", expected: .final(.expiredChannel, removed: true)),
        Row(service: .fcm, status: 403, reason: "SENDER_ID_MISMATCH", expected: .final(.wrongChannel)),
        // Firebase: exponential backoff from at least a minute, so not retried in place.
        Row(service: .fcm, status: 429, reason: "QUOTA_EXCEEDED", expected: .final(.throttled)),
        Row(service: .fcm, status: 503, reason: "UNAVAILABLE", expected: .retriedThenDelivered),
        Row(service: .fcm, status: 500, reason: "INTERNAL", expected: .retriedThenDelivered),
        Row(service: .fcm, status: 401, reason: "THIRD_PARTY_AUTH_ERROR", expected: .final(.invalidCredentials)),
        Row(service: .fcm, status: 401, reason: "APNS_AUTH_ERROR", expected: .final(.invalidCredentials)),
        // A 401 without an FcmError: the access token was refused; a new one cures it.
        Row(service: .fcm, status: 401, reason: nil, expected: .retriedThenDelivered),
    ]

    static let gcm: [Row] = [
        Row(service: .gcm, status: 200, reason: "MissingRegistration", expected: .final(.badChannel, removed: true)),
        Row(service: .gcm, status: 200, reason: "InvalidRegistration", expected: .final(.badChannel, removed: true)),
        Row(service: .gcm, status: 200, reason: "NotRegistered", expected: .final(.expiredChannel, removed: true)),
        Row(service: .gcm, status: 200, reason: "MismatchSenderId", expected: .final(.wrongChannel)),
        Row(service: .gcm, status: 200, reason: "MessageTooBig", expected: .final(.invalidNotificationSize)),
        Row(service: .gcm, status: 200, reason: "InvalidDataKey", expected: .final(.invalidNotificationFormat)),
        Row(service: .gcm, status: 200, reason: "InvalidTtl", expected: .final(.invalidNotificationFormat)),
        Row(service: .gcm, status: 200, reason: "InvalidPackageName", expected: .final(.invalidNotificationFormat)),
        Row(service: .gcm, status: 200, reason: "InvalidParameters", expected: .final(.invalidNotificationFormat)),
        Row(service: .gcm, status: 200, reason: "InvalidApnsCredential", expected: .final(.invalidCredentials)),
        Row(service: .gcm, status: 200, reason: "Unavailable", expected: .retriedThenDelivered),
        Row(service: .gcm, status: 200, reason: "InternalServerError", expected: .retriedThenDelivered),
        Row(service: .gcm, status: 200, reason: "DeviceMessageRateExceeded", expected: .retriedThenDelivered),
        Row(service: .gcm, status: 200, reason: "TopicsMessageRateExceeded", expected: .retriedThenDelivered),
    ]

    static let wns: [Row] = [
        Row(service: .wns, status: 200, reason: "dropped", expected: .final(.dropped)),
        Row(service: .wns, status: 200, reason: "channelthrottled", expected: .final(.channelThrottled)),
        Row(service: .wns, status: 400, reason: "The X-WNS-Type header is missing", expected: .final(.invalidNotificationFormat)),
        Row(service: .wns, status: 401, reason: "The access token has expired", expected: .retriedThenDelivered),
        Row(service: .wns, status: 403, reason: "The channel belongs to another app", expected: .final(.wrongToken)),
        Row(service: .wns, status: 404, reason: "The channel URI is not valid", expected: .final(.badChannel, removed: true)),
        Row(service: .wns, status: 405, reason: "Only POST is supported", expected: .final(.pnsInterfaceError)),
        Row(service: .wns, status: 406, reason: "Throttled", expected: .retriedThenDelivered),
        Row(service: .wns, status: 410, reason: "The channel expired", expected: .final(.expiredChannel, removed: true)),
        // Microsoft's other 410: the sender is blocked, not the channel; nothing is pruned.
        Row(service: .wns, status: 410, reason: "Domain Blocked", expected: .final(.invalidCredentials)),
        Row(service: .wns, status: 413, reason: "The notification payload exceeds 5000 bytes", expected: .final(.invalidNotificationSize)),
        Row(service: .wns, status: 500, reason: "Internal error", expected: .retriedThenDelivered),
        Row(service: .wns, status: 503, reason: "Service unavailable", expected: .retriedThenDelivered),
    ]

    /// Web Push: Mozilla autopush's answers (errno in its JSON), Apple's and FCM's reasons.
    static let browser: [Row] = [
        Row(service: .browser, status: 400, reason: "Request did not validate invalid token", expected: .final(.badChannel)),
        Row(service: .browser, status: 400, reason: "Invalid TTL header value", expected: .final(.invalidNotificationFormat)),
        Row(service: .browser, status: 400, reason: "BadWebPushTopic", expected: .final(.invalidNotificationFormat)),
        Row(service: .browser, status: 401, reason: "Invalid bearer token: expired", expected: .retriedThenDelivered),
        Row(service: .browser, status: 403, reason: "BadJwtToken", expected: .final(.invalidCredentials)),
        // The subscription was made for another application server key: useless to this one,
        // but the browser's to decide; nothing is pruned.
        Row(service: .browser, status: 403, reason: "VapidPkHashMismatch", expected: .final(.badChannel)),
        Row(service: .browser, status: 404, reason: "Not Found", expected: .final(.expiredChannel, removed: true)),
        Row(service: .browser, status: 410, reason: "Subscription is no longer valid", expected: .final(.expiredChannel, removed: true)),
        Row(service: .browser, status: 413, reason: "Payload too large", expected: .final(.invalidNotificationSize)),
        Row(service: .browser, status: 429, reason: "Too many requests", expected: .retriedThenDelivered),
        Row(service: .browser, status: 500, reason: "Internal error", expected: .retriedThenDelivered),
        Row(service: .browser, status: 503, reason: "Service unavailable", expected: .retriedThenDelivered),
    ]

    /// Huawei Push Kit: the answer's code (the sandbox's statuses where Huawei names none).
    static let hms: [Row] = [
        Row(service: .hms, status: 400, reason: "80300007", expected: .final(.expiredChannel, removed: true)),
        Row(service: .hms, status: 400, reason: "80300008", expected: .final(.invalidNotificationSize)),
        Row(service: .hms, status: 400, reason: "80100001", expected: .final(.invalidNotificationFormat)),
        Row(service: .hms, status: 400, reason: "80100003", expected: .final(.invalidNotificationFormat)),
        Row(service: .hms, status: 400, reason: "80100013", expected: .final(.invalidNotificationFormat)),
        Row(service: .hms, status: 400, reason: "80300002", expected: .final(.invalidCredentials)),
        Row(service: .hms, status: 401, reason: "80200003", expected: .retriedThenDelivered),
        Row(service: .hms, status: 401, reason: "80200001", expected: .retriedThenDelivered),
        Row(service: .hms, status: 500, reason: "81000001", expected: .retriedThenDelivered),
        Row(service: .hms, status: 503, reason: "81000001", expected: .retriedThenDelivered),
    ]

    /// UnifiedPush: the distributors' answers by status alone (ntfy's JSON errors from the
    /// sandbox's distributor), to a subscription without VAPID.
    static let unifiedPush: [Row] = [
        // Any 2xx is a delivery (the spec says 201, ntfy answers 200).
        Row(service: .unifiedpush, status: 202, reason: "accepted", expected: .final(.success)),
        Row(service: .unifiedpush, status: 404, reason: "page not found", expected: .final(.expiredChannel, removed: true)),
        Row(service: .unifiedpush, status: 410, reason: "gone", expected: .final(.expiredChannel, removed: true)),
        Row(service: .unifiedpush, status: 413, reason: "message too large", expected: .final(.invalidNotificationSize)),
        Row(service: .unifiedpush, status: 429, reason: "limit reached: too many requests", expected: .retriedThenDelivered),
        // A VAPID problem; unsigned, a fresh token would change nothing.
        Row(service: .unifiedpush, status: 401, reason: "unauthorized", expected: .final(.invalidCredentials)),
        Row(service: .unifiedpush, status: 403, reason: "forbidden", expected: .final(.invalidCredentials)),
        // ntfy: no active subscriber. Kept (it may come back), not retried in the round.
        Row(
            service: .unifiedpush, status: 507, reason: "cannot publish to UnifiedPush topic without previously active subscriber",
            expected: .final(.channelDisconnected)),
        // Anything else: retried later.
        Row(service: .unifiedpush, status: 400, reason: "invalid request", expected: .retriedThenDelivered),
        Row(service: .unifiedpush, status: 500, reason: "internal server error", expected: .retriedThenDelivered),
        Row(service: .unifiedpush, status: 502, reason: "bad gateway", expected: .retriedThenDelivered),
        Row(service: .unifiedpush, status: 503, reason: "unavailable", expected: .retriedThenDelivered),
    ]

    @Test(arguments: apns + fcm + gcm + wns + browser + hms + unifiedPush)
    func documentedAnswer(_ row: Row) async throws {
        try await DispatchFixture.with { fixture in
            let platform: Platform =
                switch row.service {
                case .apns: .apns
                case .fcm: .fcm
                case .gcm: .gcm
                case .browser: .browser
                case .hms: .hms
                case .unifiedpush: .unifiedpush
                default: .wns
                }
            let (device, target) = await fixture.target(platform)
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: row.service, handle: device.handle,
                    action: .respond(status: row.status, reason: row.reason, retryAfterSeconds: nil)))
            let provider: any PushProvider =
                switch platform {
                case .apns: fixture.apns
                case .fcm: fixture.fcm
                case .gcm: fixture.gcm
                case .wns: fixture.wns
                case .browser: fixture.browser
                case .hms: fixture.hms
                case .unifiedpush: fixture.unifiedPush
                }
            let report = await provider.deliver(try Payloads.notify(platform), to: [target])[0]
            let delivered = await fixture.sandbox.state.inbox(deviceID: device.id).count
            switch row.expected {
            case .final(let outcome, let removed):
                #expect(report.verdict.outcome == outcome, "\(row): \(report.verdict.reason ?? "")")
                #expect(report.attempts == 1, "\(row)")
                #expect((report.targetResult.handleAction == .removed) == removed, "\(row)")
                #expect(delivered == 0, "\(row)")
            case .retriedThenDelivered:
                #expect(report.verdict.outcome == .success, "\(row): \(report.verdict.reason ?? "")")
                #expect(report.attempts == 2, "\(row)")
                #expect(delivered == 1, "\(row)")
            }
        }
    }

    /// The service's reason is kept with the outcome, and WNS's diagnostics reach the result.
    @Test func reasonsAndDiagnosticsReachTheResult() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.wns)
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .wns, handle: device.handle, action: .respond(status: 410, reason: "Domain Blocked", retryAfterSeconds: nil)))
            let report = await fixture.wns.deliver(try Payloads.notify(.wns), to: [target])[0]
            #expect(report.verdict.reason == "Domain Blocked: Domain Blocked")
            let names = report.targetResult.diagnostics.map(\.name)
            #expect(names.contains("X-WNS-Debug-Trace"))
            #expect(names.contains("MS-CV"))
        }
    }
}

/// APNs certificate authentication: the gateway presents a client certificate (curl's
/// `CURLOPT_SSLCERT`) and no provider token; the sandbox checks it as APNs does.
@Suite struct APNSCertificateAuthenticationTests {
    func provider(_ fixture: DispatchFixture, certificate: String) throws -> APNSProvider {
        let transport = try CurlPushTransport(
            configuration: .init(
                httpVersion: .http2, caFile: fixture.files["ca"], clientCertificateFile: certificate, clientKeyFile: certificate))
        return APNSProvider(
            endpoint: fixture.sandbox.endpoints.apns, topic: fixture.sandbox.credentials.apnsTopic, tokens: nil, transport: transport,
            policy: .none, clock: fixture.clock)
    }

    @Test func aDevelopmentCertificateDeliversWithoutAProviderToken() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.apns)
            let apns = try provider(fixture, certificate: try #require(fixture.files["apnsCertificate"]))
            let report = await apns.deliver(try Payloads.notify(.apns), to: [target])[0]
            await apns.shutdown()
            #expect(report.verdict.outcome == .success, "\(report.verdict.reason ?? "")")
            let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
            #expect(inbox.count == 1)
            #expect(inbox.first?.headers.contains { $0.name.lowercased() == "authorization" } != true)
        }
    }

    @Test func aProductionCertificateIsTheWrongEnvironment() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.apns)
            let apns = try provider(fixture, certificate: try #require(fixture.files["apnsProductionCertificate"]))
            let report = await apns.deliver(try Payloads.notify(.apns), to: [target])[0]
            await apns.shutdown()
            #expect(report.verdict.outcome == .invalidCredentials)
            #expect(report.verdict.reason == "BadCertificateEnvironment")
            #expect(report.attempts == 1)
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).isEmpty)
        }
    }
}
