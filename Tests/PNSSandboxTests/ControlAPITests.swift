import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import ServiceLifecycle
import Testing

@Suite struct ControlAPITests {
    func call(
        _ client: CurlHTTPClient, _ fixture: SandboxFixture, _ method: String, _ path: String, _ body: String = ""
    ) async throws
        -> CurlResponse
    {
        try await client.execute(
            CurlRequest(
                method: method, url: fixture.sandbox.endpoints.control + path, headers: [("Content-Type", "application/json")],
                body: Array(body.utf8)))
    }

    @Test func devicesInboxesAndFaultsOverHTTP() async throws {
        try await SandboxFixture.with(http: .http1) { fixture, client in
            #expect(try await call(client, fixture, "GET", "/health").status == 200)
            let created = try await call(client, fixture, "POST", "/devices", #"{"platform":"apns"}"#)
            #expect(created.status == 201)
            let id = try #require(created.json?["id"]?.stringValue)
            let handle = try #require(created.json?["handle"]?.stringValue)
            #expect(handle.count == 64)
            #expect(try await call(client, fixture, "GET", "/devices/\(id)").json?["status"]?.stringValue == "active")
            #expect(try await call(client, fixture, "GET", "/devices").json?.arrayElements?.count == 1)

            let jwt = try await fixture.providerToken()
            let h2 = try fixture.client()
            #expect(try await h2.execute(fixture.apnsRequest(token: handle, jwt: jwt)).status == 200)
            let inbox = try await call(client, fixture, "GET", "/devices/\(id)/inbox")
            #expect(inbox.json?.arrayElements?.first?["payload"]?.stringValue == #"{"aps":{"alert":"hi"}}"#)

            #expect(try await call(client, fixture, "POST", "/devices/\(id)/uninstall").json?["status"]?.stringValue == "uninstalled")
            #expect(try await h2.execute(fixture.apnsRequest(token: handle, jwt: jwt)).status == 410)
            #expect(try await call(client, fixture, "POST", "/devices/\(id)/reinstall").json?["status"]?.stringValue == "active")

            let fault =
                #"{"service":"apns","count":1,"action":{"respond":{"status":503,"reason":"ServiceUnavailable","retryAfterSeconds":1}}}"#
            #expect(try await call(client, fixture, "POST", "/faults", fault).status == 201)
            let faulted = try await h2.execute(fixture.apnsRequest(token: handle, jwt: jwt))
            #expect(faulted.status == 503)
            #expect(faulted.json?["reason"]?.stringValue == "ServiceUnavailable")
            #expect(try await call(client, fixture, "POST", "/faults", "{}").status == 400)
            #expect(try await call(client, fixture, "DELETE", "/faults").status == 200)
            #expect(try await call(client, fixture, "GET", "/stats").json?["apns 503"]?.kind == .number("1"))
            #expect(try await call(client, fixture, "GET", "/devices/none").status == 404)
            #expect(try await call(client, fixture, "POST", "/devices", #"{"platform":"mpns"}"#).status == 400)
            await h2.shutdown()
        }
    }

    @Test func writesTheFilesAGatewayNeeds() async throws {
        let fixture = try await SandboxFixture.start()
        let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: fixture.files["summary"]!))))
        #expect(summary["endpoints"]?["apns"]?.stringValue == fixture.sandbox.endpoints.apns)
        #expect(summary["apns"]?["keyId"]?.stringValue == fixture.sandbox.credentials.apnsKeyID)
        let account = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: fixture.files["serviceAccount"]!))))
        #expect(account["token_uri"]?.stringValue == fixture.sandbox.endpoints.googleToken)
        #expect(account["private_key"]?.stringValue?.hasPrefix("-----BEGIN PRIVATE KEY-----") == true)
        #expect(try String(contentsOfFile: fixture.files["ca"]!, encoding: .utf8).hasPrefix("-----BEGIN CERTIFICATE-----"))
        let attributes = try FileManager.default.attributesOfItem(atPath: fixture.files["apnsKey"]!)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        try await fixture.stop()
    }

    @Test func shutdownSaysGoAwayAndStopsAsAService() async throws {
        let fixture = try await SandboxFixture.start()
        let client = try fixture.client()
        let device = await fixture.sandbox.createDevice(.apns)
        let jwt = try await fixture.providerToken()
        #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status == 200)

        // Run as a ServiceLifecycle service and trigger graceful shutdown.
        let (started, marker) = StartedMarker.make()
        let group = ServiceGroup(services: [fixture.sandbox, marker], gracefulShutdownSignals: [], logger: .init(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // The group runs its services in order: once the marker runs, the sandbox's run has begun.
            for await _ in started { break }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await #expect(throws: CurlError.self) { try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)) }
        await client.shutdown()
        try? FileManager.default.removeItem(atPath: fixture.directory)
    }
}

/// A service that says when the group has started it, then waits for the shutdown.
struct StartedMarker: Service {
    let continuation: AsyncStream<Void>.Continuation

    static func make() -> (AsyncStream<Void>, StartedMarker) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        return (stream, StartedMarker(continuation: continuation))
    }

    func run() async throws {
        continuation.yield()
        try? await gracefulShutdown()
        continuation.finish()
    }
}
