import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateTesting
import Testing

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

    /// A batch: one submission, answers in request order whatever the order they arrive in, each
    /// its own (success, service refusal, transport failure).
    @Test func aBatchAnswersEveryRequestInOrder() async throws {
        let fixture = try await SandboxFixture.start()
        let client = try fixture.client(streams: 10)
        let jwt = try await fixture.providerToken()
        var devices: [SandboxDevice] = []
        for _ in 0..<300 { devices.append(await fixture.sandbox.createDevice(.apns)) }
        // The first device answers late, so later requests finish first.
        await fixture.sandbox.state.addFault(SandboxFault(service: .apns, handle: devices[0].handle, action: .delay(milliseconds: 300)))
        await fixture.sandbox.state.setStatus(.uninstalled, deviceID: devices[7].id)
        var requests = devices.enumerated().map {
            fixture.apnsRequest(token: $0.element.handle, jwt: jwt, payload: #"{"aps":{"alert":"n\#($0.offset)"}}"#)
        }
        requests[5].url = "https://127.0.0.1:1/3/device/\(devices[5].handle)"  // nothing listens there
        let results = await client.execute(batch: requests)
        #expect(results.count == 300)
        #expect((try? results[0].get().status) == 200)
        #expect((try? results[7].get().status) == 410)
        if case .failure(let error) = results[5] {
            #expect(error.kind == .connect)
        } else {
            Issue.record("request 5 should fail to connect")
        }
        #expect(results.enumerated().filter { ![5, 7].contains($0.offset) }.allSatisfy { (try? $0.element.get().status) == 200 })
        // In order: each answered request went to its own device.
        for index in [0, 1, 150, 299] {
            #expect(await fixture.sandbox.state.inbox(deviceID: devices[index].id).first?.payload == #"{"aps":{"alert":"n\#(index)"}}"#)
        }
        #expect(await client.execute(batch: []).isEmpty)
        await client.shutdown()
        try await fixture.stop()
    }

    /// Cancelling the task of a batch fails what has not been answered as cancelled, once each;
    /// shutting the client down with a batch waiting resumes its caller once.
    @Test func aCancelledOrShutDownBatchResumesItsCallerOnce() async throws {
        let fixture = try await SandboxFixture.start()
        let client = try fixture.client(streams: 2)
        let jwt = try await fixture.providerToken()
        let device = await fixture.sandbox.createDevice(.apns)
        await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .delay(milliseconds: 200), count: 1000))
        let requests = (0..<200).map { _ in fixture.apnsRequest(token: device.handle, jwt: jwt) }
        let task = Task { await client.execute(batch: requests) }
        // Cancelled once requests are on the wire (each takes its delay from the sandbox as it arrives).
        #expect(
            try await eventually(timeout: .seconds(10), every: .milliseconds(5)) { await fixture.sandbox.state.remainingFaultUses() < 1000 }
        )
        task.cancel()
        let cancelled = await task.value
        #expect(cancelled.count == 200)
        let failures = cancelled.compactMap { result -> CurlError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        #expect(failures.count >= 190 && failures.allSatisfy { $0 == CurlError.cancelled })

        let before = await fixture.sandbox.state.remainingFaultUses()
        let waiting = Task { await client.execute(batch: requests) }
        #expect(
            try await eventually(timeout: .seconds(10), every: .milliseconds(5)) {
                await fixture.sandbox.state.remainingFaultUses() < before
            })
        await client.shutdown()
        let shutDown = await waiting.value
        #expect(shutDown.count == 200)
        #expect(shutDown.allSatisfy { if case .failure(let error) = $0 { error == CurlError.shutDown } else { false } })
        #expect(
            await client.execute(batch: requests).allSatisfy {
                if case .failure(let error) = $0 { error == CurlError.shutDown } else { false }
            })
        try await fixture.stop()
    }
}

/// A request pinned to an address (`CURLOPT_CONNECT_TO`, what ``OutboundPin`` sets) connects
/// there whatever its URL's host and port resolve to; the pooled handle forgets the pin for the
/// next request; `httpsOnly` refuses an `http` URL without a connection.
@Suite struct PinnedRequestTests {
    @Test func aPinnedRequestConnectsToThePinnedAddressOnly() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let jwt = try await fixture.providerToken()
            var request = fixture.apnsRequest(token: device.handle, jwt: jwt)
            let sandboxPort = try #require(request.url.split(separator: ":").last.flatMap { Int($0.prefix(while: \.isNumber)) })
            // Port 1 on this machine: nothing listens there.
            request.url = "https://localhost:1/3/device/\(device.handle)"
            request.connectTo = "localhost:1:127.0.0.1:\(sandboxPort)"
            request.httpsOnly = true
            let pinned = try await client.execute(request)
            #expect(pinned.status == 200, "\(pinned.bodyText)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)

            // The same client, the same URL, no pin: the URL's own port, where nothing listens
            // (the pinned connection is not reused for it).
            request.connectTo = nil
            do throws(CurlError) {
                let answer = try await client.execute(request)
                Issue.record("an unpinned request reached a server: \(answer.status)")
            } catch {
                #expect(error.kind == .connect, "\(error)")
            }

            var plain = request
            plain.url = "http://127.0.0.1:\(sandboxPort)/3/device/\(device.handle)"
            plain.httpsOnly = true
            do throws(CurlError) {
                let answer = try await client.execute(plain)
                Issue.record("an http URL was requested with httpsOnly: \(answer.status)")
            } catch {
                #expect(error.message.lowercased().contains("protocol"), "\(error)")
            }
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)
        }
    }
}
