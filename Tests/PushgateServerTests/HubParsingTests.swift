import Pushgate
import PushgateServer
import Testing

/// The hub API's parsers, alone: multipart `$batch` bodies, `$filter`, continuation tokens and
/// schedule times, as the Notification Hubs SDKs write them.
@Suite struct HubParsingTests {
    @Test func batchBoundariesAsEachSDKWritesThem() {
        #expect(
            MultipartBody.boundary(contentType: "multipart/mixed; boundary=nh-batch-multipart-boundary") == "nh-batch-multipart-boundary")
        #expect(MultipartBody.boundary(contentType: #"multipart/mixed; boundary = "nh-boundary-1234""#) == "nh-boundary-1234")
        #expect(MultipartBody.boundary(contentType: "Multipart/Mixed;charset=utf-8;Boundary=b") == "b")
        #expect(MultipartBody.boundary(contentType: "multipart/mixed") == nil)
        #expect(MultipartBody.boundary(contentType: "multipart/form-data; boundary=b") == nil)
        #expect(MultipartBody.boundary(contentType: "multipart/mixed; boundary=" + String(repeating: "x", count: 71)) == nil)
        #expect(MultipartBody.boundary(contentType: #"multipart/mixed; boundary="""#) == nil)
    }

    @Test func multipartPartsAreReadOnTheBytes() throws {
        let crlf = [
            "preamble", "--b", "Content-Type: application/json", "Content-Disposition: inline; name=notification", "",
            #"{"aps":{"alert":"x"}}"#, "--b", #"Content-Disposition: inline; name="devices""#, "", #"["a","b"]"#, "--b--", "",
        ].joined(separator: "\r\n")
        let body = try MultipartBody(Array(crlf.utf8), boundary: "b")
        #expect(body.parts.map(\.name) == ["notification", "devices"])
        #expect(body.part(named: "notification")?.body == Array(#"{"aps":{"alert":"x"}}"#.utf8))
        // The CRLF before a delimiter belongs to it: the devices part ends with its bracket.
        #expect(body.part(named: "devices")?.body == Array(#"["a","b"]"#.utf8))
        let bare = "--b\nContent-Disposition: inline; name=devices\n\n[]\n--b--\n"
        #expect(try MultipartBody(Array(bare.utf8), boundary: "b").part(named: "devices")?.body == Array("[]".utf8))
        #expect(throws: HubParseError("the body has no part delimited by --b")) { try MultipartBody(Array("x".utf8), boundary: "b") }
        #expect(throws: HubParseError("the multipart body does not end with --b--")) {
            try MultipartBody(Array("--b\r\nContent-Disposition: inline; name=x\r\n\r\n1".utf8), boundary: "b")
        }
    }

    @Test func filtersAreFieldEqQuotedValue() throws {
        let filter = try RegistrationFilter(parsing: "DeviceToken eq 'AB''CD'")
        #expect(filter.field == "devicetoken" && filter.value == "AB'CD")
        #expect(try RegistrationFilter(parsing: "Tags eq 'a b'").value == "a b")
        for bad in ["Tags", "Tags ne 'x'", "Tags eq x", "Tags eq '", ""] {
            #expect(throws: HubParseError.self) { try RegistrationFilter(parsing: bad) }
        }
    }

    @Test func continuationTokensRoundTripAndForgeriesAreRefused() throws {
        let id = try RegistrationID("abc-123")
        let token = ContinuationToken.token(after: id)
        #expect(!token.contains("abc") && !token.contains("=") && !token.contains("+") && !token.contains("/"))
        #expect(ContinuationToken.registrationID(token) == id)
        #expect(ContinuationToken.registrationID("abc-123") == nil)
        #expect(ContinuationToken.registrationID("bmgyLi4vZXRj") == nil)  // "nh2../etc"-like: not the hub's mark
        #expect(ContinuationToken.registrationID(String(repeating: "A", count: 201)) == nil)
    }

    @Test func scheduleTimesAsEachSDKWritesThem() throws {
        let cases = [
            ("2026-11-24T09:00:00.0000000Z", "2026-11-24T09:00:00.0000000Z"),
            ("2026-11-24T09:00:00.000Z", "2026-11-24T09:00:00.000Z"),
            ("2026-11-24T09:00:00+00:00", "2026-11-24T09:00:00+00:00"),
            ("2026-11-24T09:00:00", "2026-11-24T09:00:00Z"),
            ("2026-11-24'T'09:00:00", "2026-11-24T09:00:00Z"),
            (" 2026-11-24T09:00:00.5 ", "2026-11-24T09:00:00.5Z"),
        ]
        for (text, expected) in cases {
            #expect(ScheduleTime.rfc3339(text) == expected)
            #expect(try RFC3339.parse(ScheduleTime.rfc3339(text)).secondsSinceEpoch >= 1_795_510_800, "\(text)")
        }
    }

    @Test func notificationDetailsSpellTheStateAsNotificationHubsDoes() {
        #expect(NotificationState.cancelled.notificationHubsName == "Canceled")
        #expect(NotificationState.completed.notificationHubsName == "Completed")
    }
}
