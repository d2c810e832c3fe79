import Pushgate
import Testing

/// The legacy GCM message as FCM v1 takes it (Google's migration guide, field by field).
@Suite struct LegacyGCMTranslationTests {
    func translated(_ legacy: String) throws -> (JSONValue, Bool) {
        let rendered = RenderedNotification(platform: .gcm, body: Array(legacy.utf8), headers: [], contentType: "application/json")
        let v1 = LegacyGCMTranslation.v1Notification(rendered, now: 1_800_000_000)
        return (try JSONParser.parse(v1.body), v1.validateOnly)
    }

    @Test func everyLegacyFieldHasItsV1Place() throws {
        let (message, validateOnly) = try translated(
            #"""
            {"notification": {"title": "T", "body": "B", "image": "https://x/i.png", "icon": "ic", "sound": "default", "tag": "t1",
              "color": "#ff0000", "click_action": "OPEN", "body_loc_key": "k", "body_loc_args": "[\"a\", \"b\"]",
              "android_channel_id": "news"},
             "data": {"text": "hi", "count": 3, "flag": true, "nested": {"a": 1}},
             "priority": "high", "time_to_live": 600, "collapse_key": "c", "restricted_package_name": "com.example",
             "content_available": true, "dry_run": true}
            """#)
        #expect(validateOnly)
        #expect(message["notification"]?["title"]?.stringValue == "T")
        #expect(message["notification"]?["body"]?.stringValue == "B")
        #expect(message["notification"]?["image"]?.stringValue == "https://x/i.png")
        let android = try #require(message["android"])
        #expect(android["priority"]?.stringValue == "HIGH")
        #expect(android["ttl"]?.stringValue == "600s")
        #expect(android["collapse_key"]?.stringValue == "c")
        #expect(android["restricted_package_name"]?.stringValue == "com.example")
        #expect(android["notification"]?["icon"]?.stringValue == "ic")
        #expect(android["notification"]?["channel_id"]?.stringValue == "news")
        #expect(android["notification"]?["click_action"]?.stringValue == "OPEN")
        #expect(android["notification"]?["body_loc_args"]?.arrayElements?.compactMap(\.stringValue) == ["a", "b"])
        // v1 data values are strings only.
        #expect(message["data"]?["text"]?.stringValue == "hi")
        #expect(message["data"]?["count"]?.stringValue == "3")
        #expect(message["data"]?["flag"]?.stringValue == "true")
        #expect(message["data"]?["nested"]?.stringValue == #"{"a":1}"#)
        #expect(message["apns"]?["payload"]?["aps"]?["content-available"]?.kind == .number("1"))
        // What the legacy API applied to iOS devices too.
        #expect(message["apns"]?["headers"]?["apns-priority"]?.stringValue == "10")
        #expect(message["apns"]?["headers"]?["apns-expiration"]?.stringValue == "1800000600")
        #expect(message["apns"]?["headers"]?["apns-collapse-id"]?.stringValue == "c")
        #expect(message["apns"]?["payload"]?["aps"]?["sound"]?.stringValue == "default")
        #expect(message["dry_run"] == nil && message["priority"] == nil && message["time_to_live"] == nil)
    }

    @Test func normalPriorityAndAMinimalMessage() throws {
        let (message, validateOnly) = try translated(#"{"data": {"m": "x", "gone": null}, "priority": "normal", "time_to_live": 0}"#)
        #expect(!validateOnly)
        #expect(message["android"]?["priority"]?.stringValue == "NORMAL")
        #expect(message["apns"]?["headers"]?["apns-priority"]?.stringValue == "5")
        // 0 is "now or never" on both.
        #expect(message["android"]?["ttl"]?.stringValue == "0s" && message["apns"]?["headers"]?["apns-expiration"]?.stringValue == "0")
        #expect(message["data"]?["gone"] == nil)
        #expect(message["notification"] == nil)
        #expect(message["data"]?["m"]?.stringValue == "x")
        // A TTL that is not written as whole seconds is left out rather than sent as "6e2s".
        let (odd, _) = try translated(#"{"data": {"m": "x"}, "time_to_live": 6e2}"#)
        #expect(odd["android"]?["ttl"] == nil)
    }
}
