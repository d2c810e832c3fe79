import Foundation
import Testing

@testable import Pushgate

@Suite struct NotificationResultTests {
    func target(_ platform: Platform, _ outcome: Outcome) -> TargetResult {
        TargetResult(registrationID: .random(), platform: platform, maskedHandle: "abc…def", outcome: outcome, statusCode: 200)
    }

    @Test func countsOutcomesPerSelectedPlatform() {
        let result = NotificationResult(
            notificationID: "n1", selection: .all,
            targets: [target(.apns, .success), target(.apns, .expiredChannel), target(.wns, .success), target(.apns, .success)])
        #expect(result.state == .completed)
        #expect(result.successCount == 3)
        #expect(result.failureCount == 1)
        #expect(result.platforms.map(\.platform) == Platform.allCases)
        #expect(result.platforms[0].counts == [.success: 2, .expiredChannel: 1])
        #expect(result.platforms[0].sortedCounts.map(\.outcome) == [.success, .expiredChannel])
        #expect(result.platforms[1].total == 0)
    }

    @Test func derivesTheMessageState() throws {
        #expect(NotificationResult(notificationID: "n", selection: try .init(parsing: "apns"), targets: []).state == .noTargetFound)
        #expect(
            NotificationResult(
                notificationID: "n", selection: .all, targets: [target(.fcm, .pnsUnreachable), target(.gcm, .pnsUnavailable)]
            ).state == .abandoned)
        #expect(
            NotificationResult(notificationID: "n", selection: .all, targets: [target(.fcm, .pnsUnreachable), target(.gcm, .badChannel)])
                .state == .completed)
    }

    @Test func encodesToJSONAndBack() throws {
        var expired = target(.apns, .expiredChannel)
        expired.statusCode = 410
        expired.reason = "Unregistered"
        expired.handleAction = .removed
        let result = NotificationResult(notificationID: "n1", selection: try .init(parsing: "apns"), targets: [expired])
        let data = try JSONEncoder().encode(result)
        let json = try JSONParser.parse(Array(data))
        #expect(json["state"]?.stringValue == "Completed")
        #expect(json["success"]?.kind == .number("0"))
        #expect(json["failure"]?.kind == .number("1"))
        #expect(json["platforms"]?.arrayElements?.first?["outcomes"]?["ExpiredChannel"]?.kind == .number("1"))
        let first = try #require(json["targets"]?.arrayElements?.first)
        #expect(first["outcome"]?.stringValue == "ExpiredChannel")
        #expect(first["reason"]?.stringValue == "Unregistered")
        #expect(first["handleAction"]?.stringValue == "removed")
        #expect(first["handle"]?.stringValue == "abc…def")
        #expect(try JSONDecoder().decode(NotificationResult.self, from: data) == result)
    }

    @Test func outcomeNamesFollowNotificationHubs() {
        #expect(Outcome.known.map(\.rawValue).contains("InvalidNotificationSize"))
        #expect(Set(Outcome.known).count == Outcome.known.count)
        #expect(Outcome.success.explanation == "The Notification was successfully sent to the Push Notification System")
    }
}
