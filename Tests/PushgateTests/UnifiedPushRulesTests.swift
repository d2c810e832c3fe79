import Pushgate
import Testing

/// UnifiedPush's pure rules: the subscription a registration holds (its endpoint on
/// `handles.unifiedPushHosts`, its `vapid` flag), a distributor's answers read by status
/// (``UnifiedPushWire``), the discovery answer, and `services.unifiedpush` in `config.json`.
@Suite struct UnifiedPushRulesTests {
    /// A P-256 point (the generator) and a 16-byte secret: keys that pass the checks.
    static let p256dh = "BGsX0fLhLEJH-Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWT-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU"
    static let auth = "AAECAwQFBgcICQoLDA0ODw"

    static func subscription(_ endpoint: String, vapid: String? = nil) -> String {
        #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}\#(vapid.map { #","vapid":\#($0)"# } ?? "")}"#
    }

    @Test func aSubscriptionOnAnAllowedHostIsKeptWithItsVAPIDFlag() throws {
        let policy = HandlePolicy(unifiedPushHosts: ["*.ntfy.example.com"])
        let signed = try policy.validate(Self.subscription("https://UP.ntfy.example.com:443/upAbc?up=1", vapid: "true"), for: .unifiedpush)
        #expect(signed.platform == .unifiedpush)
        let parsed = try #require(WebPushSubscription(handleValue: signed.value))
        #expect(parsed.endpoint == "https://up.ntfy.example.com/upAbc?up=1")
        #expect(parsed.vapid)
        #expect(signed.value.hasSuffix(#","vapid":true}"#))
        // Validating the canonical handle again changes nothing.
        #expect(try policy.validate(signed.value, for: .unifiedpush) == signed)

        for vapid in [nil, "false", "null"] {
            let unsigned = try policy.validate(Self.subscription("https://up.ntfy.example.com/upAbc", vapid: vapid), for: .unifiedpush)
            #expect(WebPushSubscription(handleValue: unsigned.value)?.vapid == false)
            #expect(!unsigned.value.contains("vapid"), "\(vapid ?? "absent")")
            // Found by its endpoint as a browser's subscription is.
            #expect(unsigned.value.hasPrefix(WebPushSubscription.handlePrefix(endpoint: "https://up.ntfy.example.com/upAbc")))
        }
        #expect(signed.masked.hasPrefix("https://up.ntfy.example.com/"))
        #expect(!signed.masked.contains("upAbc?up=1"))
    }

