import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateDispatch
import Testing

/// A push service's answer is read up to a limit (64 KiB, or what the service's wire mapping
/// documents): past it that one exchange is cut off, not the HTTP/2 connection its neighbours
/// share, and a 2xx whose body was cut is still a delivery, never retried (a retry would deliver
/// twice). The sandbox pads its answers with a scripted fault (`padBody`).
@Suite struct ResponseLimitTests {
    static let padding = 4 * 1024 * 1024

    /// A Web Push request to `device` as the provider makes it: VAPID-signed, encrypted for it.
    func webPushRequest(_ fixture: DispatchFixture, to device: SandboxDevice) async throws -> CurlRequest {
        let subscription = try #require(WebPushSubscription(handleValue: device.handle))
        let signer = try #require(fixture.browser.vapidSigner)
        let token = try await signer.token(audience: subscription.origin)
        let request = WebPushWire.request(
            endpoint: subscription.endpoint, encryptedBody: try WebPushEncryption.encrypt(Array("hi".utf8), for: subscription),
            notification: try Payloads.notify(.browser), authorization: WebPushWire.authorization(token: token, publicKey: signer.publicKey)
        )
        #expect(request.maximumResponseBodyBytes == 64 * 1024)
        return CurlPushTransport.request(request)
    }

    /// 201 with 4 MiB after it: the client keeps 64 KiB, says the body was cut, and keeps the
    /// status; over HTTP/2 a neighbour on the same connection, in flight when the long answer is
    /// cut off, is answered in full.
    @Test(arguments: [CurlHTTPClientConfiguration.HTTPVersion.http1, .http2])
    func aLongAnswerIsCutAtTheLimitAndItsNeighbourIsAnswered(_ version: CurlHTTPClientConfiguration.HTTPVersion) async throws {
        try await DispatchFixture.with { fixture in
            let long = await fixture.sandbox.createDevice(.browser)
            let neighbour = await fixture.sandbox.createDevice(.browser)
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .browser, handle: long.handle, action: .padBody(bytes: Self.padding)))
            // Answered a second after the long answer begins: its stream is open when that one is reset.
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .browser, handle: neighbour.handle, action: .delay(milliseconds: 1000)))
            // One connection: over HTTP/2 both requests are streams on it.
            let client = try CurlHTTPClient(
                configuration: .init(httpVersion: version, caFile: fixture.files["ca"], maximumConnectionsPerHost: 1))
            let answers = await client.execute(
                batch: [try await webPushRequest(fixture, to: long), try await webPushRequest(fixture, to: neighbour)])
            let again = await client.execute(batch: [try await webPushRequest(fixture, to: long)])
            await client.shutdown()

            let cut = try answers[0].get()
            #expect(cut.status == 201)
            #expect(cut.httpVersion == (version == .http2 ? "2" : "1.1"))
            #expect(cut.isBodyTruncated)
            #expect(cut.body.count == 64 * 1024, "at most the limit is held")
            #expect(cut.header("Location") != nil, "the headers are whole")
            let whole = try answers[1].get()
            #expect(whole.status == 201)
            #expect(!whole.isBodyTruncated)
            // The next request goes out as usual (over HTTP/2 on the same connection).
            #expect((try again[0].get()).status == 201)
            #expect(await fixture.sandbox.state.inbox(deviceID: long.id).count == 2)
            #expect(await fixture.sandbox.state.inbox(deviceID: neighbour.id).count == 1)
        }
    }

    /// Every service's success with 4 MiB after it: Success after one attempt, delivered once
    /// (legacy GCM's limit is 1 MiB, for a full batch's results: its results unread, every
    /// device of the batch is a success).
    @Test(arguments: [SandboxFault.Service.apns, .fcm, .gcm, .wns, .browser, .unifiedpush])
    func aSuccessWithAnOverlongBodyIsDeliveredOnceAndNotRetried(_ service: SandboxFault.Service) async throws {
        try await DispatchFixture.with { fixture in
            let platform: Platform =
                switch service {
                case .apns: .apns
                case .fcm: .fcm
                case .gcm: .gcm
                case .wns: .wns
                case .unifiedpush: .unifiedpush
                default: .browser
                }
            let (device, target) = await fixture.target(platform)
            // Legacy GCM answers a whole batch: its fault names no handle.
            await fixture.sandbox.state.addFault(
                SandboxFault(service: service, handle: service == .gcm ? nil : device.handle, action: .padBody(bytes: Self.padding)))
            let provider: any PushProvider =
                switch platform {
                case .apns: fixture.apns
                case .fcm: fixture.fcm
                case .gcm: fixture.gcm
                case .wns: fixture.wns
                case .browser: fixture.browser
                case .hms: fixture.hms
                case .unifiedpush: fixture.unifiedPush
                }
            let report = await provider.deliver(try Payloads.notify(platform), to: [target])[0]
            #expect(report.verdict.outcome == .success, "\(service): \(report.verdict.reason ?? "")")
            #expect(report.attempts == 1, "\(service)")
            if service == .gcm { #expect(report.verdict.reason?.hasSuffix("its per-device results were not read") == true) }
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1, "\(service)")
            #expect(await fixture.sandbox.state.remainingFaultUses() == 0, "\(service): the padded answer was the one read")
        }
    }

    /// A refusal with an overlong body is classified by its status: 410 is a gone subscription,
    /// pruned, whatever the cut-off text says.
    @Test func aRefusalWithAnOverlongBodyIsClassifiedByItsStatus() async throws {
        try await DispatchFixture.with { fixture in
            let (device, target) = await fixture.target(.browser)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: device.id)
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .browser, handle: device.handle, action: .padBody(bytes: Self.padding)))
            let report = await fixture.browser.deliver(try Payloads.notify(.browser), to: [target])[0]
            #expect(report.verdict.outcome == .expiredChannel, "\(report.verdict.reason ?? "")")
            #expect(report.verdict.statusCode == 410)
            #expect(report.attempts == 1)
            #expect(report.targetResult.handleAction == .removed)
        }
    }
}
