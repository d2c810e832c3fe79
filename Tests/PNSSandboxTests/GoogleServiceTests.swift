import CryptoExtras
import Foundation
import JWTKit
import PNSSandbox
import Pushgate
import PushgateCurl
import Testing

@Suite struct GoogleServiceTests {
    func errorCode(_ response: CurlResponse) -> String? {
        response.json?["error"]?["details"]?.arrayElements?.first?["errorCode"]?.stringValue
    }

    @Test func theServiceAccountAssertionBuysAnAccessTokenThatSendsToADevice() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.fcm)
            let token = try await fixture.fcmAccessToken(client)
            let response = try await client.execute(
                fixture.fcmRequest(message: #"{"token":"\#(device.handle)","data":{"message":"From bob: hi"}}"#, accessToken: token))
            #expect(response.status == 200, "\(response.bodyText)")
            #expect(response.httpVersion == "2")
            let name = try #require(response.json?["name"]?.stringValue)
            #expect(name.hasPrefix("projects/\(fixture.sandbox.credentials.fcmProjectID)/messages/"))
            let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
            #expect(inbox.count == 1)
            #expect(inbox.first?.messageID == name)
            #expect(try JSONParser.parse(inbox[0].payload)["message"]?["data"]?["message"]?.stringValue == "From bob: hi")
        }
    }

    @Test func badAssertionsAreRefusedWithOAuthErrors() async throws {
        try await SandboxFixture.with { fixture, client in
            func exchange(
                _ assertion: String, grant: String = "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
            ) async throws
                -> CurlResponse
            {
                try await client.execute(
                    CurlRequest(
                        url: fixture.sandbox.endpoints.googleToken, headers: [("content-type", "application/x-www-form-urlencoded")],
                        body: Array("grant_type=\(grant)&assertion=\(assertion)".utf8)))
            }
            let otherKey = try _RSA.Signing.PrivateKey(keySize: .bits2048).pkcs8PEMRepresentation
            let cases: [(String, String)] = [
                (try await fixture.googleAssertion(pem: otherKey), "invalid_grant"),
                (try await fixture.googleAssertion(audience: "https://example.com/token"), "invalid_grant"),
                (try await fixture.googleAssertion(scope: "https://www.googleapis.com/auth/drive"), "invalid_scope"),
                (try await fixture.googleAssertion(issuer: "someone@else.iam.gserviceaccount.com"), "invalid_grant"),
                (try await fixture.googleAssertion(lifetime: 7200), "invalid_grant"),
                (try await fixture.googleAssertion(lifetime: -10), "invalid_grant"),
                ("garbage", "invalid_grant"),
            ]
            for (assertion, expected) in cases {
                let response = try await exchange(assertion)
                #expect(response.status == 400)
                #expect(response.json?["error"]?.stringValue == expected, "\(response.bodyText)")
            }
            let wrongGrant = try await exchange(try await fixture.googleAssertion(), grant: "client_credentials")
            #expect(wrongGrant.json?["error"]?.stringValue == "unsupported_grant_type")
        }
    }

    @Test func sendsNeedAValidUnexpiredBearerToken() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.fcm)
            let message = #"{"token":"\#(device.handle)","data":{"m":"x"}}"#
            var response = try await client.execute(fixture.fcmRequest(message: message, accessToken: "ya29.made-up"))
            #expect(response.status == 401)
            #expect(response.json?["error"]?["status"]?.stringValue == "UNAUTHENTICATED")
            #expect(errorCode(response) == nil)

            let token = try await fixture.fcmAccessToken(client)
            #expect(try await client.execute(fixture.fcmRequest(message: message, accessToken: token)).status == 200)
            fixture.clock.advance(seconds: 3600)
            response = try await client.execute(fixture.fcmRequest(message: message, accessToken: token))
            #expect(response.status == 401)

            let fresh = try await fixture.fcmAccessToken(client)
            response = try await client.execute(fixture.fcmRequest(message: message, accessToken: fresh, project: "another-project"))
            #expect(response.status == 403)
        }
    }

    @Test func messagesAreValidatedAndErrorsCarryTheFcmErrorDetail() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.fcmAccessToken(client)
            let device = await fixture.sandbox.createDevice(.fcm)
            let gone = await fixture.sandbox.createDevice(.fcm)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: gone.id)
            let foreign = await fixture.sandbox.createDevice(.fcm, belongsToAnotherApp: true)
            let cases: [(String, Int, String, String)] = [
                (#"{"data":{"m":"x"}}"#, 400, "INVALID_ARGUMENT", "Recipient of the message is not set."),
                (#"{"token":"\#(device.handle)","topic":"news"}"#, 400, "INVALID_ARGUMENT", "Exactly one of"),
                (#"{"token":"\#(device.handle)","data":{"count":12}}"#, 400, "INVALID_ARGUMENT", "message.data[0].value"),
                (#"{"token":"not-a-token","data":{}}"#, 400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
                (#"{"token":"\#(gone.handle)","data":{}}"#, 404, "UNREGISTERED", "Requested entity was not found."),
                (#"{"token":"\#(foreign.handle)","data":{}}"#, 403, "SENDER_ID_MISMATCH", "SenderId mismatch"),
                (
                    #"{"token":"\#(device.handle)","data":{"big":"\#(String(repeating: "x", count: 4100))"}}"#, 400, "INVALID_ARGUMENT",
                    "too big"
                ),
            ]
            for (message, status, code, text) in cases {
                let response = try await client.execute(fixture.fcmRequest(message: message, accessToken: token))
                #expect(response.status == status, "\(message.prefix(60))")
                #expect(errorCode(response) == code, "\(response.bodyText.prefix(200))")
                #expect(response.json?["error"]?["message"]?.stringValue?.contains(text) == true, "\(response.bodyText.prefix(200))")
                #expect(response.json?["error"]?["code"]?.kind == .number(String(status)))
            }
            #expect(await fixture.sandbox.state.receivedCount() == 0)
            // The documented detail naming the bad field, and protobuf JSON's unknown names.
            let invalid = try await client.execute(fixture.fcmRequest(message: #"{"token":"not-a-token"}"#, accessToken: token))
            #expect(invalid.bodyText.contains(#""fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]"#))
            let unknown = try await client.execute(
                fixture.fcmRequest(message: #"{"token":"\#(device.handle)","priority":"high"}"#, accessToken: token))
            #expect(unknown.status == 400)
            #expect(
                unknown.json?["error"]?["message"]?.stringValue
                    == #"Invalid JSON payload received. Unknown name "priority" at 'message': Cannot find field."#)
        }
    }

    @Test func bothDocumentedAssertionAudiencesBuyAToken() async throws {
        try await SandboxFixture.with { fixture, client in
            for audience in ["https://oauth2.googleapis.com/token", fixture.sandbox.endpoints.googleToken] {
                let assertion = try await fixture.googleAssertion(audience: audience)
                let response = try await client.execute(
                    CurlRequest(
                        url: fixture.sandbox.endpoints.googleToken, headers: [("content-type", "application/x-www-form-urlencoded")],
                        body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)))
                #expect(response.status == 200, "\(audience): \(response.bodyText)")
            }
        }
    }

    @Test func faultsAnswerWithRetryAfterAndTheCanonicalStatus() async throws {
        try await SandboxFixture.with { fixture, client in
            let token = try await fixture.fcmAccessToken(client)
            let device = await fixture.sandbox.createDevice(.fcm)
            let message = #"{"token":"\#(device.handle)","data":{"m":"x"}}"#
            for (status, code) in [(429, "QUOTA_EXCEEDED"), (503, "UNAVAILABLE"), (500, "INTERNAL"), (401, "THIRD_PARTY_AUTH_ERROR")] {
                await fixture.sandbox.state.addFault(
                    SandboxFault(service: .fcm, handle: device.handle, action: .respond(status: status, reason: code, retryAfterSeconds: 7))
                )
                let response = try await client.execute(fixture.fcmRequest(message: message, accessToken: token))
                #expect(response.status == status)
                #expect(errorCode(response) == code)
                #expect(response.header("retry-after") == "7")
            }
            #expect(try await client.execute(fixture.fcmRequest(message: message, accessToken: token)).status == 200)
        }
    }

    @Test func fcmAlsoAnswersOverHTTP1() async throws {
        try await SandboxFixture.with(http: .http1) { fixture, client in
            let token = try await fixture.fcmAccessToken(client)
            let device = await fixture.sandbox.createDevice(.fcm)
            let response = try await client.execute(
                fixture.fcmRequest(message: #"{"token":"\#(device.handle)","data":{}}"#, accessToken: token))
            #expect(response.status == 200)
            #expect(response.httpVersion == "1.1")
        }
    }

    @Test func legacyMulticastReportsEachTokenInOrder() async throws {
        try await SandboxFixture.with { fixture, client in
            let ok = await fixture.sandbox.createDevice(.gcm)
            let gone = await fixture.sandbox.createDevice(.gcm)
            await fixture.sandbox.state.setStatus(.uninstalled, deviceID: gone.id)
            let moved = await fixture.sandbox.createDevice(.gcm)
            let canonical = try #require(
                await fixture.sandbox.state.setCanonicalHandle("canonical-" + String(repeating: "c", count: 30), deviceID: moved.id))
            let foreign = await fixture.sandbox.createDevice(.gcm, belongsToAnotherApp: true)
            let ids = [ok.handle, gone.handle, "bogus-token", moved.handle, foreign.handle]
            let body = #"{"registration_ids":[\#(ids.map { "\"\($0)\"" }.joined(separator: ","))],"data":{"message":"hi"}}"#
            let response = try await client.execute(fixture.gcmRequest(body))
            #expect(response.status == 200, "\(response.bodyText)")
            let json = try #require(response.json)
            #expect(json["success"]?.kind == .number("2"))
            #expect(json["failure"]?.kind == .number("3"))
            #expect(json["canonical_ids"]?.kind == .number("1"))
            let results = try #require(json["results"]?.arrayElements)
            #expect(results.count == 5)
            #expect(results[0]["message_id"]?.stringValue?.hasPrefix("0:") == true)
            #expect(results[1]["error"]?.stringValue == "NotRegistered")
            #expect(results[2]["error"]?.stringValue == "InvalidRegistration")
            #expect(results[3]["registration_id"]?.stringValue == canonical.canonicalHandle)
            #expect(results[4]["error"]?.stringValue == "MismatchSenderId")
            #expect(await fixture.sandbox.state.inbox(deviceID: ok.id).count == 1)
            #expect(await fixture.sandbox.state.inbox(deviceID: moved.id).count == 1)
        }
    }

    @Test func legacyRequestErrors() async throws {
        try await SandboxFixture.with { fixture, client in
            let device = await fixture.sandbox.createDevice(.gcm)
            var response = try await client.execute(fixture.gcmRequest(#"{"to":"\#(device.handle)"}"#, key: "AAAA-wrong"))
            #expect(response.status == 401)
            response = try await client.execute(fixture.gcmRequest("{nope"))
            #expect(response.status == 400)
            response = try await client.execute(fixture.gcmRequest(#"{"data":{}}"#))
            #expect(response.status == 400)
            #expect(response.bodyText.contains("Missing \"to\" or \"registration_ids\""))
            let many = (0..<1001).map { "\"t\($0)\"" }.joined(separator: ",")
            response = try await client.execute(fixture.gcmRequest(#"{"registration_ids":[\#(many)]}"#))
            #expect(response.status == 400)
            response = try await client.execute(
                fixture.gcmRequest(#"{"to":"\#(device.handle)","data":{"x":"\#(String(repeating: "y", count: 4100))"}}"#))
            #expect(response.json?["results"]?.arrayElements?.first?["error"]?.stringValue == "MessageTooBig")
            await fixture.sandbox.state.addFault(
                SandboxFault(service: .gcm, action: .respond(status: 503, reason: "Unavailable", retryAfterSeconds: 2)))
            response = try await client.execute(fixture.gcmRequest(#"{"to":"\#(device.handle)"}"#))
            #expect(response.status == 503)
            #expect(response.header("retry-after") == "2")
            await fixture.sandbox.state.addFault(
                SandboxFault(
                    service: .gcm, handle: device.handle, action: .respond(status: 200, reason: "Unavailable", retryAfterSeconds: nil)))
            // The first fault (no handle) was used up; this one applies per token inside a 200.
            response = try await client.execute(fixture.gcmRequest(#"{"to":"\#(device.handle)"}"#))
            #expect(response.status == 200)
            #expect(response.json?["results"]?.arrayElements?.first?["error"]?.stringValue == "Unavailable")
        }
    }
}
