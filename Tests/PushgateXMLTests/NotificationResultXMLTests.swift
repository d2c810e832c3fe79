import Pushgate
import PushgateXML
import Testing

@Suite struct NotificationResultXMLTests {
    @Test func writesTheNotificationOutcomeShape() throws {
        let targets = [
            TargetResult(
                registrationID: try RegistrationID("r1"), platform: .apns, maskedHandle: "abcdef…1234", outcome: .success,
                statusCode: 200, serviceMessageID: "5E3A", attempts: 1, latencyMilliseconds: 12.5),
            TargetResult(
                registrationID: try RegistrationID("r2"), platform: .wns, maskedHandle: "https://db3…", outcome: .expiredChannel,
                statusCode: 410, reason: "<gone & \"expired\">\u{01}", attempts: 2, handleAction: .removed),
        ]
        let result = NotificationResult(notificationID: "n-1", selection: try PlatformSelection(parsing: "apns,wns"), targets: targets)
        let bytes = result.xmlDocument()
        let xml = String(decoding: bytes, as: UTF8.self)
        #expect(try XMLPayload.rootElementName(of: bytes) == "NotificationOutcome")
        #expect(xml.hasPrefix(#"<?xml version="1.0" encoding="UTF-8"?>"#))
        #expect(xml.contains(#"<NotificationOutcome xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect""#))
        #expect(xml.contains("<State>Completed</State><Success>1</Success><Failure>1</Failure>"))
        #expect(
            xml.contains(
                "<RegistrationResult><ApplicationPlatform>apple</ApplicationPlatform><PnsHandle>abcdef…1234</PnsHandle><RegistrationId>r1</RegistrationId><Outcome>Success</Outcome>"
            ))
        #expect(xml.contains("<ApplicationPlatform>windows</ApplicationPlatform>"))
        #expect(xml.contains("<Reason>&lt;gone &amp; &quot;expired&quot;&gt;\u{FFFD}</Reason>"))
        #expect(xml.contains("<HandleAction>removed</HandleAction>"))
        #expect(xml.contains("<ApnsOutcomeCounts><Outcome><Name>Success</Name><Count>1</Count></Outcome></ApnsOutcomeCounts>"))
        #expect(xml.contains("<WnsOutcomeCounts><Outcome><Name>ExpiredChannel</Name><Count>1</Count></Outcome></WnsOutcomeCounts>"))
    }

    @Test func anEmptyResultSaysNoTargetFound() throws {
        let result = NotificationResult(notificationID: "n-2", selection: .all, targets: [])
        let xml = String(decoding: result.xmlDocument(), as: UTF8.self)
        #expect(xml.contains("<State>NoTargetFound</State>"))
        #expect(xml.contains("<Results/>") || xml.contains("<Results></Results>"))
        #expect(xml.contains("<FcmV1OutcomeCounts/>") || xml.contains("<FcmV1OutcomeCounts></FcmV1OutcomeCounts>"))
    }
}
