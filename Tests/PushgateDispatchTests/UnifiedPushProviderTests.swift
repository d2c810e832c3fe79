import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateDispatch
import Testing

/// A resolver that answers each name from a table, as a DNS server under an attacker's control
/// could (tests never reach real DNS).
struct TableResolver: HostResolver {
    let table: [String: [IPAddress]]

    func addresses(of host: String) async throws(OutboundRefusal) -> [IPAddress] {
        table[host] ?? [IPAddress("203.0.113.9")!]
    }
}

/// The UnifiedPush provider against the sandbox's distributor: unsigned and signed deliveries,
/// the address rules applied before any request, the discovery check and its cache.
@Suite struct UnifiedPushProviderTests {
    func provider(
        _ fixture: DispatchFixture, hosts: [String], resolver: any HostResolver = SystemHostResolver()
    ) throws -> (WebPushProvider, UnifiedPushDiscovery) {
        let outbound = OutboundGuard(resolver: resolver, clock: fixture.clock)
        let ca = fixture.files["ca"]
        let discovery = UnifiedPushDiscovery(
            transport: try CurlPushTransport(
                configuration: .init(httpVersion: .http1, caFile: ca, connectTimeoutMilliseconds: 2000, totalTimeoutMilliseconds: 2000)),
            outbound: outbound, clock: fixture.clock, successSeconds: 3600, failureSeconds: 30)
        let provider = WebPushProvider(
            unifiedPush: UnifiedPushRules(outbound: outbound, discovery: discovery, noActiveSubscriber: .keep), signer: nil,
            handles: HandlePolicy(unifiedPushHosts: hosts), transport: try CurlPushTransport(configuration: .init(caFile: ca)),
            policy: .none, clock: fixture.clock)
        return (provider, discovery)
    }

    /// `device`'s subscription at `origin` (the same path), as a target.
    func target(_ device: SandboxDevice, at origin: String) throws -> DispatchTarget {
        var subscription = try #require(WebPushSubscription(handleValue: device.handle))
        subscription.endpoint = origin + subscription.endpoint.dropFirst("https://".count).drop { $0 != "/" }
        return DispatchTarget(
            registrationID: .random(), handle: DeviceHandle(uncheckedPlatform: .unifiedpush, value: subscription.handleValue))
    }

    @Test func anUnsignedSubscriptionIsDeliveredWithoutVAPIDAndASignedOneWithIt() async throws {
        try await DispatchFixture.with { fixture in
            let (plain, _) = await fixture.target(.unifiedpush)
            let signedDevice = await fixture.sandbox.createUnifiedPushDevice(vapid: true)
            let signed = DispatchTarget(
                registrationID: .random(), handle: DeviceHandle(uncheckedPlatform: .unifiedpush, value: signedDevice.handle))
            let plainTarget = DispatchTarget(
                registrationID: .random(), handle: DeviceHandle(uncheckedPlatform: .unifiedpush, value: plain.handle))
            let notification = try Payloads.notify(.unifiedpush)
            let reports = await fixture.unifiedPush.deliver(notification, to: [plainTarget, signed])
            for report in reports {
                #expect(report.verdict.outcome == .success, "\(report.verdict.reason ?? "")")
                #expect(report.verdict.statusCode == 200)
            }
            let plainInbox = await fixture.sandbox.state.inbox(deviceID: plain.id)
            let signedInbox = await fixture.sandbox.state.inbox(deviceID: signedDevice.id)
            #expect(plainInbox.map(\.payload) == [String(decoding: notification.body, as: UTF8.self)])
            #expect(signedInbox.map(\.payload) == [String(decoding: notification.body, as: UTF8.self)])
            #expect(plainInbox.first?.header("Authorization") == nil)
            #expect(signedInbox.first?.header("Authorization") == "vapid")
        }
    }

