import Foundation
import PNSSandbox
import Pushgate
import PushgateDispatch
import PushgateTesting
import Testing

@Suite struct ProviderTests {
    @Test func everyProviderDeliversAndReportsGoneHandles() async throws {
        try await DispatchFixture.with { fixture in
            for (platform, provider) in [(Platform.apns, fixture.apns), (.fcm, fixture.fcm), (.gcm, fixture.gcm), (.wns, fixture.wns)]
                as [(Platform, any PushProvider)]
            {
                let (device, ok) = await fixture.target(platform)
                let (goneDevice, gone) = await fixture.target(platform)
                await fixture.sandbox.state.setStatus(.uninstalled, deviceID: goneDevice.id)
                let reports = await provider.deliver(try Payloads.notify(platform), to: [ok, gone])
                #expect(reports.map(\.target) == [ok, gone])
                #expect(reports[0].verdict.outcome == .success, "\(platform): \(reports[0].verdict)")
                #expect(reports[0].verdict.serviceMessageID != nil, "\(platform)")
                #expect(reports[0].attempts == 1)
                #expect(reports[1].verdict.outcome == .expiredChannel, "\(platform): \(reports[1].verdict)")
                #expect(reports[1].verdict.handleChange == .remove, "\(platform)")
                #expect(reports[1].targetResult.handleAction == .removed)
                #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1, "\(platform)")
            }
        }
    }

    @Test func permanentRejectionsAreNotRetried() async throws {
        try await DispatchFixture.with { fixture in
            let (_, foreign) = await fixture.target(.apns, anotherApp: true)
            let bogus = DispatchTarget(
                registrationID: .random(), handle: DeviceHandle(uncheckedPlatform: .apns, value: String(repeating: "ab", count: 32)))
            let reports = await fixture.apns.deliver(try Payloads.notify(.apns), to: [foreign, bogus])
            #expect(reports.map(\.verdict.outcome) == [.wrongChannel, .badChannel])
            #expect(reports.map(\.verdict.reason) == ["DeviceTokenNotForTopic", "BadDeviceToken"])
            #expect(reports.map(\.attempts) == [1, 1])
            #expect(await fixture.sandbox.state.answeredCounts()["apns 400"] == 2)
        }
    }

