import Foundation
import PNSSandbox
import Pushgate
import PushgateDispatch
import Testing

@Suite struct DispatcherTests {
    @Test func aTenThousandTargetFanOutDeliversExactlyOnceToEveryDevice() async throws {
        try await DispatchFixture.with { fixture in
            var devices: [SandboxDevice] = []
            var targets: [DispatchTarget] = []
            for (platform, count) in [(Platform.apns, 4000), (.fcm, 3000), (.gcm, 2000), (.wns, 1000)] {
                for _ in 0..<count {
                    let (device, target) = await fixture.target(platform)
                    devices.append(device)
                    targets.append(target)
                }
            }
            // Stream the targets in batches of 1000, as a store would.
            let batches = AsyncStream<[DispatchTarget]> { continuation in
                for start in stride(from: 0, to: targets.count, by: 1000) {
                    continuation.yield(Array(targets[start..<min(start + 1000, targets.count)]))
                }
                continuation.finish()
            }
            let result = await fixture.dispatcher.dispatch(
                notificationID: "n-10k", selection: .all, payloads: try Payloads.all, targets: batches
            ).result
            #expect(result.state == .completed)
            #expect(result.targets.count == 10_000)
            #expect(result.successCount == 10_000, "\(result.platforms.map { ($0.platform, $0.counts) })")
            // The four platforms with devices, then every other platform with none.
            #expect(result.platforms.map(\.total) == [4000, 3000, 2000, 1000] + Array(repeating: 0, count: Platform.allCases.count - 4))
            var counts: [Int: Int] = [:]
            for device in devices { counts[await fixture.sandbox.state.inbox(deviceID: device.id).count, default: 0] += 1 }
            #expect(counts == [1: 10_000])
        }
    }

    @Test func unselectedPlatformsAreLeftOutAndUnconfiguredOnesFailAsInvalidCredentials() async throws {
        try await DispatchFixture.with { fixture in
            let (_, apns) = await fixture.target(.apns)
            let (_, wns) = await fixture.target(.wns)
            let (_, fcm) = await fixture.target(.fcm)
            let dispatcher = Dispatcher(providers: [fixture.apns])
            let result = await dispatcher.dispatch(
                notificationID: "n", selection: try PlatformSelection(parsing: "apns,wns"), payloads: try Payloads.all,
                targets: [apns, wns, fcm]
            ).result
            #expect(result.targets.map(\.platform).sorted() == [.apns, .wns])
            #expect(result.targets.first(where: { $0.platform == .wns })?.outcome == .invalidCredentials)
            #expect(result.targets.first(where: { $0.platform == .wns })?.reason == "WNS is not configured")
            #expect(result.platforms.map(\.platform) == [.apns, .wns])
            let none = await dispatcher.dispatch(notificationID: "n2", selection: .all, payloads: [:], targets: []).result
            #expect(none.state == .noTargetFound)
        }
    }

    @Test func aSecondRegistrationWithTheSameHandleIsSkipped() async throws {
        try await DispatchFixture.with { fixture in
            let (_, apns) = await fixture.target(.apns)
            let twin = DispatchTarget(registrationID: try RegistrationID("99999999-9999-4999-8999-999999999999"), handle: apns.handle)
            let dispatcher = Dispatcher(providers: [fixture.apns])
            let result = await dispatcher.dispatch(
                notificationID: "n", selection: .all, payloads: try Payloads.all, targets: [apns, twin]
            ).result
            #expect(result.targets.first(where: { $0.registrationID == apns.registrationID })?.outcome == .success)
            let skipped = result.targets.first(where: { $0.registrationID == twin.registrationID })
            #expect(skipped?.outcome == .skipped)
            #expect(skipped?.reason == "registration \(apns.registrationID) holds the same handle")
        }
    }

    @Test func largeFanOutsCountEverythingButListABoundedNumberOfTargetsFailuresFirst() async throws {
        try await DispatchFixture.with { fixture in
            var targets: [DispatchTarget] = []
            for _ in 0..<30 { targets.append(await fixture.target(.apns).1) }
            let (goneDevice, gone) = await fixture.target(.apns)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: goneDevice.id)
            let (moved, movedTarget) = await fixture.target(.gcm)
            await fixture.sandbox.state.setCanonicalHandle("canonical-" + String(repeating: "q", count: 30), deviceID: moved.id)
            targets += [gone, movedTarget]
            let summary = await fixture.dispatcher.dispatch(
                notificationID: "n-big", selection: .all, payloads: try Payloads.all,
                targets: AsyncStream { continuation in
                    continuation.yield(targets)
                    continuation.finish()
                }, maximumReportedTargets: 5)
            #expect(summary.result.targets.count == 5)
            #expect(summary.result.omittedTargetCount == 27)
            #expect(summary.result.successCount == 31)
            #expect(summary.result.failureCount == 1)
            #expect(summary.result.targets.contains { $0.outcome == .expiredChannel })
            #expect(
                Set(summary.handleUpdates.map(\.change)) == [.remove, .replace(with: "canonical-" + String(repeating: "q", count: 30))])
            #expect(summary.handleUpdates.first { $0.change == .remove }?.target == gone)
        }
    }
}