    /// The distributor's own answers (not scripted faults): an app with no active subscriber
    /// (uninstalled: ntfy's 507) is kept, an expired endpoint (410) removed.
    @Test func noActiveSubscriberIsKeptAndAnExpiredEndpointIsRemoved() async throws {
        try await DispatchFixture.with { fixture in
            let (uninstalled, first) = await fixture.target(.unifiedpush)
            let (expired, second) = await fixture.target(.unifiedpush)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: uninstalled.id)
            await fixture.sandbox.state.setStatus(.expired, deviceID: expired.id)
            let reports = await fixture.unifiedPush.deliver(try Payloads.notify(.unifiedpush), to: [first, second])
            #expect(reports[0].verdict.outcome == .channelDisconnected)
            #expect(reports[0].verdict.statusCode == 507)
            #expect(reports[0].verdict.reason == "cannot publish to UnifiedPush topic without previously active subscriber (50701)")
            #expect(reports[0].targetResult.handleAction != .removed)
            #expect(reports[0].attempts == 1)
            #expect(reports[1].verdict.outcome == .expiredChannel)
            #expect(reports[1].targetResult.handleAction == .removed)
            #expect(await fixture.sandbox.state.answeredCounts()["unifiedpush 507"] == 1)
        }
    }

    @Test func aSubscriptionThatAsksForVAPIDWithoutAKeyIsNotContacted() async throws {
        try await DispatchFixture.with { fixture in
            let device = await fixture.sandbox.createUnifiedPushDevice(vapid: true)
            let (provider, _) = try provider(fixture, hosts: [fixture.sandbox.endpoints.webPushHost])
            let report = await provider.deliver(
                try Payloads.notify(.unifiedpush), to: [try target(device, at: fixture.sandbox.endpoints.webPush)])[0]
            await provider.shutdown()
            #expect(report.verdict.outcome == .invalidCredentials)
            #expect(report.attempts == 0)
            #expect(await fixture.sandbox.state.answeredCounts()["unifiedpush 200"] == nil)
            #expect(
                await provider.admissionProblem(try target(device, at: fixture.sandbox.endpoints.webPush).handle)?.contains("VAPID") == true
            )
        }
    }

    /// A wildcard entry admits a name, never the private address it resolves to: each refused
    /// range is named, and nothing is sent to the address.
    @Test(arguments: [
        ("127.0.0.1", "loopback"), ("10.1.2.3", "private"), ("169.254.169.254", "link-local"), ("100.64.0.1", "100.64.0.0/10"),
        ("fd00::1", "fc00::/7"), ("::1", "loopback"), ("224.0.0.1", "multicast"),
    ])
    func aWildcardNeverAdmitsAPrivateAddress(_ address: String, _ range: String) async throws {
        try await DispatchFixture.with { fixture in
            let device = await fixture.sandbox.createUnifiedPushDevice()
            let resolver = TableResolver(table: ["up.push.example.com": [try #require(IPAddress(address))]])
            let (provider, discovery) = try provider(fixture, hosts: ["*.push.example.com"], resolver: resolver)
            let target = try target(device, at: "https://up.push.example.com")
            let report = await provider.deliver(try Payloads.notify(.unifiedpush), to: [target])[0]
            #expect(report.verdict.outcome == .badChannel)
            #expect(report.attempts == 0)
            let reason = report.verdict.reason ?? ""
            #expect(reason.contains("up.push.example.com") && reason.contains(range), "\(reason)")
            // Refused at registration too, naming the host.
            let problem = await discovery.problem(
                endpoint: try #require(WebPushSubscription(handleValue: target.handle.value)).endpoint, allowed: ["*.push.example.com"])
            #expect(problem?.contains("up.push.example.com") == true && problem?.contains(range) == true, "\(problem ?? "")")
            await provider.shutdown()
            #expect(await fixture.sandbox.state.answeredCounts().keys.filter { $0.hasPrefix("unifiedpush") }.isEmpty)
        }
    }

    @Test func theDiscoveryAnswerIsAskedOncePerHostAndAFailureNamesTheHost() async throws {
        try await DispatchFixture.with { fixture in
            let first = await fixture.sandbox.createUnifiedPushDevice()
            let second = await fixture.sandbox.createUnifiedPushDevice()
            let host = fixture.sandbox.endpoints.webPushHost
            let wns = fixture.sandbox.endpoints.wnsChannelHost
            let (provider, discovery) = try provider(fixture, hosts: [host, wns])
            for device in [first, second] {
                #expect(await provider.admissionProblem(try target(device, at: fixture.sandbox.endpoints.webPush).handle) == nil)
            }
            #expect(await fixture.sandbox.state.answeredCounts()["unifiedpush 200"] == 1, "kept for the host")
            // After the cache's hour, asked again.
            fixture.clock.advance(seconds: 3601)
            #expect(await provider.admissionProblem(try target(first, at: fixture.sandbox.endpoints.webPush).handle) == nil)
            #expect(await fixture.sandbox.state.answeredCounts()["unifiedpush 200"] == 2)

            // The WNS listener is https on an allowed host:port, and no UnifiedPush server.
            let endpoint = "https://\(wns)/up/abc"
            let problem = try #require(await discovery.problem(endpoint: endpoint, allowed: [host, wns]))
            #expect(problem.contains(wns) && problem.contains("discovery"), "\(problem)")
            await provider.shutdown()
        }
    }
}
