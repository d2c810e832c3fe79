import Foundation
import Pushgate
import Testing

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

    /// JSONEncoder as the gateway's answers used it, the reference the direct writer is held to.
    func encoded(_ result: NotificationResult) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(result))
    }

    /// Results with every optional member present or absent, counts beyond the listed targets,
    /// several platforms and outcomes, and latencies whole, fractional, tiny and huge.
    func variedResults() throws -> [NotificationResult] {
        var generator = SystemRandomNumberGenerator()
        let outcomes: [Outcome] = [.success, .expiredChannel, .badChannel, .pnsUnreachable, .throttled, Outcome(rawValue: "Custom")]
        let latencies: [Double] = [0, 1, 2.5, 0.1 + 0.2, 1e-7, 12_345_678.9, 1e21, 17.000001]
        var results: [NotificationResult] = [
            NotificationResult(notificationID: "empty", selection: .all, targets: []),
            NotificationResult(notificationID: "state-only", state: .enqueued),
        ]
        for round in 0..<200 {
            var targets: [TargetResult] = []
            for index in 0..<(round % 5) {
                var target = TargetResult(
                    registrationID: .random(), platform: Platform.allCases.randomElement(using: &generator)!,
                    maskedHandle: "ab…\(index)", outcome: outcomes.randomElement(using: &generator)!,
                    attempts: 1 + index, latencyMilliseconds: latencies[(round + index) % latencies.count])
                if Bool.random(using: &generator) { target.statusCode = [200, 400, 410, 429][index % 4] }
                if Bool.random(using: &generator) { target.reason = "Bad \"token\" / path\\n\t\u{1}é" }
                if Bool.random(using: &generator) { target.serviceMessageID = "msg-\(round)-\(index)" }
                if Bool.random(using: &generator) { target.handleAction = HandleAction.allCases.randomElement(using: &generator) }
                if Bool.random(using: &generator) {
                    target.diagnostics = [
                        HTTPHeader(name: "X-WNS-Debug-Trace", value: "trace/\(round)"), HTTPHeader(name: "MS-CV", value: "cv"),
                    ]
                }
                targets.append(target)
            }
            var counts: [Platform: [Outcome: Int]] = [:]
            for target in targets { counts[target.platform, default: [:]][target.outcome, default: 0] += 1 }
            if round % 3 == 0 { counts[.apns, default: [:]][.success, default: 0] += 1000 }
            let selection: PlatformSelection = round % 2 == 0 ? .all : try .init(parsing: "apns")
            var result = NotificationResult(notificationID: "n-\(round)", selection: selection, counts: counts, targets: targets)
            if round % 7 == 0 { result.error = "the template \"notify\" failed at 3:14" }
            results.append(result)
        }
        return results
    }

    @Test func writesTheSameJSONAsTheEncoder() throws {
        for result in try variedResults() {
            let written = result.jsonBytes()
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: try encoded(result), as: UTF8.self))
            #expect(try JSONDecoder().decode(NotificationResult.self, from: Data(written)) == result)
        }
    }

    /// The one difference: the writer escapes DEL, U+2028 and U+2029 (valid JSON either way).
    @Test func escapesWhatJavaScriptCannotTakeRaw() throws {
        var target = TargetResult(registrationID: .random(), platform: .wns, maskedHandle: "h", outcome: .badChannel)
        target.reason = "a\u{7F}b\u{2028}c\u{2029}d"
        let result = NotificationResult(notificationID: "n", selection: .all, targets: [target])
        let written = result.jsonBytes()
        #expect(String(decoding: written, as: UTF8.self).contains(#""reason":"a\u007fb\u2028c\u2029d""#))
        let parsed = try JSONParser.parse(written)
        #expect(parsed["targets"]?.arrayElements?.first?["reason"]?.stringValue == target.reason)
        #expect(try JSONDecoder().decode(NotificationResult.self, from: Data(written)) == result)
    }

    @Test func outcomeNamesFollowNotificationHubs() {
        #expect(Outcome.known.map(\.rawValue).contains("InvalidNotificationSize"))
        #expect(Set(Outcome.known).count == Outcome.known.count)
        #expect(Outcome.success.explanation == "The Notification was successfully sent to the Push Notification System")
    }
}