    @Test func legacyCanonicalIDsBecomeReplacements() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.gcm)
            await fixture.sandbox.state.setCanonicalHandle("canonical-" + String(repeating: "z", count: 40), deviceID: device.id)
            let reports = await fixture.gcm.deliver(try Payloads.notify(.gcm), to: [target])
            #expect(reports[0].verdict.outcome == .success)
            #expect(reports[0].verdict.handleChange == .replace(with: "canonical-" + String(repeating: "z", count: 40)))
            #expect(reports[0].targetResult.handleAction == .replaced)
        }
    }

    @Test func retryAfterIsHonouredAndTheRetrySucceeds() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.apns)
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .apns, handle: device.handle, action: .respond(status: 429, reason: "TooManyRequests", retryAfterSeconds: 2)))
            let report = await fixture.apns.deliver(try Payloads.notify(.apns), to: [target])[0]
            #expect(report.verdict.outcome == .success)
            #expect(report.attempts == 2)
            #expect(fixture.clock.requestedSleeps == [2])
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
        }
    }

    @Test func retriesStopAtTheLimitWithTheLastAnswer() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.fcm)
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .fcm, handle: device.handle, action: .respond(status: 503, reason: "UNAVAILABLE", retryAfterSeconds: nil),
                    count: 5))
            let report = await fixture.fcm.deliver(try Payloads.notify(.fcm), to: [target])[0]
            #expect(report.verdict.outcome == .pnsUnavailable)
            #expect(report.attempts == 3)
            #expect(fixture.clock.requestedSleeps.count == 2)
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).isEmpty)
        }
    }

    @Test func aDroppedConnectionIsRetriedOnANewOne() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.apns)
            await fixture.sandbox.state.addFault(SandboxFault(service: .apns, handle: device.handle, action: .dropConnection))
            let report = await fixture.apns.deliver(try Payloads.notify(.apns), to: [target])[0]
            #expect(report.verdict.outcome == .success, "\(report.verdict)")
            #expect(report.attempts == 2)
            let (_, other) = await fixture.target(.apns)
            await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .goAway(reason: "Shutdown")))
            #expect(await fixture.apns.deliver(try Payloads.notify(.apns), to: [other])[0].verdict.outcome == .success)
        }
    }

    @Test func apnsRefreshesItsProviderTokenOnExpiryAndRetriesOnce() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.apns)
            #expect(await fixture.apns.deliver(try Payloads.notify(.apns), to: [target])[0].verdict.outcome == .success)
            #expect(await fixture.apnsTokens.generatedCount == 1)

            // 25 minutes later APNs calls the token expired: a new one is signed and the send retried.
            fixture.advance(seconds: 25 * 60)
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .apns, action: .respond(status: 403, reason: "ExpiredProviderToken", retryAfterSeconds: nil)))
            let report = await fixture.apns.deliver(try Payloads.notify(.apns), to: [target])[0]
            #expect(report.verdict.outcome == .success, "\(report.verdict)")
            #expect(report.attempts == 2)
            #expect(await fixture.apnsTokens.generatedCount == 2)

            // Past 50 minutes the token is replaced before APNs has to ask.
            fixture.advance(seconds: 51 * 60)
            #expect(await fixture.apns.deliver(try Payloads.notify(.apns), to: [target])[0].attempts == 1)
            #expect(await fixture.apnsTokens.generatedCount == 3)
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 3)
        }
    }

    @Test func apnsTokensAreNotRefreshedMoreOftenThanEveryTwentyMinutes() async throws {
        try await DispatchFixture.with { fixture in
            let (_, target) = await fixture.target(.apns)
            #expect(await fixture.apns.deliver(try Payloads.notify(.apns), to: [target])[0].verdict.outcome == .success)
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .apns, action: .respond(status: 403, reason: "ExpiredProviderToken", retryAfterSeconds: nil), count: 2))
            let report = await fixture.apns.deliver(try Payloads.notify(.apns), to: [target])[0]
            #expect(report.verdict.outcome == .invalidCredentials)
            #expect(report.verdict.reason == "ExpiredProviderToken")
            #expect(await fixture.apnsTokens.generatedCount == 1)
            #expect(await fixture.sandbox.state.answeredCounts()["apns 429"] == nil)
        }
    }

    @Test func oauthTokensAreCachedAndRefreshedOnceOn401() async throws {
        try await DispatchFixture.with { fixture in
            let (_, fcmTarget) = await fixture.target(.fcm)
            let (_, wnsTarget) = await fixture.target(.wns)
            for _ in 0..<3 {
                #expect(await fixture.fcm.deliver(try Payloads.notify(.fcm), to: [fcmTarget])[0].verdict.outcome == .success)
                #expect(await fixture.wns.deliver(try Payloads.notify(.wns), to: [wnsTarget])[0].verdict.outcome == .success)
            }
            #expect(await fixture.fcm.tokenManager.fetchCount == 1)
            #expect(await fixture.wns.tokenManager.fetchCount == 1)

            await fixture.sandbox.state.revokeAccessTokens()
            let fcmReport = await fixture.fcm.deliver(try Payloads.notify(.fcm), to: [fcmTarget])[0]
            let wnsReport = await fixture.wns.deliver(try Payloads.notify(.wns), to: [wnsTarget])[0]
            #expect(fcmReport.verdict.outcome == .success)
            #expect(fcmReport.attempts == 2)
            #expect(wnsReport.verdict.outcome == .success)
            #expect(wnsReport.attempts == 2)
            #expect(await fixture.fcm.tokenManager.fetchCount == 2)
            #expect(await fixture.wns.tokenManager.fetchCount == 2)

            // An hour later the cached FCM token has expired and is fetched again before sending.
            fixture.advance(seconds: 3600)
            #expect(await fixture.fcm.deliver(try Payloads.notify(.fcm), to: [fcmTarget])[0].attempts == 1)
            #expect(await fixture.fcm.tokenManager.fetchCount == 3)
        }
    }

    @Test func aTokenEndpointFaultIsReportedAsSuch() async throws {
        try await DispatchFixture.with { fixture in
            let (_, target) = await fixture.target(.wns)
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .wnsToken, action: .respond(status: 400, reason: "invalid_client", retryAfterSeconds: nil)))
            let report = await fixture.wns.deliver(try Payloads.notify(.wns), to: [target])[0]
            #expect(report.verdict.outcome == .invalidCredentials)
            #expect(report.verdict.reason?.contains("token endpoint answered 400") == true)
        }
    }

    @Test func wnsNeverCallsAChannelOffTheAllowList() async throws {
        try await DispatchFixture.with { fixture in
            let evil = DispatchTarget(
                registrationID: .random(), handle: DeviceHandle(uncheckedPlatform: .wns, value: "https://evil.example.com/?token=x"))
            let report = await fixture.wns.deliver(try Payloads.notify(.wns), to: [evil])[0]
            #expect(report.verdict.outcome == .badChannel)
            #expect(report.attempts == 0)
            #expect(report.verdict.reason?.contains("not on the allow-list") == true)
            #expect(await fixture.wns.tokenManager.fetchCount == 0)
        }
    }

    @Test func shutdownWithRequestsInFlightAnswersEveryCaller() async throws {
        let fixture = try await DispatchFixture.start(policy: .none)
        var targets: [DispatchTarget] = []
        for _ in 0..<50 { targets.append(await fixture.target(.apns).1) }
        await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .delay(milliseconds: 5000), count: 50))
        let payload = try Payloads.notify(.apns)
        let delivery = Task { await fixture.apns.deliver(payload, to: targets) }
        // In flight: every request has reached the sandbox and taken its use of the delay.
        let inFlight = try await eventually(every: .milliseconds(10)) { await fixture.sandbox.state.remainingFaultUses() == 0 }
        #expect(inFlight, "the requests did not all reach the sandbox")
        await fixture.apns.shutdown()
        let reports = await delivery.value
        // Had shutdown waited for the delayed answers, every one would have been delivered: each caller being
        // answered `abandoned` is what shows shutdown did not wait (no wall-clock bound, which flaked under load).
        #expect(reports.count == 50)
        #expect(reports.allSatisfy { $0.verdict.outcome == .abandoned }, "\(Set(reports.map(\.verdict.outcome)))")
        try await fixture.stop()
    }
}
