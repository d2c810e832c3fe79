import Foundation
import PNSSandbox
import Pushgate
import PushgateDispatch
import Testing

/// The fault table's Live Activity and broadcast rows: Apple's answers to an update sent to an
/// activity's update token, and to a broadcast to a channel, made by the sandbox on the wire, and
/// what the gateway does with each (the outcome, a retry, a pruned token). A broadcast's target is
/// its channel: never pruned, whatever the answer.
@Suite struct LiveActivityFaultTableTests {
    typealias Row = FaultTableTests.Row

    static let updateToken: [Row] = [
        Row(service: .apns, status: 410, reason: "Unregistered", expected: .final(.expiredChannel, removed: true)),
        // Seen for expired Live Activity tokens (protocols.md §7).
        Row(service: .apns, status: 410, reason: "ExpiredToken", expected: .final(.expiredChannel, removed: true)),
        Row(service: .apns, status: 400, reason: "BadDeviceToken", expected: .final(.badChannel)),
        Row(service: .apns, status: 400, reason: "DeviceTokenNotForTopic", expected: .final(.wrongChannel)),
        Row(service: .apns, status: 400, reason: "TopicDisallowed", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 400, reason: "InvalidPushType", expected: .final(.invalidNotificationFormat)),
        Row(service: .apns, status: 403, reason: "InvalidProviderToken", expected: .final(.invalidCredentials)),
        Row(service: .apns, status: 403, reason: "MissingProviderToken", expected: .final(.invalidCredentials)),
        Row(service: .apns, status: 413, reason: "PayloadTooLarge", expected: .final(.invalidNotificationSize)),
        Row(service: .apns, status: 429, reason: "TooManyRequests", expected: .retriedThenDelivered),
    ]

    static let broadcast: [Row] = [
        Row(service: .apnsBroadcast, status: 400, reason: "ChannelNotRegistered", expected: .final(.badChannel)),
        Row(service: .apnsBroadcast, status: 400, reason: "BadChannelId", expected: .final(.badChannel)),
        Row(service: .apnsBroadcast, status: 400, reason: "MissingChannelId", expected: .final(.badChannel)),
        Row(service: .apnsBroadcast, status: 400, reason: "BadExpirationDate", expected: .final(.invalidNotificationFormat)),
        Row(service: .apnsBroadcast, status: 400, reason: "BadPriority", expected: .final(.invalidNotificationFormat)),
        Row(service: .apnsBroadcast, status: 400, reason: "InvalidPushType", expected: .final(.invalidNotificationFormat)),
        Row(service: .apnsBroadcast, status: 400, reason: "MissingPushType", expected: .final(.invalidNotificationFormat)),
        // FeatureNotEnabled (the app's Broadcast capability is off): 400 or 403 (unconfirmed).
        Row(service: .apnsBroadcast, status: 403, reason: "FeatureNotEnabled", expected: .final(.invalidCredentials)),
        Row(service: .apnsBroadcast, status: 413, reason: "PayloadTooLarge", expected: .final(.invalidNotificationSize)),
        Row(service: .apnsBroadcast, status: 429, reason: "TooManyRequests", expected: .retriedThenDelivered),
        Row(service: .apnsBroadcast, status: 500, reason: "InternalServerError", expected: .retriedThenDelivered),
        Row(service: .apnsBroadcast, status: 503, reason: "ServiceUnavailable", expected: .retriedThenDelivered),
    ]

    static func payload(_ event: LiveActivityEvent, topic: String?) -> RenderedNotification {
        let message = LiveActivityMessage(
            event: event, contentState: JSONValue(.object([JSONMember(key: "n", value: JSONValue(.number("1")))])))
        var headers = [
            HTTPHeader(name: "apns-push-type", value: "liveactivity"), HTTPHeader(name: "apns-priority", value: "10"),
        ]
        if topic == nil { headers.append(HTTPHeader(name: "apns-expiration", value: "0")) }
        return RenderedNotification(
            platform: .apns, body: message.payload(timestamp: Int64(Date().timeIntervalSince1970) + 60, name: try! ActivityName("a")),
            headers: headers, contentType: "application/json")
    }

