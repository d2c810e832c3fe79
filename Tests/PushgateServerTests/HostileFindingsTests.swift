import Foundation
import Pushgate
import PushgateCurl
import PushgateTesting
import Testing

/// What a hostile client found in the tutorial API, each attack made again through the router
/// (in process, on the in-memory gateway: no socket, no sandbox) and now doing no harm: another account's
/// devices not disclosed, flags that fail closed, reserved ids tied to their reserver, errors
/// that do not echo large inputs.
@Suite struct HostileFindingsTests {
    /// A configuration whose admin is carol (demo passwords: the name is the password).
    static let carolIsAdmin: @Sendable (inout [String: Any]) -> Void = { config in
        var auth = config["auth"] as? [String: Any] ?? [:]
        auth["admins"] = ["carol"]
        config["auth"] = auth
    }

    static func json(_ response: CurlResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(response.bodyText)")
    }

    @Test func anotherAccountsDevicesAreCountedNotDisclosed() async throws {
        try await InMemoryGatewayFixture.with(rewrite: Self.carolIsAdmin) { fixture in
            let phone = fixture.device(.apns)
            let gone = fixture.device(.apns)
            let phoneID = try await fixture.register(phone, user: "alice", tags: ["private-club"])
            let goneID = try await fixture.register(gone, user: "alice")
            fixture.uninstall(gone)

            // bob's send to alice: counts per platform and outcome, no ids, handles or tags.
            let sent = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""hi""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            let result = try Self.json(sent)
            #expect((result["targets"] as? [Any])?.isEmpty == true && result["omittedTargets"] as? Int == 2, "\(result)")
            #expect(result["success"] as? Int == 1 && result["failure"] as? Int == 1, "\(result)")
            for secret in [phoneID, goneID, phone.handle, gone.handle, String(phone.handle.prefix(6)), "private-club"] {
                #expect(!sent.bodyText.contains(secret), "\(secret) in \(sent.bodyText)")
            }
            let xml = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""hi""#, accept: "application/xml")
            #expect(xml.status == 200 && !xml.bodyText.contains(phoneID), "\(xml.bodyText)")

            // The telemetry: counts for bob, the failed device for an admin, with an opaque cursor.
            let id = try #require(result["notificationId"] as? String)
            let bobs = try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedLimit=1", user: "bob")
            let bobsTelemetry = try Self.json(bobs)
            #expect(
                (bobsTelemetry["failedTargets"] as? [Any])?.isEmpty == true && bobsTelemetry["failure"] as? Int == 1, "\(bobs.bodyText)")
            #expect(!bobs.bodyText.contains(goneID) && bobsTelemetry["nextFailedAfter"] == nil, "\(bobs.bodyText)")
            let forged = try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedAfter=\(goneID)", user: "bob")
            #expect(forged.status == 400 && forged.bodyText.contains("failedAfter"), "\(forged.bodyText)")
            let admins = try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedLimit=1", user: "carol")
            let adminsTelemetry = try Self.json(admins)
            let failed = try #require(adminsTelemetry["failedTargets"] as? [[String: Any]], "\(admins.bodyText)")
            #expect(failed.map { $0["registrationId"] as? String } == [goneID], "\(admins.bodyText)")
            let cursor = try #require(adminsTelemetry["nextFailedAfter"] as? String, "\(admins.bodyText)")
            #expect(!cursor.contains(goneID), "the cursor is opaque: \(cursor)")
            let next = try await fixture.call("GET", "/api/notifications/\(id)/outcome?failedLimit=1&failedAfter=\(cursor)", user: "carol")
            let nextPage = try Self.json(next)["failedTargets"] as? [Any]
            #expect(next.status == 200 && nextPage?.isEmpty == true, "\(next.bodyText)")

            // A send to one's own user tag lists one's own devices.
            let own = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "alice", body: #""me""#)
            let ownTargets = try #require(try Self.json(own)["targets"] as? [[String: Any]], "\(own.bodyText)")
            #expect(ownTargets.map { $0["registrationId"] as? String } == [phoneID], "\(own.bodyText)")
        }
    }

    @Test func aDryRunListsOnlyTheCallersOwnRegistrations() async throws {
        try await InMemoryGatewayFixture.with(rewrite: Self.carolIsAdmin) { fixture in
            let phone = fixture.device(.apns)
            let phoneID = try await fixture.register(phone, user: "alice", tags: ["private-club"])
            let probe = "/api/notifications?pns=apns&tags=private-club&dryRun=true&sample=100"
            let bobs = try await fixture.call("POST", probe, user: "bob", body: #""hi""#)
            let dryRun = try Self.json(bobs)
            #expect((dryRun["audience"] as? [String: Any])?["total"] as? Int == 1, "\(bobs.bodyText)")
            #expect((dryRun["registrations"] as? [Any])?.isEmpty == true, "\(bobs.bodyText)")
            for secret in [phoneID, phone.handle, String(phone.handle.prefix(6)), "username:alice"] {
                #expect(!bobs.bodyText.contains(secret), "\(secret) in \(bobs.bodyText)")
            }
            for user in ["alice", "carol"] {
                let allowed = try await fixture.call("POST", probe, user: user, body: #""hi""#)
                #expect(allowed.bodyText.contains(phoneID), "\(user): \(allowed.bodyText)")
            }
        }
    }

    @Test func flagsFailClosedAndNothingIsSent() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let phone = fixture.device(.apns)
            _ = try await fixture.register(phone, user: "alice")
            let refused: [(query: String, names: String)] = [
                ("secure=yes", "secure"), ("secure", "secure"), ("secure=", "secure"), ("dryRun", "dryRun"), ("dryRun=", "dryRun"),
                ("dryrun=true", "dryRun"), ("dry_run=true", "dryRun"), ("dryRun=false&dryRun=true", "dryRun"), ("async=yes", "async"),
                ("validateOnly=maybe", "validateOnly"), ("to_tag=alice", "to_tag"), ("colour=blue", "colour"),
            ]
            for (query, name) in refused {
                let answer = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice&\(query)", user: "bob", body: #""x""#)
                #expect(answer.status == 400 && answer.bodyText.contains(name), "\(query): \(answer.status) \(answer.bodyText)")
            }
            #expect(fixture.delivered(to: phone) == 0)
            #expect(try await fixture.call("GET", "/api/notifications", user: "bob").bodyText == "[]")
            // Names are percent-decoded: %64ryRun is dryRun, and the dry run sends nothing.
            let encoded = try await fixture.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&%64ryRun=true", user: "bob", body: #""x""#)
            #expect(encoded.status == 200 && encoded.bodyText.contains(#""dryRun":true"#), "\(encoded.bodyText)")
            #expect(fixture.delivered(to: phone) == 0)
            // The documented spellings still work.
            let secure = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=alice&secure=1", user: "bob", body: #""x""#)
            #expect(secure.status == 200 && secure.header("X-Pushgate-Secure-Id") != nil, "\(secure.bodyText)")
        }
    }

    @Test func anIDReservedByOneUserIsNotAnothersToWrite() async throws {
        try await InMemoryGatewayFixture.with(rewrite: Self.carolIsAdmin) { fixture in
            let phone = fixture.device(.apns)
            let reserved = try await fixture.call("POST", "/api/register", user: "alice")
            let id = try #require(try JSONSerialization.jsonObject(with: Data(reserved.body), options: .fragmentsAllowed) as? String)
            let body = #"{"Platform":"apns","Handle":"\#(phone.handle)","Tags":[]}"#
            let stolen = try await fixture.call("PUT", "/api/register/\(id)", user: "bob", body: body)
            #expect(stolen.status == 403 && stolen.bodyText.contains("reserved by another user"), "\(stolen.bodyText)")
            #expect(try await fixture.call("PUT", "/api/register/\(id)", user: "alice", body: body).status == 200)
        }
    }

    @Test func errorsDoNotEchoLargeInputs() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let large = String(repeating: "A", count: 30_000)
            for (method, path, body) in [
                ("POST", "/api/notifications?pns=\(large)&to_tag=alice", #""x""#),
                ("PUT", "/api/register/r1", #"{"Platform":"\#(large)","Handle":"x"}"#),
                ("GET", "/api/\(large)", ""),
            ] {
                let answer = try await fixture.call(method, path, user: "bob", body: body)
                #expect(
                    (400..<500).contains(answer.status) && answer.body.count < 1_000,
                    "\(method) \(answer.status): \(answer.body.count) bytes")
            }
        }
    }

    static func limits(_ values: [String: Int]) -> @Sendable (inout [String: Any]) -> Void {
        { config in
            var limits = config["limits"] as? [String: Any] ?? [:]
            for (key, value) in values { limits[key] = value }
            config["limits"] = limits
            var auth = config["auth"] as? [String: Any] ?? [:]
            auth["admins"] = ["carol"]
            config["auth"] = auth
        }
    }

    @Test func registrationsPerUserAreCapped() async throws {
        try await InMemoryGatewayFixture.with(rewrite: Self.limits(["maxRegistrationsPerUser": 3])) { fixture in
            for _ in 0..<3 { _ = try await fixture.register(fixture.device(.apns), user: "mallory") }
            let extra = fixture.device(.apns)
            let reserved = try await fixture.call("POST", "/api/register", user: "mallory")
            let id = try #require(try JSONSerialization.jsonObject(with: Data(reserved.body), options: .fragmentsAllowed) as? String)
            let refused = try await fixture.call(
                "PUT", "/api/register/\(id)", user: "mallory", body: #"{"Platform":"apns","Handle":"\#(extra.handle)","Tags":[]}"#)
            #expect(refused.status == 429 && refused.bodyText.contains("at most 3 per user"), "\(refused.bodyText)")
            // Updating one of them is no new registration; another user has a count of their own.
            let listed = try await fixture.call("GET", "/api/registrations", user: "mallory")
            #expect((try JSONSerialization.jsonObject(with: Data(listed.body)) as? [Any])?.count == 3, "\(listed.bodyText)")
            _ = try await fixture.register(extra, user: "alice")
        }
    }

    @Test func scheduledNotificationsPerSenderAreCapped() async throws {
        try await InMemoryGatewayFixture.with(rewrite: Self.limits(["maxScheduledPerSender": 2])) { fixture in
            _ = try await fixture.register(fixture.device(.apns), user: "alice")
            let later = RFC3339.format(Timestamp(secondsSinceEpoch: (Date().timeIntervalSince1970 + 3600).rounded(.down)))
            let path = "/api/notifications?pns=apns&to_tag=alice&deliverAt=\(later)"
            for index in 0..<2 {
                let accepted = try await fixture.call(
                    "POST", path, user: "mallory", body: #""x""#, headers: [("Idempotency-Key", "k\(index)")])
                #expect(accepted.status == 202, "\(accepted.bodyText)")
            }
            let refused = try await fixture.call("POST", path, user: "mallory", body: #""x""#)
            #expect(refused.status == 429 && refused.bodyText.contains("at most 2 waiting per sender"), "\(refused.bodyText)")
            // A repeat of a stored key is answered, not refused; another sender has a count of its own.
            let repeated = try await fixture.call("POST", path, user: "mallory", body: #""x""#, headers: [("Idempotency-Key", "k0")])
            #expect(repeated.status == 202 && repeated.header("Idempotent-Replayed") == "true", "\(repeated.bodyText)")
            #expect(try await fixture.call("POST", path, user: "bob", body: #""x""#).status == 202)
        }
    }
}
