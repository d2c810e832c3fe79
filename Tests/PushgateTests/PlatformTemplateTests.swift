import Pushgate
import Testing

@Suite struct PlatformTemplateTests {
    let alert = #"{"aps":{"alert":"$(message)"}}"#

    @Test func apnsHeadersAreCheckedAndCanonicallyLowerCase() throws {
        let template = try PlatformTemplate(
            platform: .apns, template: try Template(json: alert),
            headers: [("APNS-Push-Type", "alert"), ("apns-priority", "10"), ("apns-collapse-id", "c1")])
        #expect(template.headers.map(\.name) == ["apns-push-type", "apns-priority", "apns-collapse-id"])
        #expect(template.contentType == "application/json")

        let cases: [([(String, String)], String)] = [
            ([("apns-push-type", "loud")], "'loud' is not an APNs push type"),
            ([("apns-priority", "7")], "'7' must be 1, 5 or 10"),
            ([("apns-expiration", "soon")], "must be UNIX epoch seconds"),
            ([("apns-collapse-id", String(repeating: "c", count: 65))], "is 65 bytes; the limit is 64"),
            ([("apns-push-type", "background"), ("apns-priority", "10")], "background notifications must use priority 5"),
            ([("x-custom", "1")], "is not an APNs template header"),
            ([("apns-topic", "a\r\nInjected: yes")], "must not contain control characters"),
            ([("apns-priority", "10"), ("APNS-PRIORITY", "5")], "is given twice"),
        ]
        for (headers, message) in cases {
            #expect(
                performing: {
                    try PlatformTemplate(platform: .apns, template: try Template(json: alert), headers: headers)
                },
                throws: { error in
                    (error as! TemplateError).description.contains(message)
                })
        }
    }

    @Test func wnsTypeIsInferredFromTheRootElementAndMustMatchIt() throws {
        let toast = try Template(
            xml: XMLTemplateDocument(root: XMLTemplateElement(name: "toast", children: [.text("hi")]), hasDeclaration: false))
        let inferred = try PlatformTemplate(platform: .wns, template: toast)
        #expect(inferred.header("X-WNS-Type") == "wns/toast")
        #expect(inferred.contentType == "text/xml")
        #expect {
            try PlatformTemplate(platform: .wns, template: toast, headers: [("X-WNS-Type", "wns/badge")])
        } throws: { error in
            (error as! TemplateError).description.contains("X-WNS-Type wns/badge needs a <badge> root element")
        }
        let raw = try PlatformTemplate(platform: .wns, template: try Template(raw: "$(secureId)"))
        #expect(raw.header("x-wns-type") == "wns/raw")
        #expect(raw.contentType == "application/octet-stream")
        #expect(throws: TemplateError.self) {
            try PlatformTemplate(platform: .wns, template: try Template(raw: "x"), headers: [("X-WNS-Type", "wns/toast")])
        }
        #expect(throws: TemplateError.self) {
            try PlatformTemplate(platform: .wns, template: toast, headers: [("X-WNS-TTL", "soon")])
        }
        #expect(throws: TemplateError.self) {
            try PlatformTemplate(platform: .wns, template: toast, headers: [("X-WNS-Tag", "way-too-long-tag-value")])
        }
    }

    @Test func fcmTemplatesAreMessagesWithoutTargetsAndStringData() throws {
        #expect(throws: Never.self) {
            try PlatformTemplate(
                platform: .fcm, template: try Template(json: #"{"data":{"m":"$(message)"},"android":{"priority":"high"}}"#))
        }
        let cases: [(String, String)] = [
            (#"{"token":"x","data":{}}"#, "the gateway sets the message target; remove 'token'"),
            (#"{"data":{"count":1}}"#, "$.data.count: FCM data values must be strings"),
            (##"{"data":{"count":"#(n)"}}"##, "FCM data values must be strings"),
            (#"{"dta":{}}"#, "is not a field of an FCM v1 message"),
            (#"["data"]"#, "must be a JSON object"),
        ]
        for (body, message) in cases {
            #expect(
                performing: {
                    try PlatformTemplate(platform: .fcm, template: try Template(json: body))
                },
                throws: { error in
                    (error as! TemplateError).description.contains(message)
                })
        }
        #expect(throws: TemplateError.self) {
            try PlatformTemplate(platform: .gcm, template: try Template(json: #"{"registration_ids":[]}"#))
        }
        #expect(throws: TemplateError.self) {
            try PlatformTemplate(platform: .gcm, template: try Template(json: alert), headers: [("priority", "high")])
        }
    }

    @Test func renderingChecksEachServicesSizeLimit() throws {
        let apns = try PlatformTemplate(platform: .apns, template: try Template(json: alert))
        let overhead = try apns.render(["message": ""]).body.count
        #expect(try apns.render(["message": String(repeating: "x", count: 4096 - overhead)]).body.count == 4096)
        #expect {
            try apns.render(["message": String(repeating: "x", count: 4097 - overhead)])
        } throws: { error in
            let error = error as! NotificationRenderError
            return error.description == "APNs payload is 4097 bytes; the limit is 4096 bytes" && error.isOverLimit
        }
        // Escaping counts: 2000 quotes become 4000 bytes.
        #expect(throws: NotificationRenderError.self) { try apns.render(["message": String(repeating: "\"", count: 2100)]) }

        let voip = try PlatformTemplate(platform: .apns, template: try Template(json: alert), headers: [("apns-push-type", "voip")])
        #expect(throws: Never.self) { try voip.render(["message": String(repeating: "x", count: 5000)]) }

        let wns = try PlatformTemplate(platform: .wns, template: try Template(raw: "$(m)"))
        #expect(throws: Never.self) { try wns.render(["m": String(repeating: "x", count: 5000)]) }
        #expect {
            try wns.render(["m": String(repeating: "x", count: 5001)])
        } throws: { error in
            (error as! NotificationRenderError).description == "WNS payload is 5001 bytes; the limit is 5000 bytes"
        }
        #expect(PayloadLimit.maximumBytes(for: .fcm) == 4096)
        #expect(PayloadLimit.maximumBytes(for: .gcm) == 4096)
        #expect(throws: PayloadSizeError.self) { try PayloadLimit.check(size: 4097, platform: .gcm) }
    }

    @Test func headerValuesMayVaryPerSend() throws {
        let apns = try PlatformTemplate(
            platform: .apns, template: try Template(json: alert),
            headers: [("apns-push-type", "alert"), ("apns-collapse-id", "$(conversation)"), ("apns-id", "$(id)")])
        let rendered = try apns.render(["message": "hi", "conversation": "c42", "id": "123e4567-e89b-12d3-a456-426614174000"])
        #expect(
            rendered.headers.map(\.description) == [
                "apns-push-type: alert", "apns-collapse-id: c42", "apns-id: 123e4567-e89b-12d3-a456-426614174000",
            ])
        // A missing property leaves the header out.
        #expect(try apns.render(["message": "hi"]).headers.map(\.name) == ["apns-push-type"])
        // A value the service would refuse is refused per send, naming the header.
        #expect {
            try apns.render(["message": "hi", "conversation": String(repeating: "c", count: 65)])
        } throws: { error in
            (error as! NotificationRenderError).description == "header apns-collapse-id: is 65 bytes; the limit is 64"
        }
        #expect {
            try apns.render(["message": "hi", "id": "NOT-A-UUID"])
        } throws: { error in
            !(error as! NotificationRenderError).isOverLimit
        }
        let raw = try PlatformTemplate(platform: .wns, template: try Template(raw: "$(message)"), headers: [("X-WNS-TTL", "$(ttl)")])
        #expect(try raw.render(["message": "m", "ttl": "90"]).headers.contains(HTTPHeader(name: "X-WNS-TTL", value: "90")))
        // Microsoft: X-WNS-Tag is for tiles only; X-WNS-Group for Windows Phone only.
        #expect {
            try PlatformTemplate(platform: .wns, template: try Template(raw: "$(message)"), headers: [("X-WNS-Tag", "$(conversation)")])
        } throws: { error in
            (error as! TemplateError).reason.contains("tile")
        }
        #expect(throws: TemplateError.self) {
            try PlatformTemplate(platform: .wns, template: try Template(raw: "x"), headers: [("X-WNS-Group", "g1")])
        }
        // Headers that shape the payload stay fixed.
        #expect(throws: TemplateError.self) {
            try PlatformTemplate(platform: .apns, template: try Template(json: alert), headers: [("apns-push-type", "$(type)")])
        }
        // Microsoft: X-WNS-SuppressPopup fails on every Windows (non-Phone) channel.
        #expect {
            try PlatformTemplate(platform: .wns, template: try Template(raw: "x"), headers: [("X-WNS-SuppressPopup", "true")])
        } throws: { error in
            (error as! TemplateError).reason.contains("Windows Phone")
        }
    }

    @Test func aTimeToLiveTakesEachServicesForm() throws {
        let now = 1_700_000_000.0
        let apns = try PlatformTemplate(platform: .apns, template: try Template(json: alert), headers: [("apns-expiration", "5")])
            .render(["message": "m"]).withTimeToLive(3600, now: now)
        #expect(apns.headers.filter { $0.name == "apns-expiration" }.map(\.value) == ["1700003600"])
        #expect(
            try PlatformTemplate(platform: .apns, template: try Template(json: alert)).render(["message": "m"]).withTimeToLive(0, now: now)
                .headers.contains(HTTPHeader(name: "apns-expiration", value: "0")))
        let fcm = try PlatformTemplate(
            platform: .fcm, template: try Template(json: #"{"data":{"m":"$(message)"},"android":{"priority":"high"}}"#)
        )
        .render(["message": "m"]).withTimeToLive(60, now: now)
        #expect(String(decoding: fcm.body, as: UTF8.self) == #"{"data":{"m":"m"},"android":{"priority":"high","ttl":"60s"}}"#)
        let gcm = try PlatformTemplate(platform: .gcm, template: try Template(json: #"{"data":{"m":"$(message)"}}"#))
            .render(["message": "m"]).withTimeToLive(60, now: now)
        #expect(String(decoding: gcm.body, as: UTF8.self) == #"{"data":{"m":"m"},"time_to_live":60}"#)
        let wns = try PlatformTemplate(platform: .wns, template: try Template(raw: "x")).render([:]).withTimeToLive(60, now: now)
        #expect(wns.headers.contains(HTTPHeader(name: "X-WNS-TTL", value: "60")))
    }

    /// A time-to-live counts from the send: its end read back from each service's form, and a
    /// later delivery (a throttled target's retry) carries only what is left of it.
    @Test func aTimeToLiveEndsAndShrinksFromTheSend() throws {
        let sent = 1_700_000_000.0
        func render(_ platform: Platform, _ template: Template) throws -> RenderedNotification {
            try PlatformTemplate(platform: platform, template: template).render(["message": "m"])
        }
        let fcm = try render(.fcm, try Template(json: #"{"data":{"m":"$(message)"}}"#))
        let gcm = try render(.gcm, try Template(json: #"{"data":{"m":"$(message)"}}"#))
        let wns = try render(.wns, try Template(raw: "x"))
        let apns = try render(.apns, try Template(json: alert))
        for payload in [fcm, gcm, wns, apns] {
            #expect(payload.expiry(sentAt: sent) == nil, "\(payload.platform) without a time-to-live")
            #expect(payload.remainingTimeToLive(at: sent + 90, sentAt: sent) == payload)
            let timed = payload.withTimeToLive(120, now: sent)
            #expect(timed.expiry(sentAt: sent) == sent + 120, "\(payload.platform)")
            // Less than a second later: as it was.
            #expect(timed.remainingTimeToLive(at: sent + 0.5, sentAt: sent) == timed)
        }
        #expect(
            String(decoding: fcm.withTimeToLive(120, now: sent).remainingTimeToLive(at: sent + 61.7, sentAt: sent).body, as: UTF8.self)
                == #"{"data":{"m":"m"},"android":{"ttl":"59s"}}"#)
        #expect(
            String(decoding: gcm.withTimeToLive(120, now: sent).remainingTimeToLive(at: sent + 500, sentAt: sent).body, as: UTF8.self)
                == #"{"data":{"m":"m"},"time_to_live":0}"#)
        #expect(
            wns.withTimeToLive(120, now: sent).remainingTimeToLive(at: sent + 20, sentAt: sent).headers.filter { $0.name == "X-WNS-TTL" }
                .map(\.value) == ["100"])
        // APNs' expiration is a point in time: unchanged; 0 ("now or never") ends at the send.
        let expiring = apns.withTimeToLive(120, now: sent)
        #expect(expiring.remainingTimeToLive(at: sent + 61, sentAt: sent) == expiring)
        #expect(apns.withTimeToLive(0, now: sent).expiry(sentAt: sent) == sent)
        // Fractions and FCM's own spelling in a template are read; nonsense is no time-to-live.
        let fractional = try render(.fcm, try Template(json: #"{"data":{},"android":{"ttl":"3.5s"}}"#))
        #expect(fractional.expiry(sentAt: sent) == sent + 3)
        let nonsense = try render(.fcm, try Template(json: #"{"data":{},"android":{"ttl":"soon"}}"#))
        #expect(nonsense.expiry(sentAt: sent) == nil)
    }
}
