import Pushgate
import Testing

@Suite struct WireTests {
    func notification(
        _ platform: Platform, _ body: String, headers: [HTTPHeader] = [], contentType: String = "application/json"
    )
        -> RenderedNotification
    {
        RenderedNotification(platform: platform, body: Array(body.utf8), headers: headers, contentType: contentType)
    }

    func response(_ status: Int, _ body: String = "", headers: [(String, String)] = []) -> PushHTTPResponse {
        PushHTTPResponse(status: status, headers: headers.map { HTTPHeader(name: $0.0, value: $0.1) }, body: Array(body.utf8))
    }

    @Test func apnsRequestsCarryTokenTopicAndTemplateHeaders() {
        let request = APNSWire.request(
            endpoint: "https://api.push.apple.com", deviceToken: "abcd",
            notification: notification(.apns, "{}", headers: [HTTPHeader(name: "apns-push-type", value: "alert")]),
            topic: "com.example.app", providerToken: "jwt")
        #expect(request.url == "https://api.push.apple.com/3/device/abcd")
        #expect(request.header("authorization") == "bearer jwt")
        #expect(request.header("apns-topic") == "com.example.app")
        #expect(request.header("apns-push-type") == "alert")
        let own = APNSWire.request(
            endpoint: "e", deviceToken: "t",
            notification: notification(.apns, "{}", headers: [HTTPHeader(name: "apns-topic", value: "x.voip")]),
            topic: "com.example.app", providerToken: nil)
        #expect(own.headers.filter { $0.name == "apns-topic" }.map(\.value) == ["x.voip"])
        #expect(own.header("authorization") == nil)
    }