    @Test(arguments: updateToken)
    func anUpdateTokensAnswer(_ row: Row) async throws {
        try await DispatchFixture.with { fixture in
            let phone = await fixture.sandbox.createDevice(.apns)
            let activities = fixture.sandbox.state.liveActivities
            let start = DispatchTarget(
                registrationID: try RegistrationID("s"),
                handle: DeviceHandle(
                    uncheckedPlatform: .apns,
                    value: activities.issuePushToStartToken(deviceID: phone.id, attributesType: "DeliveryAttributes")))
            var starting = LiveActivityMessage(
                event: .start, contentState: JSONValue(.object([])), attributesType: try ActivityAttributesType("DeliveryAttributes"),
                attributes: JSONValue(.object([])), inputPushToken: true)
            starting.timestamp = nil
            let started = await fixture.apns.deliver(
                RenderedNotification(
                    platform: .apns, body: starting.payload(timestamp: Int64(Date().timeIntervalSince1970), name: try ActivityName("a")),
                    headers: [HTTPHeader(name: "apns-push-type", value: "liveactivity")], contentType: "application/json"),
                to: [start])[0]
            #expect(started.verdict.outcome == .success, "\(started.verdict.reason ?? "")")
            let token = try #require(activities.activities(deviceID: phone.id).first?.updateToken)
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .apns, handle: token, action: .respond(status: row.status, reason: row.reason, retryAfterSeconds: nil)))
            let target = DispatchTarget(
                registrationID: try RegistrationID("u"), handle: DeviceHandle(uncheckedPlatform: .apns, value: token))
            let report = await fixture.apns.deliver(Self.payload(.update, topic: ""), to: [target])[0]
            let applied = activities.activity(updateToken: token)?.updates ?? 0
            switch row.expected {
            case .final(let outcome, let removed):
                #expect(report.verdict.outcome == outcome, "\(row): \(report.verdict.reason ?? "")")
                #expect(report.attempts == 1, "\(row)")
                #expect((report.targetResult.handleAction == .removed) == removed, "\(row)")
                #expect(applied == 0, "\(row)")
            case .retriedThenDelivered:
                #expect(report.verdict.outcome == .success, "\(row): \(report.verdict.reason ?? "")")
                #expect(report.attempts == 2, "\(row)")
                #expect(applied == 1, "\(row)")
            }
        }
    }

    @Test(arguments: broadcast)
    func aBroadcastsAnswer(_ row: Row) async throws {
        try await DispatchFixture.with { fixture in
            let client = try APNSChannelClient.open(
                APNSChannelClient.Settings(
                    endpoint: fixture.sandbox.endpoints.apns, bundleID: fixture.sandbox.credentials.apnsTopic, caFile: fixture.files["ca"],
                    tokens: fixture.apnsTokens))
            let (channelID, _) = try await client.create(storagePolicy: 0)
            await client.close()
            let phone = await fixture.sandbox.createDevice(.apns)
            let activities = fixture.sandbox.state.liveActivities
            _ = activities.subscribe(deviceID: phone.id, channelID: channelID, name: "match")
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .apnsBroadcast, handle: channelID,
                    action: .respond(status: row.status, reason: row.reason, retryAfterSeconds: nil)))
            let target = APNSChannelRecipient(name: "scores", channelID: channelID).target
            let report = await fixture.apns.deliver(Self.payload(.update, topic: nil), to: [target])[0]
            let applied = activities.activities(deviceID: phone.id).first?.updates ?? 0
            #expect(report.targetResult.handleAction != .removed, "a channel is never pruned: \(row)")
            switch row.expected {
            case .final(let outcome, _):
                #expect(report.verdict.outcome == outcome, "\(row): \(report.verdict.reason ?? "")")
                #expect(report.attempts == 1, "\(row)")
                #expect(applied == 0, "\(row)")
            case .retriedThenDelivered:
                #expect(report.verdict.outcome == .success, "\(row): \(report.verdict.reason ?? "")")
                #expect(report.attempts == 2, "\(row)")
                #expect(applied == 1, "\(row)")
            }
        }
    }
}