    @Test func byDefaultNoHostIsAllowedAndTheErrorSaysSo() {
        #expect(HandlePolicy().unifiedPushHosts.isEmpty)
        #expect(throws: HandleError.self) { try HandlePolicy().validate(Self.subscription("https://ntfy.sh/upAbc"), for: .unifiedpush) }
        do {
            _ = try HandlePolicy().validate(Self.subscription("https://ntfy.sh/upAbc"), for: .unifiedpush)
        } catch {
            #expect(
                error.description == "UnifiedPush subscription host 'ntfy.sh' is not allowed: the allow-list is empty (no host is allowed)")
        }
    }

    @Test func theBrowserAndUnifiedPushAllowListsAreApart() {
        let policy = HandlePolicy(webPushHosts: ["push.example.com"], unifiedPushHosts: ["ntfy.example.com"])
        #expect(throws: HandleError.self) { try policy.validate(Self.subscription("https://push.example.com/x"), for: .unifiedpush) }
        #expect(throws: HandleError.self) { try policy.validate(Self.subscription("https://ntfy.example.com/x"), for: .browser) }
        // A browser's subscription carries no vapid flag: the member is not read.
        #expect(throws: Never.self) {
            let browser = try policy.validate(Self.subscription("https://push.example.com/x", vapid: "true"), for: .browser)
            #expect(!browser.value.contains("vapid"))
        }
    }

    @Test(arguments: [
        (Self.subscription("http://ntfy.example.com/x"), "must start with https://"),
        (Self.subscription("https://user@ntfy.example.com/x"), "user information"),
        (Self.subscription("https://ntfy.example.com:8443/x"), "port 8443 is not allowed"),
        (Self.subscription("https://127.0.0.1/x"), "is an IP address"),
        (Self.subscription("https://ntfy.example.com/x", vapid: #""yes""#), "'vapid' must be true or false"),
    ])
    func anEndpointOrFlagOutsideTheRulesIsRefused(_ text: String, _ message: String) {
        let policy = HandlePolicy(unifiedPushHosts: ["ntfy.example.com"])
        do {
            _ = try policy.validate(text, for: .unifiedpush)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
            #expect(error.description.hasPrefix("UnifiedPush subscription"))
        }
    }

    // MARK: Answers

    func classify(
        _ status: Int, body: String = "", headers: [HTTPHeader] = [], signed: Bool = false,
        noActiveSubscriber: UnifiedPushConfiguration.NoActiveSubscriber = .keep
    ) -> DeliveryVerdict {
        UnifiedPushWire.classify(
            PushHTTPResponse(status: status, headers: headers, body: Array(body.utf8)), now: 1_000, signed: signed,
            noActiveSubscriber: noActiveSubscriber)
    }

    @Test func anyTwoHundredIsADelivery() {
        for status in [200, 201, 202, 204, 299] {
            #expect(classify(status).outcome == .success, "\(status)")
            #expect(classify(status).retry == .never)
        }
        #expect(classify(201, headers: [HTTPHeader(name: "Location", value: "https://up.example.com/m/1")]).serviceMessageID != nil)
    }

    @Test func theDocumentedStatusesMapAsTheSpecSays() {
        #expect(classify(404).outcome == .expiredChannel && classify(404).handleChange == .remove)
        #expect(classify(410).outcome == .expiredChannel && classify(410).handleChange == .remove)
        #expect(classify(413).outcome == .invalidNotificationSize && classify(413).retry == .never)
        let throttled = classify(429, headers: [HTTPHeader(name: "Retry-After", value: "30")])
        #expect(throttled.outcome == .throttled && throttled.retry == .afterBackoff(retryAfterSeconds: 30))
        // A VAPID problem: a signed request earns a fresh token once, an unsigned one nothing.
        #expect(classify(401, signed: true).retry == .refreshCredentials)
        #expect(classify(401).outcome == .invalidCredentials && classify(401).retry == .never)
        #expect(classify(403, signed: true).outcome == .invalidCredentials && classify(403, signed: true).retry == .never)
        // Everything else: retried later.
        for status in [400, 408, 500, 502, 503, 504] {
            #expect(classify(status).retry == .afterBackoff(retryAfterSeconds: nil), "\(status)")
            #expect(classify(status).handleChange == nil, "\(status)")
        }
    }

    @Test func ntfysNoActiveSubscriberIsKeptOrPrunedAsConfigured() {
        let body = #"{"code":50701,"http":507,"error":"cannot publish to UnifiedPush topic without previously active subscriber"}"#
        let kept = classify(507, body: body)
        #expect(kept.outcome == .channelDisconnected)
        #expect(kept.handleChange == nil)
        #expect(kept.retry == .never)
        #expect(kept.reason == "cannot publish to UnifiedPush topic without previously active subscriber (50701)")
        let pruned = classify(507, body: body, noActiveSubscriber: .prune)
        #expect(pruned.outcome == .expiredChannel)
        #expect(pruned.handleChange == .remove)
    }

    @Test func anAnswerIsNeverEchoedBeyondAShortReason() {
        // A body that is not JSON (a text or HTML page, whatever the host answers) gives no reason.
        #expect(classify(500, body: String(repeating: "secret-token-", count: 1000)).reason == nil)
        #expect(classify(400, body: "internal page: secret").reason == nil)
        // JSON's own words: at most 120 characters, control characters dropped.
        let long = #"{"error":"\#(String(repeating: "secret-token-", count: 100))"}"#
        #expect((classify(500, body: long).reason ?? "").count <= 121)
        #expect(classify(500, body: #"{"error":"line\u0001one\r\ntwo"}"#).reason == "lineonetwo")
        #expect(classify(500, body: "").reason == nil)
        #expect(
            classify(410, body: #"{"code":410,"errno":106,"message":"Subscription is no longer valid"}"#).reason
                == "Subscription is no longer valid (410)")
    }

    @Test func theDiscoveryAnswerIsChecked() {
        func problem(_ status: Int, _ body: String) -> String? {
            UnifiedPushWire.discoveryProblem(PushHTTPResponse(status: status, body: Array(body.utf8)))
        }
        #expect(problem(200, UnifiedPushWire.discoveryAnswer) == nil)
        #expect(problem(200, #"{"unifiedpush":{"version":1},"other":true}"#) == nil)
        #expect(problem(404, UnifiedPushWire.discoveryAnswer) == "GET answered 404, not 200")
        #expect(problem(200, "<html>hello</html>")?.contains("not {\"unifiedpush\"") == true)
        #expect(problem(200, #"{"unifiedpush":{"version":2}}"#) == "the answer names no UnifiedPush version 1")
    }

    // MARK: Configuration

    func decode(_ app: String) throws -> AppConfiguration? {
        try PushgateConfiguration(
            json: Array(#"{"apps": {"default": {\#(app), "templates": {"notify": {"apns": {"body": "{\"aps\":{}}"}}}}}}"#.utf8),
            file: "config.json"
        ).defaultApp
    }

    @Test func servicesUnifiedPushHasDocumentedDefaults() throws {
        let app = try #require(
            try decode(#""handles": {"unifiedPushHosts": ["*.ntfy.example.com", "127.0.0.1:8443"]}, "services": {"unifiedpush": {}}"#))
        #expect(app.handles.unifiedPushHosts == ["*.ntfy.example.com", "127.0.0.1:8443"])
        let unifiedPush = try #require(app.services.unifiedpush)
        #expect(unifiedPush == UnifiedPushConfiguration())
        #expect(unifiedPush.vapid == nil)
        #expect(unifiedPush.discoveryTimeoutSeconds == 2)
        #expect(unifiedPush.noActiveSubscriber == .keep)
        #expect(app.services.configuredPlatforms.contains(.unifiedpush))
        #expect(try decode(#""services": {}"#)?.services.configuredPlatforms.contains(.unifiedpush) == false)
    }

    @Test func servicesUnifiedPushRefusesWhatItCannotUse() {
        func refused(_ app: String, _ message: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
            do {
                _ = try decode(app)
                Issue.record("accepted \(app)", sourceLocation: sourceLocation)
            } catch {
                #expect(String(describing: error).contains(message), "\(error)", sourceLocation: sourceLocation)
            }
        }
        refused(#""services": {"unifiedpush": {"subject": "mailto:a@example.com"}}"#, "or none")
        refused(#""services": {"unifiedpush": {"noActiveSubscriber": "drop"}}"#, "must be keep or prune")
        refused(#""services": {"unifiedpush": {"discoveryTimeoutSeconds": 60}}"#, "out of range")
        refused(#""services": {"unifiedpush": {"vapid": true}}"#, "unknown key 'vapid'")
        refused(#""handles": {"unifiedPushHosts": ["127.0.0.1"]}"#, "allow it explicitly with its port")
        refused(#""handles": {"unifiedPushHosts": ["*.com"]}"#, "whole top-level domain")
    }
}