    @Test func apnsAnswersMapToOutcomes() {
        let cases: [(PushHTTPResponse, Outcome, RetryAdvice, HandleChange?)] = [
            (response(200, headers: [("apns-id", "id-1")]), .success, .never, nil),
            (response(410, #"{"reason":"Unregistered","timestamp":1700000000000}"#), .expiredChannel, .never, .remove),
            (response(410, #"{"reason":"ExpiredToken"}"#), .expiredChannel, .never, .remove),
            (response(400, #"{"reason":"BadDeviceToken"}"#), .badChannel, .never, nil),
            (response(400, #"{"reason":"DeviceTokenNotForTopic"}"#), .wrongChannel, .never, nil),
            (response(400, #"{"reason":"BadPriority"}"#), .invalidNotificationFormat, .never, nil),
            (response(403, #"{"reason":"ExpiredProviderToken"}"#), .invalidCredentials, .refreshCredentials, nil),
            (response(403, #"{"reason":"InvalidProviderToken"}"#), .invalidCredentials, .never, nil),
            (response(403, #"{"reason":"BadCertificateEnvironment"}"#), .invalidCredentials, .never, nil),
            (response(403, #"{"reason":"MissingProviderToken"}"#), .invalidCredentials, .never, nil),
            (response(429, #"{"reason":"TooManyProviderTokenUpdates"}"#), .throttled, .newConnection, nil),
            (response(403, #"{"reason":"BadCertificate"}"#), .invalidCredentials, .never, nil),
            (response(413, #"{"reason":"PayloadTooLarge"}"#), .invalidNotificationSize, .never, nil),
            (
                response(429, #"{"reason":"TooManyRequests"}"#, headers: [("retry-after", "3")]), .throttled,
                .afterBackoff(retryAfterSeconds: 3), nil
            ),
            (response(500, #"{"reason":"InternalServerError"}"#), .pnsServerError, .afterBackoff(retryAfterSeconds: nil), nil),
            (response(503, #"{"reason":"Shutdown"}"#), .pnsUnavailable, .afterBackoff(retryAfterSeconds: nil), nil),
            (response(405, #"{"reason":"MethodNotAllowed"}"#), .pnsInterfaceError, .never, nil),
        ]
        for (answer, outcome, retry, change) in cases {
            let verdict = APNSWire.classify(answer, now: 0)
            #expect(verdict.outcome == outcome, "\(answer.status)")
            #expect(verdict.retry == retry, "\(answer.status)")
            #expect(verdict.handleChange == change, "\(answer.status)")
        }
        #expect(APNSWire.classify(response(200, headers: [("apns-id", "id-1")]), now: 0).serviceMessageID == "id-1")
        #expect(
            APNSWire.classify(response(410, #"{"reason":"Unregistered","timestamp":1700000000000}"#), now: 0).reason
                == "Unregistered (since 1700000000000 ms)")
    }

    @Test func fcmRequestsWrapTheTemplateWithTheToken() throws {
        let request = FCMWire.request(
            endpoint: "https://fcm.googleapis.com", projectID: "p1", token: "t\"1",
            notification: notification(.fcm, #"{"data":{"m":"x"}}"#),
            accessToken: "ya29")
        #expect(request.url == "https://fcm.googleapis.com/v1/projects/p1/messages:send")
        #expect(request.header("authorization") == "Bearer ya29")
        let json = try JSONParser.parse(request.body)
        #expect(json["message"]?["token"]?.stringValue == "t\"1")
        #expect(json["message"]?["data"]?["m"]?.stringValue == "x")
        let empty = FCMWire.request(endpoint: "e", projectID: "p", token: "t", notification: notification(.fcm, "{}"), accessToken: "a")
        #expect(String(decoding: empty.body, as: UTF8.self) == #"{"message":{"token":"t"}}"#)
    }

    @Test func fcmTopicAndConditionTargetsReplaceTheToken() throws {
        let topic = try FCMRecipient(topic: "/topics/news")
        #expect(topic == .topic("news") && topic.target.handle.value == "/topics/news")
        #expect(topic.target.registrationID == FCMRecipient.topicTargetID)
        let condition = try FCMRecipient(condition: "'news' in topics && ('eu' in topics || !('uk' in topics))")
        for (recipient, member, value) in [
            (topic, "topic", "news"), (condition, "condition", "'news' in topics && ('eu' in topics || !('uk' in topics))"),
        ] {
            #expect(FCMRecipient(handleValue: recipient.handleValue) == recipient)
            let body = FCMWire.body(token: recipient.target.handle.value, notification: notification(.fcm, #"{"data":{"m":"x"}}"#))
            let json = try JSONParser.parse(body)
            #expect(json["message"]?[member]?.stringValue == value)
            #expect(json["message"]?["token"] == nil && json["message"]?["data"]?["m"]?.stringValue == "x")
            // Shown whole in results: a topic is no secret.
            #expect(recipient.target.handle.masked == recipient.handleValue)
        }
        // A registration token is never read as a topic or condition; a WNS channel URI with a
        // quote is still masked.
        #expect(FCMRecipient(handleValue: "dGVzdA:APA91b-x_y.z") == nil)
        let channel = DeviceHandle(uncheckedPlatform: .wns, value: "https://db5.notify.windows.com/?token=AwYAAAB'secret'0123456789")
        #expect(!channel.masked.contains("secret"))

        // Firebase's rules, refused with the field and the position.
        let refusals: [(String, String, String)] = [
            ("topic", "", "topic: is empty"), ("topic", "new s", "topic: has an invalid character U+0020 at position 4"),
            ("topic", String(repeating: "a", count: 901), "at most 900"),
            ("condition", "'a' in topics &&", "condition: ends where a topic is expected"),
            ("condition", "'a' in topics & 'b' in topics", "expects '&&', '||' or ')' at position 15"),
            ("condition", "\"a\" in topics", "expects a quoted topic name, '!' or '(' at position 1"),
            ("condition", "('a' in topics", "1 unclosed '('"), ("condition", "'a' in topics)", "unmatched ')' at position 14"),
            ("condition", "'a' in topic", "expects 'topics' at position 8"),
            ("condition", "'a b' in topics", "topic at position 1 has an invalid"),
            (
                "condition", "'a' in topics || 'b' in topics || 'c' in topics || 'd' in topics || 'e' in topics || 'f' in topics",
                "names more than 5 topics (at position 86)"
            ),
        ]
        for (field, text, expected) in refusals {
            do {
                _ = try field == "topic" ? FCMRecipient(topic: text) : FCMRecipient(condition: text)
                Issue.record("\(field) \(text) was accepted")
            } catch {
                #expect(error.description.contains(expected), "\(error.description)")
                #expect(error.field == field)
            }
        }
    }

    @Test func fcmAnswersMapToOutcomes() {
        func error(_ status: Int, _ code: String?, _ message: String = "m") -> PushHTTPResponse {
            let details =
                code.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
            return response(
                status, #"{"error":{"code":\#(status),"message":"\#(message)","status":"X"\#(details)}}"#, headers: [("retry-after", "9")])
        }
        let cases: [(PushHTTPResponse, Outcome, RetryAdvice, HandleChange?)] = [
            (response(200, #"{"name":"projects/p/messages/1"}"#), .success, .never, nil),
            (error(404, "UNREGISTERED"), .expiredChannel, .never, .remove),
            (error(403, "SENDER_ID_MISMATCH"), .wrongChannel, .never, nil),
            (error(429, "QUOTA_EXCEEDED"), .throttled, .afterBackoff(retryAfterSeconds: 60), nil),
            (error(429, nil), .throttled, .afterBackoff(retryAfterSeconds: 60), nil),
            (error(503, "UNAVAILABLE"), .pnsUnavailable, .afterBackoff(retryAfterSeconds: 9), nil),
            (error(500, "INTERNAL"), .pnsServerError, .afterBackoff(retryAfterSeconds: 9), nil),
            (error(401, "THIRD_PARTY_AUTH_ERROR"), .invalidCredentials, .never, nil),
            (error(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token"), .badChannel, .never, .remove),
            (error(400, "INVALID_ARGUMENT", "Android message is too big"), .invalidNotificationSize, .never, nil),
            (error(400, "INVALID_ARGUMENT", "Message is too big"), .invalidNotificationSize, .never, nil),
            (error(400, "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value'"), .invalidNotificationFormat, .never, nil),
            (error(401, nil), .invalidCredentials, .refreshCredentials, nil),
        ]
        for (answer, outcome, retry, change) in cases {
            let verdict = FCMWire.classify(answer, now: 0)
            #expect(verdict.outcome == outcome, "\(answer.status) \(String(decoding: answer.body.prefix(120), as: UTF8.self))")
            #expect(verdict.retry == retry)
            #expect(verdict.handleChange == change)
        }
        #expect(FCMWire.classify(response(200, #"{"name":"projects/p/messages/1"}"#), now: 0).serviceMessageID == "projects/p/messages/1")
        // The documented shape: a google.rpc.BadRequest detail names the token field.
        let violation = response(
            400,
            #"{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}]}}"#
        )
        let invalid = FCMWire.classify(violation, now: 0)
        #expect(invalid.outcome == .badChannel)
        #expect(invalid.handleChange == .remove)
        #expect(invalid.reason == "INVALID_ARGUMENT: Request contains an invalid argument. (message.token: Invalid registration token)")
        #expect(
            FCMWire.classify(error(404, "UNREGISTERED", "Requested entity was not found."), now: 0).reason
                == "UNREGISTERED: Requested entity was not found.")
    }

    @Test func gcmBatchesAndMapsEachResult() throws {
        let tokens = ["a", "b", "c", "d", "e"]
        let request = GCMWire.request(
            endpoint: "https://fcm.googleapis.com/fcm/send", serverKey: "KEY", tokens: tokens,
            notification: notification(.gcm, #"{"data":{"m":"x"}}"#))
        #expect(request.header("authorization") == "key=KEY")
        let json = try JSONParser.parse(request.body)
        #expect(json["registration_ids"]?.arrayElements?.compactMap(\.stringValue) == tokens)
        #expect(json["data"]?["m"]?.stringValue == "x")

        let answer = response(
            200,
            #"{"multicast_id":1,"success":2,"failure":3,"canonical_ids":1,"results":[{"message_id":"0:1"},{"message_id":"0:2","registration_id":"a2"},{"error":"NotRegistered"},{"error":"Unavailable"},{"error":"MismatchSenderId"}]}"#,
            headers: [("Retry-After", "4")])
        let verdicts = GCMWire.classify(answer, tokens: tokens, now: 0)
        #expect(verdicts.map(\.outcome) == [.success, .success, .expiredChannel, .pnsUnavailable, .wrongChannel])
        #expect(verdicts[1].handleChange == .replace(with: "a2"))
        #expect(verdicts[2].handleChange == .remove)
        #expect(verdicts[3].retry == .afterBackoff(retryAfterSeconds: 4))
        #expect(verdicts[0].serviceMessageID == "0:1")

        #expect(GCMWire.classify(response(401, "<html>"), tokens: tokens, now: 0).allSatisfy { $0.outcome == .invalidCredentials })
        #expect(
            GCMWire.classify(response(503, headers: [("Retry-After", "2")]), tokens: ["a"], now: 0).first?.retry
                == .afterBackoff(retryAfterSeconds: 2))
        #expect(GCMWire.classify(response(200, #"{"results":[]}"#), tokens: ["a"], now: 0).first?.outcome == .pnsInterfaceError)
    }

    @Test func wnsRequestsAndAnswers() {
        let request = WNSWire.request(
            channelURI: "https://db3.notify.windows.com/?token=x",
            notification: notification(
                .wns, "<toast/>", headers: [HTTPHeader(name: "X-WNS-Type", value: "wns/toast")], contentType: "text/xml"),
            accessToken: "tok")
        #expect(request.header("Authorization") == "Bearer tok")
        #expect(request.header("content-type") == "text/xml")
        #expect(request.header("x-wns-type") == "wns/toast")
        let cases: [(PushHTTPResponse, Outcome, RetryAdvice, HandleChange?)] = [
            (response(200, headers: [("X-WNS-Status", "received"), ("X-WNS-Msg-ID", "ABC")]), .success, .never, nil),
            (response(200, headers: [("X-WNS-Status", "dropped")]), .dropped, .never, nil),
            (response(200, headers: [("X-WNS-Status", "channelthrottled")]), .channelThrottled, .never, nil),
            (response(401), .invalidToken, .refreshCredentials, nil),
            (response(403), .wrongToken, .never, nil),
            (response(404), .badChannel, .never, .remove),
            (response(406, headers: [("Retry-After", "60")]), .throttled, .afterBackoff(retryAfterSeconds: 60), nil),
            (response(410), .expiredChannel, .never, .remove),
            (response(410, headers: [("X-WNS-Error-Description", "Domain Blocked")]), .invalidCredentials, .never, nil),
            (
                response(200, headers: [("X-WNS-Status", "dropped"), ("X-WNS-DeviceConnectionStatus", "disconnected")]),
                .channelDisconnected, .never, nil
            ),
            (response(413), .invalidNotificationSize, .never, nil),
            (response(400, headers: [("X-WNS-Error-Description", "bad xml")]), .invalidNotificationFormat, .never, nil),
            (response(503), .pnsUnavailable, .afterBackoff(retryAfterSeconds: nil), nil),
        ]
        for (answer, outcome, retry, change) in cases {
            let verdict = WNSWire.classify(answer, now: 0)
            #expect(verdict.outcome == outcome, "\(answer.status)")
            #expect(verdict.retry == retry, "\(answer.status)")
            #expect(verdict.handleChange == change, "\(answer.status)")
        }
        #expect(WNSWire.classify(response(400, headers: [("X-WNS-Error-Description", "bad xml")]), now: 0).reason == "bad xml")
        // Microsoft asks for the debug trace and correlation vector in problem reports.
        let traced = WNSWire.classify(response(200, headers: [("X-WNS-Debug-Trace", "DB3WNS4011534"), ("MS-CV", "abc.1")]), now: 0)
        #expect(
            traced.diagnostics == [
                HTTPHeader(name: "X-WNS-Debug-Trace", value: "DB3WNS4011534"), HTTPHeader(name: "MS-CV", value: "abc.1"),
            ])
    }

    @Test func oauthRequestsAndAnswers() throws {
        let google = OAuthWire.googleTokenRequest(tokenURI: "https://oauth2.googleapis.com/token", assertion: "a.b.c")
        #expect(
            String(decoding: google.body, as: UTF8.self)
                == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c")
        let wns = OAuthWire.wnsTokenRequest(
            endpoint: "https://login.live.com/accesstoken.srf", clientID: "ms-app://s-1", clientSecret: "s&c=t", scope: "notify.windows.com"
        )
        #expect(
            String(decoding: wns.body, as: UTF8.self)
                == "grant_type=client_credentials&client_id=ms-app%3A%2F%2Fs-1&client_secret=s%26c%3Dt&scope=notify.windows.com")
        let parsed = try OAuthWire.parseToken(response(200, #"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#))
        #expect(parsed.token == "ya29.x")
        #expect(parsed.expiresIn == 3599)
        #expect(try OAuthWire.parseToken(response(200, #"{"access_token":"t","expires_in":"86399"}"#)).expiresIn == 86399)
        #expect(
            performing: {
                try OAuthWire.parseToken(response(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#))
            },
            throws: { error in
                (error as! OAuthError).description == "token endpoint answered 400: invalid_grant: Invalid JWT Signature."
            })
    }
}
