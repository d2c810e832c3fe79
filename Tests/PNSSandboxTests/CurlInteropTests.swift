import Foundation
import Pushgate
import PushgateCurl
import Testing

@testable import PNSSandbox

/// libcurl (our client) against the sandbox's swift-nio-http2 server: the pairing a spike saw fail
/// with curl error 16.
@Suite struct CurlInteropTests {
    @Test func oneRequestOverHTTP2AndTLS() async throws {
        let fixture = try await SandboxFixture.start()
        let client = try fixture.client()
        let device = await fixture.sandbox.createDevice(.apns)
        let jwt = try await fixture.providerToken()
        let response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt))
        #expect(response.status == 200, "\(response.bodyText)")
        #expect(response.httpVersion == "2")
        #expect(response.header("apns-id")?.count == 36)
        #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
        await client.shutdown()
        try await fixture.stop()
    }

    @Test func manyConcurrentStreamsOnOneConnection() async throws {
        let fixture = try await SandboxFixture.start()
        let client = try fixture.client(streams: 100)
        let jwt = try await fixture.providerToken()
        var devices: [SandboxDevice] = []
        for _ in 0..<20 { devices.append(await fixture.sandbox.createDevice(.apns)) }
        let requests = (0..<2000).map {
            fixture.apnsRequest(token: devices[$0 % devices.count].handle, jwt: jwt, payload: #"{"aps":{"alert":"n\#($0)"}}"#)
        }
        let results = await withTaskGroup(of: Result<CurlResponse, CurlError>.self) { group in
            for request in requests {
                group.addTask {
                    do throws(CurlError) { return .success(try await client.execute(request)) } catch { return .failure(error) }
                }
            }
            var all: [Result<CurlResponse, CurlError>] = []
            for await result in group { all.append(result) }
            return all
        }
        let failures = results.compactMap { result -> CurlError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        #expect(failures.isEmpty, "first failures: \(failures.prefix(3))")
        let statuses = Set(results.compactMap { try? $0.get().status })
        #expect(statuses == [200])
        #expect(await fixture.sandbox.state.receivedCount(platform: .apns) == 2000)
        await client.shutdown()
        try await fixture.stop()
    }
}
