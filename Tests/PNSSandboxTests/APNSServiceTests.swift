import Foundation
import JWTKit
import PNSSandbox
import Pushgate
import PushgateCurl
import Testing

@Suite struct APNSServiceTests {
    func reason(_ response: CurlResponse) -> String? { response.json?["reason"]?.stringValue }

    @Test func deliversToAnInstalledDeviceWithItsHeaders() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let jwt = try await fixture.providerToken()
            let apnsID = "8f4d1d2a-6a1b-4c53-9d7e-0b1c2d3e4f50"
            let response = try await client.execute(
                fixture.apnsRequest(
                    token: device.handle, jwt: jwt, payload: #"{"aps":{"alert":"From bob: hi"}}"#,
                    headers: [("apns-id", apnsID), ("apns-priority", "10"), ("apns-collapse-id", "c1"), ("apns-expiration", "0")]))
            #expect(response.status == 200)
            #expect(response.header("apns-id") == apnsID)
            #expect(response.body.isEmpty)
            let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
            #expect(inbox.map(\.payload) == [#"{"aps":{"alert":"From bob: hi"}}"#])
            #expect(inbox.first?.header("apns-collapse-id") == "c1")
            #expect(inbox.first?.messageID == apnsID)
        }
    }

    @Test func providerTokenFailuresAreForbiddenWithApplesReasons() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            var request = fixture.apnsRequest(token: device.handle, jwt: "x")
            request.headers.removeAll { $0.name == "authorization" }
            var response = try await client.execute(request)
            #expect(response.status == 403)
            #expect(reason(response) == "MissingProviderToken")
            #expect(response.header("apns-id") != nil)

            let otherKey = ES256PrivateKey()
            let forged = try await fixture.providerToken(pem: otherKey.pemRepresentation)
            response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: forged))
            #expect(response.status == 403)
            #expect(reason(response) == "InvalidProviderToken")

            let wrongKid = try await fixture.providerToken(keyID: "ZZZZZZZZZZ")
            #expect(reason(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: wrongKid))) == "InvalidProviderToken")
            let wrongTeam = try await fixture.providerToken(teamID: "ZZZZZZZZZZ")
            #expect(reason(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: wrongTeam))) == "InvalidProviderToken")
            #expect(reason(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: "not.a.jwt"))) == "InvalidProviderToken")

            let stale = try await fixture.providerToken(issuedAt: fixture.clock.now.secondsSinceEpoch - 3601)
            response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: stale))
            #expect(response.status == 403)
            #expect(reason(response) == "ExpiredProviderToken")
        }
    }

    @Test func anAcceptedTokenExpiresAfterAnHourAndRefreshingTooOftenIsThrottled() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let first = try await fixture.providerToken()
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: first)).status == 200)

            // A different token ten minutes later: too soon (Apple: at most every 20 minutes).
            fixture.clock.advance(seconds: 600)
            let early = try await fixture.providerToken()
            var response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: early))
            #expect(response.status == 429)
            #expect(reason(response) == "TooManyProviderTokenUpdates")
            // The first token still works.
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: first)).status == 200)

            // An hour after it was issued, the first token has expired; a fresh one is accepted.
            fixture.clock.advance(seconds: 3001)
            response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: first))
            #expect(response.status == 403)
            #expect(reason(response) == "ExpiredProviderToken")
            let fresh = try await fixture.providerToken()
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: fresh)).status == 200)
        }
    }

    @Test func headersAreValidatedWithTheExactReasons() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let jwt = try await fixture.providerToken()
            let cases: [([(String, String)], Int, String)] = [
                ([("apns-priority", "7")], 400, "BadPriority"),
                ([("apns-push-type", "background"), ("apns-priority", "10")], 400, "BadPriority"),
                ([("apns-push-type", "shout")], 400, "InvalidPushType"),
                ([("apns-expiration", "tomorrow")], 400, "BadExpirationDate"),
                ([("apns-id", "not-a-uuid")], 400, "BadMessageId"),
                ([("apns-id", "8F4D1D2A-6A1B-4C53-9D7E-0B1C2D3E4F50")], 400, "BadMessageId"),
                ([("apns-collapse-id", String(repeating: "c", count: 65))], 400, "BadCollapseId"),
                ([("apns-topic", "com.other.app")], 400, "TopicDisallowed"),
            ]
            for (headers, status, expected) in cases {
                let response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt, headers: headers))
                #expect(response.status == status, "\(headers)")
                #expect(reason(response) == expected, "\(headers)")
            }
            var noTopic = fixture.apnsRequest(token: device.handle, jwt: jwt)
            noTopic.headers.removeAll { $0.name == "apns-topic" }
            #expect(reason(try await client.execute(noTopic)) == "MissingTopic")

            var duplicated = fixture.apnsRequest(token: device.handle, jwt: jwt)
            duplicated.headers.append(("apns-priority", "10"))
            duplicated.headers.append(("apns-priority", "5"))
            #expect(reason(try await client.execute(duplicated)) == "DuplicateHeaders")

            // VoIP pushes use the .voip topic and may be 5120 bytes.
            let voip = #"{"aps":{},"x":"\#(String(repeating: "v", count: 5000))"}"#
            let response = try await client.execute(
                fixture.apnsRequest(
                    token: device.handle, jwt: jwt, payload: voip,
                    headers: [("apns-push-type", "voip"), ("apns-topic", fixture.sandbox.credentials.apnsTopic + ".voip")]))
            #expect(response.status == 200)
        }
    }

    @Test func payloadsAndPathsAreValidated() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let jwt = try await fixture.providerToken()
            var response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt, payload: ""))
            #expect(response.status == 400)
            #expect(reason(response) == "PayloadEmpty")
            let big = #"{"aps":{"alert":"\#(String(repeating: "x", count: 4100))"}}"#
            response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt, payload: big))
            #expect(response.status == 413)
            #expect(reason(response) == "PayloadTooLarge")
            response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt, payload: "[1]"))
            #expect(response.status == 400)

            response = try await client.execute(fixture.apnsRequest(token: "zz" + device.handle.dropFirst(2), jwt: jwt))
            #expect(reason(response) == "BadDeviceToken")
            response = try await client.execute(fixture.apnsRequest(token: String(repeating: "ab", count: 32), jwt: jwt))
            #expect(response.status == 400)
            #expect(reason(response) == "BadDeviceToken")

            var request = fixture.apnsRequest(token: device.handle, jwt: jwt)
            request.url = fixture.sandbox.endpoints.apns + "/3/device/"
            #expect(reason(try await client.execute(request)) == "MissingDeviceToken")
            request.url = fixture.sandbox.endpoints.apns + "/2/device/" + device.handle
            response = try await client.execute(request)
            #expect(response.status == 404)
            #expect(reason(response) == "BadPath")
            request = fixture.apnsRequest(token: device.handle, jwt: jwt)
            request.method = "PUT"
            response = try await client.execute(request)
            #expect(response.status == 405)
            #expect(reason(response) == "MethodNotAllowed")
        }
    }

    @Test func goneDevicesAnswer410WithTheTimeTheyWentAway() async throws {
        try await SandboxFixture.with { fixture, client in
            let jwt = try await fixture.providerToken()
            let uninstalled = await fixture.sandbox.createDevice(.apns)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: uninstalled.id)
            var response = try await client.execute(fixture.apnsRequest(token: uninstalled.handle, jwt: jwt))
            #expect(response.status == 410)
            #expect(reason(response) == "Unregistered")
            #expect(response.json?["timestamp"]?.kind == .number(String(Int64(fixture.clock.now.secondsSinceEpoch * 1000))))

            let expired = await fixture.sandbox.createDevice(.apns)
            await fixture.sandbox.state.setStatus(.expired, deviceID: expired.id)
            response = try await client.execute(fixture.apnsRequest(token: expired.handle, jwt: jwt))
            #expect(response.status == 410)
            #expect(reason(response) == "ExpiredToken")

            let foreign = await fixture.sandbox.createDevice(.apns, belongsToAnotherApp: true)
            #expect(reason(try await client.execute(fixture.apnsRequest(token: foreign.handle, jwt: jwt))) == "DeviceTokenNotForTopic")
            #expect(await fixture.sandbox.state.receivedCount() == 0)
        }
    }

    @Test func apnsSpeaksHTTP2OnlyAndItsStreamLimitIsHonoured() async throws {
        try await SandboxFixture.with(streams: 5) { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let jwt = try await fixture.providerToken()
            let http1 = try CurlHTTPClient(configuration: .init(httpVersion: .http1, caFile: fixture.files["ca"]))
            await #expect(throws: CurlError.self) { try await http1.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)) }
            await http1.shutdown()

            // 5 streams advertised, 100 requests at once on one connection: curl queues, all succeed.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.count == 100)
            #expect(Set(statuses) == [200])
        }
    }

    @Test func scriptedFaultsApplyToTheNextRequestsOnly() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.apns)
            let jwt = try await fixture.providerToken()
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .apns, action: .respond(status: 429, reason: "TooManyRequests", retryAfterSeconds: 3), count: 2))
            for _ in 0..<2 {
                let response = try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt))
                #expect(response.status == 429)
                #expect(reason(response) == "TooManyRequests")
                #expect(response.header("retry-after") == "3")
            }
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status == 200)

            // A fault for another device does not touch this one.
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .apns, handle: String(repeating: "0", count: 64),
                    action: .respond(status: 500, reason: nil, retryAfterSeconds: nil)))
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status == 200)
            await fixture.sandbox.state.clearFaults()

            // A dropped connection is a transport error, and the next request reconnects.
            await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .dropConnection))
            await #expect {
                try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt))
            } throws: { error in
                (error as? CurlError)?.kind == .connectionLost
            }
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status == 200)

            // GOAWAY refuses the stream unprocessed; libcurl 8 retries it on a new connection by itself.
            await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .goAway(reason: "Shutdown")))
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status == 200)
            #expect(await fixture.sandbox.state.answeredCounts()["apns-goaway 0"] == 1)
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status == 200)

            // Added latency.
            await fixture.sandbox.state.addFault(SandboxFault(service: .apns, action: .delay(milliseconds: 300)))
            let start = ContinuousClock.now
            #expect(try await client.execute(fixture.apnsRequest(token: device.handle, jwt: jwt)).status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(300))
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 6)
        }
    }
}
