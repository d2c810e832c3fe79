import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateServer
import PushgateTesting
import Testing

/// The Notification Hubs REST API on `/{hub}/…` against a running gateway and the sandbox: SAS
/// checks, native, template, direct, test and scheduled sends, registrations in Atom XML,
/// installations with JSON Patch.
@Suite struct HubAPITests {
    struct Client {
        let fixture: any GatewayCaller
        let keys: [String: String]

        init(_ fixture: any GatewayCaller) throws {
            self.fixture = fixture
            var keys: [String: String] = [:]
            for rule in [SharedAccessRule.defaultFullName, SharedAccessRule.defaultListenName] {
                keys[rule] = try String(contentsOfFile: fixture.directory + "/hub-keys/default.\(rule).key", encoding: .utf8)
            }
            self.keys = keys
        }

        var resource: String { "\(fixture.baseURL)/default" }

        func token(
            rule: String = SharedAccessRule.defaultFullName, resource: String? = nil, expiry: Int64? = nil, key: String? = nil
        )
            -> String
        {
            SharedAccessSignature.token(
                resourceURI: resource ?? self.resource, keyName: rule, key: key ?? keys[rule] ?? "",
                expiry: expiry ?? Int64(Date().timeIntervalSince1970) + 600)
        }

        func call(
            _ method: String, _ path: String, body: String = "", contentType: String = "application/json;charset=utf-8",
            authorization: String? = nil, headers: [(name: String, value: String)] = []
        ) async throws -> CurlResponse {
            let separator = path.contains("?") ? "&" : "?"
            return try await fixture.call(
                method, "/default/\(path)\(separator)api-version=2015-01", user: nil, body: body, contentType: contentType,
                headers: [("Authorization", authorization ?? token())] + headers)
        }

        /// The NotificationDetails of an accepted send (its `Location`) once the send is final:
        /// what was recorded, so that what did not arrive can be asserted without waiting for it.
        func finalDetails(of sent: CurlResponse) async throws -> CurlResponse {
            let location = try #require(sent.header("Location"), "\(sent.bodyText)")
            let id = try #require(location.split(separator: "/").last?.split(separator: "?").first.map(String.init))
            return try await eventually {
                try await call("GET", "messages/\(id)")
            } until: { details in
                ["Completed", "Abandoned", "NoTargetFound", "Canceled"].contains { details.bodyText.contains("<State>\($0)</State>") }
            }
        }
    }

    static let atom = "application/atom+xml;type=entry;charset=utf-8"

    static func appleRegistration(token: String, tags: String, template: String? = nil) -> String {
        let type = template == nil ? "AppleRegistrationDescription" : "AppleTemplateRegistrationDescription"
        let body = template.map { "<BodyTemplate><![CDATA[\($0)]]></BodyTemplate>" } ?? ""
        return """
            <?xml version="1.0" encoding="utf-8"?>
            <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">
            <\(type) xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
            <Tags>\(tags)</Tags><DeviceToken>\(token)</DeviceToken>\(body)</\(type)></content></entry>
            """
    }

    func waitForInbox(_ fixture: GatewayFixture, _ device: SandboxDevice, count: Int) async throws -> [ReceivedNotification] {
        try await eventually {
            await fixture.sandbox.state.inbox(deviceID: device.id)
        } until: {
            $0.count >= count
        }
    }

    func waitForInbox(_ fixture: InMemoryGatewayFixture, _ device: MemoryDevice, count: Int) async throws -> [MemoryMessage] {
        try await eventually {
            fixture.inbox(device)
        } until: {
            $0.count >= count
        }
    }

    @Test func signaturesAreCheckedAsNotificationHubsChecksThem() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let send: (String?) async throws -> CurlResponse = { authorization in
                try await fixture.call(
                    "POST", "/default/messages?api-version=2015-01", user: nil, body: #"{"aps":{"alert":"x"}}"#,
                    headers: [("ServiceBusNotification-Format", "apple")] + (authorization.map { [("Authorization", $0)] } ?? []))
            }
            let accepted = try await send(client.token())
            #expect(accepted.status == 201, "\(accepted.bodyText)")
            #expect(accepted.header("Location")?.contains("/default/messages/") == true)
            // A namespace-wide token covers every hub.
            #expect(try await send(client.token(resource: "\(fixture.baseURL)/")).status == 201)

            let refusals: [(String?, String)] = [
                (nil, "authorization required"),
                ("Basic YWxpY2U6YWxpY2U=", "malformed SharedAccessSignature"),
                (client.token(key: "d3Jvbmcga2V5"), "signature (sig) does not match"),
                // Expired by the gateway's clock (a manual one, which lags the wall clock by as
                // long as the test has run: the wall clock's 5 s ago may still be ahead of it).
                (client.token(expiry: Int64(fixture.clock.now.secondsSinceEpoch) - 5), "expired"),
                (client.token(expiry: Int64.max), "listener.sasMaximumLifetimeSeconds"),
                (client.token() + "&x=padding", "'x' is not a field of a token"),
                (client.token(rule: "NoSuchRule", key: "x"), "no shared access rule 'NoSuchRule'"),
                (client.token(resource: "\(fixture.baseURL)/otherhub"), "does not cover this request"),
                (client.token(resource: "\(fixture.baseURL)/defaultx"), "does not cover this request"),
                (client.token(rule: SharedAccessRule.defaultListenName), "this needs Send"),
            ]
            for (authorization, reason) in refusals {
                let refused = try await send(authorization)
                #expect(refused.status == 401, "\(authorization ?? "none"): \(refused.bodyText)")
                #expect(refused.bodyText.contains("<Error><Code>401</Code><Detail>"), "\(refused.bodyText)")
                #expect(refused.bodyText.contains(reason), "\(reason) not in \(refused.bodyText)")
                #expect(!refused.bodyText.contains(client.keys[SharedAccessRule.defaultFullName]!))
            }
            let unknownHub = try await fixture.call(
                "POST", "/nohub/messages?api-version=2015-01", user: nil, body: "{}", headers: [("Authorization", client.token())])
            #expect(unknownHub.status == 404 && unknownHub.bodyText.contains("no hub 'nohub'"), "\(unknownHub.bodyText)")
            let badVersion = try await fixture.call(
                "POST", "/default/messages?api-version=1999-01", user: nil, body: "{}", headers: [("Authorization", client.token())])
            #expect(badVersion.status == 400 && badVersion.bodyText.contains("api-version '1999-01'"), "\(badVersion.bodyText)")
        }
    }

    @Test func nativeTemplateDirectAndTestSendsReachTheRegistrationsTheyShould() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let native = fixture.device(.apns)
            let templated = fixture.device(.apns)
            let direct = fixture.device(.apns)
            for (device, template) in [(native, nil), (templated, #"{"aps":{"alert":"{$(title) + ' for ' + $(name)}"}}"#)] {
                let created = try await client.call(
                    "POST", "registrations", body: Self.appleRegistration(token: device.handle, tags: "sports,eu", template: template),
                    contentType: Self.atom)
                #expect(created.status == 200, "\(created.bodyText)")
            }
            let apple: [(name: String, value: String)] = [("ServiceBusNotification-Format", "apple"), ("apns-push-type", "alert")]
            let nativeSend = try await client.call(
                "POST", "messages", body: #"{"aps":{"alert":"native"}}"#,
                headers: apple + [("ServiceBusNotification-Tags", "sports && eu")])
            #expect(nativeSend.status == 201, "\(nativeSend.bodyText)")
            let templateSend = try await client.call(
                "POST", "messages", body: #"{"title":"Goal","name":"Ann"}"#,
                headers: [("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-Tags", "sports")])
            #expect(templateSend.status == 201, "\(templateSend.bodyText)")
            let directSend = try await client.call(
                "POST", "messages?direct", body: #"{"aps":{"alert":"direct"}}"#,
                headers: apple + [("ServiceBusNotification-DeviceHandle", direct.handle)])
            #expect(directSend.status == 201, "\(directSend.bodyText)")

            // Every send final (recorded), then what each device got: one each, no more.
            let details = try await client.finalDetails(of: nativeSend)
            for send in [templateSend, directSend] { _ = try await client.finalDetails(of: send) }
            let nativeInbox = fixture.inbox(native)
            let templateInbox = fixture.inbox(templated)
            let directInbox = fixture.inbox(direct)
            #expect(nativeInbox.map(\.payload) == [#"{"aps":{"alert":"native"}}"#])
            #expect(templateInbox.map(\.payload) == [#"{"aps":{"alert":"Goal for Ann"}}"#])
            #expect(directInbox.map(\.payload) == [#"{"aps":{"alert":"direct"}}"#])
            #expect(fixture.inbox(native).count == 1)
            #expect(fixture.inbox(templated).count == 1)

            // Telemetry of the native send: NotificationDetails.
            #expect(details.bodyText.contains("<State>Completed</State>"), "\(details.bodyText)")
            #expect(details.status == 200 && details.bodyText.contains("<NotificationDetails"), "\(details.bodyText)")
            #expect(details.bodyText.contains("<Name>Success</Name><Count>1</Count>"), "\(details.bodyText)")
            // The template registration the native send passed over is not counted, as NH counts.
            #expect(!details.bodyText.contains("Skipped"), "\(details.bodyText)")

            // A test send answers the outcome at once.
            let test = try await client.call(
                "POST", "messages?test", body: #"{"title":"T","name":"N"}"#,
                headers: [("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-Tags", "sports")])
            #expect(test.status == 201, "\(test.bodyText)")
            #expect(test.bodyText.contains("<NotificationOutcome") && test.bodyText.contains("<Success>1</Success>"), "\(test.bodyText)")
            // Only the targeted registration counts, as NH counts: the native one a template send passes over does not.
            #expect(test.bodyText.contains("<Failure>0</Failure>") && !test.bodyText.contains("Skipped"), "\(test.bodyText)")
            #expect(test.bodyText.components(separatedBy: "<RegistrationResult>").count == 2)

            // Bad input: named, nothing sent.
            let checks: [([(name: String, value: String)], String, Int, String)] = [
                ([("ServiceBusNotification-Format", "windowsphone")], "{}", 400, "MPNS"),
                ([("ServiceBusNotification-Format", "carrierpigeon")], "{}", 400, "'carrierpigeon' is unknown"),
                ([], "{}", 400, "ServiceBusNotification-Format is required"),
                (apple, "not json", 400, "invalid JSON"),
                ([("ServiceBusNotification-Format", "windows")], "<toast/>", 400, "X-WNS-Type is required"),
                (apple + [("ServiceBusNotification-Tags", "a && (b")], #"{"aps":{}}"#, 400, "ServiceBusNotification-Tags"),
                ([("ServiceBusNotification-Format", "fcmv1")], #"{"message":{"token":"x","data":{}}}"#, 400, "$.message.token"),
                ([("ServiceBusNotification-Format", "template")], #"["x"]"#, 400, "JSON object of properties"),
                (apple, #"{"aps":{"alert":""# + String(repeating: "x", count: 5000) + #""}}"#, 413, "limit"),
            ]
            for (headers, body, status, reason) in checks {
                let refused = try await client.call("POST", "messages", body: body, headers: headers)
                #expect(refused.status == status && refused.bodyText.contains(reason), "\(reason): \(refused.status) \(refused.bodyText)")
            }
        }
    }

    @Test func batchDirectSendsReachEveryHandleWithEitherSDKsBoundary() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let devices = [fixture.device(.apns), fixture.device(.apns)]
            func multipart(_ boundary: String, handles: [String], alert: String) -> String {
                let list = "[" + handles.map { "\"\($0)\"" }.joined(separator: ",") + "]"
                return [
                    "--\(boundary)", "Content-Type: application/json", "Content-Disposition: inline; name=notification", "",
                    #"{"aps":{"alert":"\#(alert)"}}"#, "--\(boundary)", "Content-Type: application/json",
                    "Content-Disposition: inline; name=devices", "", list, "--\(boundary)--", "",
                ].joined(separator: "\r\n")
            }
            // The .NET SDK's boundary, then the JavaScript SDK's (spaces around '=', quotes).
            for (contentType, boundary, alert) in [
                ("multipart/mixed; boundary=nh-batch-multipart-boundary", "nh-batch-multipart-boundary", "dotnet batch"),
                ("multipart/mixed; boundary = \"nh-boundary-1234\"", "nh-boundary-1234", "js batch"),
            ] {
                let sent = try await client.call(
                    "POST", "messages/$batch?direct", body: multipart(boundary, handles: devices.map(\.handle), alert: alert),
                    contentType: contentType, headers: [("ServiceBusNotification-Format", "apple")])
                #expect(sent.status == 201, "\(sent.bodyText)")
            }
            for device in devices {
                let inbox = try await waitForInbox(fixture, device, count: 2)
                #expect(inbox.map(\.payload).joined().contains("dotnet batch") && inbox.map(\.payload).joined().contains("js batch"))
            }
            // 1,001 handles are refused, naming the limit; a body without the devices part too.
            let many = (0...1000).map { String(format: "%064x", $0) }
            let tooMany = try await client.call(
                "POST", "messages/$batch?direct", body: multipart("b", handles: many, alert: "x"),
                contentType: "multipart/mixed; boundary=b",
                headers: [("ServiceBusNotification-Format", "apple")])
            #expect(tooMany.status == 400 && tooMany.bodyText.contains("1000"), "\(tooMany.bodyText)")
            // A non-string entry is named, not dropped (the other handles would be sent to silently short of one).
            let mixed = try await client.call(
                "POST", "messages/$batch?direct",
                body: multipart("b", handles: [devices[0].handle], alert: "x").replacingOccurrences(of: "\"]", with: "\", 42, null]"),
                contentType: "multipart/mixed; boundary=b", headers: [("ServiceBusNotification-Format", "apple")])
            #expect(mixed.status == 400 && mixed.bodyText.contains("devices[1] must be a string"), "\(mixed.bodyText)")
            let noBoundary = try await client.call(
                "POST", "messages/$batch?direct", body: "x", contentType: "multipart/mixed",
                headers: [("ServiceBusNotification-Format", "apple")])
            #expect(noBoundary.status == 415)
        }
    }

    /// A direct send's handle that FCM throttles is retried after Firebase's backoff, as a tag
    /// send's target is: the handle is kept as sent, not looked up as a registration (which it is
    /// not, so the lookup would drop it from the retry).
    @Test func aThrottledDirectSendIsRetriedToItsHandle() async throws {
        let clock = ManualClock()
        try await GatewayFixture.inProcess(clock: clock) { fixture in
            let client = try Client(fixture)
            let device = await fixture.sandbox.createDevice(.fcm)
            let quota = SandboxFault.Action.respond(status: 429, reason: "QUOTA_EXCEEDED", retryAfterSeconds: nil)
            await fixture.sandbox.state.addFault(SandboxFault(service: .fcm, handle: device.handle, action: quota, count: 1))
            let sent = try await client.call(
                "POST", "messages?direct", body: #"{"message":{"data":{"n":"retried"}}}"#,
                headers: [("ServiceBusNotification-Format", "fcmv1"), ("ServiceBusNotification-DeviceHandle", device.handle)])
            #expect(sent.status == 201, "\(sent.bodyText)")
            let location = try #require(sent.header("Location"))
            let id = try #require(location.split(separator: "/").last?.split(separator: "?").first.map(String.init))
            // Throttled: put off to a retry page, the notification parked until the backoff passes.
            let metrics = try await eventually {
                try await fixture.call("GET", "/metrics", user: nil).bodyText
            } until: {
                $0.contains("pushgate_outbox_deferred_targets_total 1")
            }
            #expect(metrics.contains("pushgate_outbox_deferred_targets_total 1"), "\(metrics)")
            #expect(await fixture.sandbox.state.inbox(deviceID: device.id).isEmpty)
            let pending = try await client.call("GET", "messages/\(id)")
            #expect(!pending.bodyText.contains("<State>Completed</State>"), "\(pending.bodyText)")

            clock.advance(seconds: 61)
            let details = try await client.finalDetails(of: sent)
            let inbox = await fixture.sandbox.state.inbox(deviceID: device.id)
            #expect(inbox.count == 1 && inbox.first?.payload.contains("retried") == true, "\(inbox)")
            #expect(details.bodyText.contains("<State>Completed</State>"), "\(details.bodyText)")
            #expect(details.bodyText.contains("<Name>Success</Name><Count>1</Count>"), "\(details.bodyText)")
        }
    }

    /// NH's FCM v1 templates wrap the message as the send API does: {"message": {…}}; Pushgate's
    /// Huawei extension follows the same shape. A registration is found by its handle element in
    /// `$filter` (every platform's, generated from the table).
    @Test(arguments: [
        (
            Platform.fcm, #"{"android":{"data":{"message":"$(messageParam)"}}}"#, #"{"data":{"m":"$(m)"}}"#,
            #"{"data":{"m":"{'Hi ' + $(m)}"}}"#
        ),
        (Platform.hms, #"{"data":"$(messageParam)"}"#, #"{"data":"$(m)"}"#, #"{"data":"{'Hi ' + $(m)}"}"#),
    ])
    func aWrappedTemplateInNotificationHubsShapeRenders(platform: Platform, message: String, plain: String, expression: String) async throws
    {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let device = fixture.device(platform)
            let names = platform.notificationHubs
            let entry = """
                <?xml version="1.0" encoding="utf-8"?>
                <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">
                <\(names.registrationDescription)TemplateRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                <Tags>tpl</Tags><\(names.handleElement)>\(device.handle)</\(names.handleElement)>
                <BodyTemplate><![CDATA[{"message":\(message)}]]></BodyTemplate>
                </\(names.registrationDescription)TemplateRegistrationDescription></content></entry>
                """
            let created = try await client.call("POST", "registrations", body: entry, contentType: Self.atom)
            #expect(created.status == 200, "\(created.bodyText)")
            // Read back in the shape it was given, as NH keeps it.
            let wrapped = #"<BodyTemplate><![CDATA[{"message":"# + message + "}]]></BodyTemplate>"
            #expect(created.bodyText.contains(wrapped), "\(created.bodyText)")
            let found = try await client.call("GET", "registrations?$filter=\(names.handleElement)%20eq%20'\(device.handle)'")
            #expect(found.status == 200 && found.bodyText.contains(device.handle), "\(found.bodyText)")
            let sent = try await client.call(
                "POST", "messages", body: #"{"messageParam":"wrapped"}"#,
                headers: [("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-Tags", "tpl")])
            #expect(sent.status == 201)
            let inbox = try await waitForInbox(fixture, device, count: 1)
            #expect(inbox.first?.payload.contains("wrapped") == true, "\(inbox)")

            // An installation's template too, and a template with an expression (not JSON).
            func quoted(_ text: String) -> String { String(decoding: JSONValue(.string(text)).serialized(), as: UTF8.self) }
            let installation = """
                {"platform":"\(names.installation)","pushChannel":"\(device.handle)","templates":{
                "plain":{"body":\(quoted(#"{"message":"# + plain + "}"))},
                "expr":{"body":\(quoted(#"{"message":"# + expression + "}"))}}}
                """
            let put = try await client.call("PUT", "installations/wrapped-1", body: installation)
            #expect(put.status == 200, "\(put.bodyText)")
            let read = try await client.call("GET", "installations/wrapped-1")
            let templates = try JSONSerialization.jsonObject(with: Data(read.bodyText.utf8)) as? [String: Any]
            let bodies = (templates?["templates"] as? [String: [String: Any]])?.mapValues { $0["body"] as? String }
            #expect(bodies?["plain"] == #"{"message":"# + plain + "}", "\(read.bodyText)")
            #expect(bodies?["expr"] == #"{"message":"# + expression + "}", "\(read.bodyText)")
        }
    }

    /// What a hostile client tried against a running build (a Listen key taking over an
    /// installation's tag or a user's registration, forged continuation tokens, loose JSON
    /// Patch, ambiguous Atom entries, wrong content types, unknown routes).
    @Test func hostileRequestsAreRefusedAndWriteNothing() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let listen = client.token(rule: SharedAccessRule.defaultListenName)
            let attacker = fixture.device(.apns)
            let victim = fixture.device(.apns)
            let json = "application/json"
            #expect(
                try await client.call(
                    "PUT", "installations/victim1", body: #"{"platform":"apns","pushChannel":"\#(victim.handle)"}"#, contentType: json
                ).status == 200)
            // The installation's own tag cannot be claimed, by any key, in any form.
            for authorization in [listen, client.token()] {
                let registration = try await client.call(
                    "POST", "registrations", body: Self.appleRegistration(token: attacker.handle, tags: "$InstallationId:{victim1}"),
                    contentType: Self.atom, authorization: authorization)
                #expect(registration.status == 400 && registration.bodyText.contains("reserved"), "\(registration.bodyText)")
                let installation = try await client.call(
                    "PUT", "installations/thief",
                    body: #"{"platform":"apns","pushChannel":"\#(attacker.handle)","tags":["$UserId:{alice}"]}"#, contentType: json,
                    authorization: authorization)
                #expect(installation.status == 400 && installation.bodyText.contains("reserved"), "\(installation.bodyText)")
            }
            let found = try await client.call("GET", "tags/$InstallationId:%7Bvictim1%7D/registrations")
            #expect(found.bodyText.components(separatedBy: "<RegistrationId>").count == 2, "\(found.bodyText)")

            // A user's registration (made through /api/register) is out of a Listen key's reach.
            let usersDevice = fixture.device(.apns)
            let usersID = try await fixture.register(usersDevice, user: "alice")
            let deleted = try await client.call("DELETE", "registrations/\(usersID)", authorization: listen)
            #expect(deleted.status == 403, "\(deleted.bodyText)")
            let replaced = try await client.call(
                "PUT", "registrations/\(usersID)", body: Self.appleRegistration(token: attacker.handle, tags: "x"), contentType: Self.atom,
                authorization: listen)
            #expect(replaced.status == 403)
            #expect(try await fixture.store.registration(id: RegistrationID(usersID), app: .default)?.handle.value == usersDevice.handle)

            // Only a notification still scheduled can be cancelled through schedulednotifications.
            let immediate = try await client.call(
                "POST", "messages", body: #"{"aps":{"alert":"now"}}"#,
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "nobody-has-this")])
            let immediateID = try #require(immediate.header("Location")?.split(separator: "?").first?.split(separator: "/").last)
            #expect(try await client.call("DELETE", "schedulednotifications/\(immediateID)").status == 404)
            // Links carry the listener's own scheme (plain HTTP here).
            #expect(immediate.header("Location")?.hasPrefix("\(fixture.baseURL)/default/messages/") == true)

            // Continuation tokens are the hub's own.
            for token in ["garbage", "AAAA", "-1", RegistrationID.random().rawValue] {
                let listed = try await client.call("GET", "registrations?$top=1", headers: [("X-MS-ContinuationToken", token)])
                #expect(listed.status == 400, "\(token): \(listed.bodyText)")
            }
            let first = try await client.call("GET", "registrations?$top=1")
            let next = try #require(first.header("X-MS-ContinuationToken"))
            #expect(try await client.call("GET", "registrations?$top=1&continuationtoken=\(next)").status == 200)

            // JSON Patch as RFC 6902 has it: values where required, targets that exist.
            for (patch, reason) in [
                (#"[{"op":"replace","path":"/tags/zzz","value":"b"}]"#, "no tag 'zzz'"),
                (#"[{"op":"add","path":"/tags/x","value":"x"}]"#, "add a tag with"),
                (#"[{"op":"add","path":"/tags"}]"#, "value is required"),
                (#"[{"op":"add","path":"/tags","value":null}]"#, "value is required"),
                (#"[{"op":"replace","path":"/templates/none","value":{"body":"{}"}}]"#, "no template 'none'"),
            ] {
                let refused = try await client.call(
                    "PATCH", "installations/victim1", body: patch, contentType: "application/json-patch+json")
                #expect(refused.status == 400 && refused.bodyText.contains(reason), "\(patch): \(refused.bodyText)")
            }
            let stringTemplate = try await client.call(
                "PATCH", "installations/victim1",
                body: #"[{"op":"add","path":"/templates/t1","value":"{\"body\":\"{\\\"aps\\\":{\\\"alert\\\":\\\"$(m)\\\"}}\"}"}]"#,
                contentType: "application/json-patch+json")
            #expect(stringTemplate.status == 200, "\(stringTemplate.bodyText)")

            // Ambiguous or mistyped bodies, and what is not a resource here.
            let twice = Self.appleRegistration(token: attacker.handle, tags: "a").replacingOccurrences(
                of: "</content></entry>", with: "</content><content type=\"application/xml\"/></entry>")
            #expect(try await client.call("POST", "registrations", body: twice, contentType: Self.atom).status == 400)
            let markup = Self.appleRegistration(token: attacker.handle, tags: "ok<b>username:alice</b>")
            #expect(try await client.call("POST", "registrations", body: markup, contentType: Self.atom).status == 400)
            let plain = try await client.call(
                "POST", "registrations", body: Self.appleRegistration(token: attacker.handle, tags: "a"), contentType: "text/plain")
            #expect(plain.status == 415)
            let wrongMethod = try await client.call("PATCH", "registrations", body: "x")
            #expect(wrongMethod.status == 405 && wrongMethod.bodyText.contains("<Error>"), "\(wrongMethod.status) \(wrongMethod.bodyText)")
            let nothing = try await client.call("GET", "nothing-here")
            #expect(nothing.status == 404 && nothing.bodyText.contains("<Error>"))
            #expect(try await client.call("PUT", "registrations/not%20an%20id", body: "x", contentType: Self.atom).status == 400)

            // A handle listed 600 times in a batch reaches its device once.
            let boundary = "b"
            let list = "[" + Array(repeating: "\"\(attacker.handle)\"", count: 600).joined(separator: ",") + "]"
            let body = [
                "--b", "Content-Disposition: inline; name=notification", "", #"{"aps":{"alert":"once"}}"#, "--b",
                "Content-Disposition: inline; name=devices", "", list, "--b--", "",
            ].joined(separator: "\r\n")
            let batch = try await client.call(
                "POST", "messages/$batch?direct", body: body, contentType: "multipart/mixed; boundary=\(boundary)",
                headers: [("ServiceBusNotification-Format", "apple")])
            #expect(batch.status == 201, "\(batch.bodyText)")
            let batchDetails = try await client.finalDetails(of: batch)
            #expect(batchDetails.bodyText.contains("<Name>Success</Name><Count>1</Count>"), "\(batchDetails.bodyText)")
            #expect(fixture.inbox(attacker).count == 1)
            #expect(fixture.inbox(victim).isEmpty)
        }
    }

    @Test func registrationsRoundTripAsAtomEntriesWithETagsFiltersAndOwnershipRules() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let device = fixture.device(.apns)
            let reserved = try await client.call(
                "POST", "registrationIDs", authorization: client.token(rule: SharedAccessRule.defaultListenName))
            #expect(reserved.status == 201, "\(reserved.bodyText)")
            let location = try #require(reserved.header("Location"))
            let id = try #require(location.split(separator: "/").last?.split(separator: "?").first.map(String.init))
            let listen = client.token(rule: SharedAccessRule.defaultListenName)
            let put = try await client.call(
                "PUT", "registrations/\(id)", body: Self.appleRegistration(token: device.handle, tags: "news, sports"),
                contentType: Self.atom,
                authorization: listen)
            #expect(put.status == 200, "\(put.bodyText)")
            let etag = try #require(put.header("ETag")).replacingOccurrences(of: "\"", with: "").replacingOccurrences(of: "W/", with: "")
            #expect(UInt64(etag) != nil, "NH ETags are integers: \(etag)")
            for element in [
                "<entry xmlns=\"http://www.w3.org/2005/Atom\" xmlns:a=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\" a:etag=\"W/&quot;\(etag)&quot;\">",
                "<AppleRegistrationDescription", "<RegistrationId>\(id)</RegistrationId>",
                "<Tags>news,sports</Tags>", "<DeviceToken>\(device.handle)</DeviceToken>", "<ETag>\(etag)</ETag>",
                "<ExpirationTime>9999-12-31T23:59:59.999Z</ExpirationTime>",
            ] {
                #expect(put.bodyText.contains(element), "\(element) missing in \(put.bodyText)")
            }
            // Knowing an id is not enough to read a device: a Listen key reads the handle masked.
            let listenRead = try await client.call("GET", "registrations/\(id)", authorization: listen)
            #expect(listenRead.status == 200 && listenRead.bodyText.contains("<Tags>news,sports</Tags>"), "\(listenRead.bodyText)")
            #expect(!listenRead.bodyText.contains(device.handle), "\(listenRead.bodyText)")
            let got = try await client.call("GET", "registrations/\(id)")
            #expect(got.status == 200 && got.bodyText.contains("<DeviceToken>\(device.handle)</DeviceToken>"))
            // Query names are percent-decoded like their values: %24filter is $filter, and a filter
            // that does not parse is refused.
            let encodedFilter = try await client.call("GET", "registrations?%24filter=Tags%20eq%20%27no-such-tag%27&%24top=5")
            #expect(encodedFilter.status == 200 && !encodedFilter.bodyText.contains("<entry"), "\(encodedFilter.bodyText)")
            #expect(try await client.call("GET", "registrations?%24filter=garbage(((").status == 400)

            // If-Match: a stale ETag is refused, and nothing changes.
            let stale = try await client.call(
                "PUT", "registrations/\(id)", body: Self.appleRegistration(token: device.handle, tags: "changed"), contentType: Self.atom,
                headers: [("If-Match", "\"0000\"")])
            #expect(stale.status == 412, "\(stale.bodyText)")
            #expect(try await client.call("GET", "registrations/\(id)").bodyText.contains("<Tags>news,sports</Tags>"))

            // Listing needs Manage; filters by tag and by token; continuation tokens page.
            #expect(try await client.call("GET", "registrations", authorization: listen).status == 401)
            let byTag = try await client.call(
                "GET", "registrations?$filter=" + "Tags eq 'news'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            #expect(byTag.status == 200 && byTag.bodyText.contains("<feed") && byTag.bodyText.contains(id), "\(byTag.bodyText)")
            let byToken = try await client.call(
                "GET",
                "registrations?$filter=" + "DeviceToken eq '\(device.handle)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            )
            #expect(byToken.bodyText.contains(id), "\(byToken.bodyText)")
            let byOther = try await client.call("GET", "tags/nothing/registrations")
            #expect(byOther.status == 200 && !byOther.bodyText.contains("<entry"))
            for index in 0..<3 {
                let other = fixture.device(.apns)
                _ = try await client.call(
                    "POST", "registrations", body: Self.appleRegistration(token: other.handle, tags: "page\(index)"), contentType: Self.atom
                )
            }
            var seen: Set<String> = []
            var continuation: String?
            repeat {
                let page = try await client.call(
                    "GET", "registrations?$top=2", headers: continuation.map { [("X-MS-ContinuationToken", $0)] } ?? [])
                #expect(page.status == 200)
                for part in page.bodyText.components(separatedBy: "<RegistrationId>").dropFirst() {
                    seen.insert(String(part.prefix { $0 != "<" }))
                }
                continuation = page.header("X-MS-ContinuationToken")
            } while continuation != nil && seen.count < 10
            #expect(seen.count == 4, "\(seen)")

            // Bad input is named and writes nothing.
            let fresh = RegistrationID.random().rawValue
            let bad: [(String, Int, String)] = [
                ("<entry", 400, "invalid XML"),
                (Self.appleRegistration(token: "zz", tags: "a"), 400, "DeviceToken"),
                (Self.appleRegistration(token: device.handle, tags: "bad tag!"), 400, "Tags"),
                (Self.appleRegistration(token: device.handle, tags: "a", template: #"{"aps":"#), 400, "BodyTemplate"),
                (Self.appleRegistration(token: device.handle, tags: "a").replacingOccurrences(of: "Apple", with: "Mpns"), 400, "MPNS"),
                (
                    Self.appleRegistration(token: device.handle, tags: "a").replacingOccurrences(of: "Apple", with: "Pigeon"), 400,
                    "not supported"
                ),
                (
                    Self.appleRegistration(token: device.handle, tags: "a").replacingOccurrences(
                        of: "<Tags>", with: #"<PushVariables>{"x":"1"}</PushVariables><Tags>"#), 400,
                    "&lt;PushVariables&gt; are not supported"
                ),
                (
                    Self.appleRegistration(token: device.handle, tags: "a").replacingOccurrences(
                        of: "<Tags>", with: "<Colour>red</Colour><Tags>"),
                    400, "unknown element &lt;Colour&gt;"
                ),
            ]
            for (body, status, reason) in bad {
                let refused = try await client.call("PUT", "registrations/\(fresh)", body: body, contentType: Self.atom)
                #expect(refused.status == status && refused.bodyText.contains(reason), "\(reason): \(refused.bodyText)")
            }
            // A Listen key (a device's) may not claim a user's tag.
            let hijack = try await client.call(
                "PUT", "registrations/\(fresh)", body: Self.appleRegistration(token: device.handle, tags: "username:alice"),
                contentType: Self.atom, authorization: listen)
            #expect(hijack.status == 403 && hijack.bodyText.contains("username:"), "\(hijack.bodyText)")
            #expect(try await client.call("GET", "registrations/\(fresh)").status == 404)

            #expect(try await client.call("DELETE", "registrations/\(id)", authorization: listen).status == 200)
            #expect(try await client.call("GET", "registrations/\(id)").status == 404)
        }
    }

    @Test func installationsWithTemplatesArePatchedAndReachedThroughTheirInstallationTag() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let device = fixture.device(.apns)
            let listen = client.token(rule: SharedAccessRule.defaultListenName)
            let installation = """
                {"installationId":"phone-1","platform":"apns","pushChannel":"\(device.handle)","tags":["news"],"userId":"ann",
                 "templates":{"greeting":{"body":"{\\"aps\\":{\\"alert\\":\\"{'Hi ' + $(name)}\\"}}","tags":["greet"]}}}
                """
            // A Listen key (a device's) may not bind the installation to a user; the backend's key may.
            let claimed = try await client.call("PUT", "installations/phone-1", body: installation, authorization: listen)
            #expect(claimed.status == 403 && claimed.bodyText.contains("userId"), "\(claimed.bodyText)")
            #expect(try await client.call("GET", "installations/phone-1").status == 404)
            let put = try await client.call("PUT", "installations/phone-1", body: installation)
            #expect(put.status == 200, "\(put.bodyText)")
            // …and the device may then write it again keeping that userId.
            let again = try await client.call("PUT", "installations/phone-1", body: installation, authorization: listen)
            #expect(again.status == 200, "\(again.bodyText)")
            // A Listen key reads it with its channel masked; the backend reads it whole.
            let listenRead = try await client.call("GET", "installations/phone-1", authorization: listen)
            #expect(listenRead.status == 200 && !listenRead.bodyText.contains(device.handle), "\(listenRead.bodyText)")
            #expect(listenRead.bodyText.contains(#""userId":"ann""#), "\(listenRead.bodyText)")
            let got = try await client.call("GET", "installations/phone-1")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(got.body)) as? [String: Any], "\(got.bodyText)")
            #expect(object["installationId"] as? String == "phone-1" && object["userId"] as? String == "ann")
            #expect(object["tags"] as? [String] == ["news"] && object["pushChannel"] as? String == device.handle)
            let templates = try #require(object["templates"] as? [String: [String: Any]])
            #expect(templates["greeting"]?["tags"] as? [String] == ["greet"], "\(object)")

            let patch = #"[{"op":"add","path":"/tags","value":"sports"},{"op":"replace","path":"/userId","value":"bob"}]"#
            let listenPatch = try await client.call("PATCH", "installations/phone-1", body: patch, authorization: listen)
            #expect(listenPatch.status == 403 && listenPatch.bodyText.contains("userId"), "\(listenPatch.bodyText)")
            let tagPatch = #"[{"op":"add","path":"/tags","value":"sports"}]"#
            #expect(try await client.call("PATCH", "installations/phone-1", body: tagPatch, authorization: listen).status == 200)
            // A Listen key may not redirect an installation bound to a user to another channel
            // (it would receive that user's sends), by PATCH or by PUT; the backend's key may.
            let thief = fixture.device(.apns)
            let redirect = #"[{"op":"replace","path":"/pushChannel","value":"\#(thief.handle)"}]"#
            let redirected = try await client.call("PATCH", "installations/phone-1", body: redirect, authorization: listen)
            #expect(redirected.status == 403 && redirected.bodyText.contains("pushChannel"), "\(redirected.bodyText)")
            let replaced = try await client.call(
                "PUT", "installations/phone-1", body: installation.replacingOccurrences(of: device.handle, with: thief.handle),
                authorization: listen)
            #expect(replaced.status == 403 && replaced.bodyText.contains("bound to a user"), "\(replaced.bodyText)")
            let unchanged = try await client.call("GET", "installations/phone-1")
            #expect(unchanged.bodyText.contains(device.handle) && !unchanged.bodyText.contains(thief.handle), "\(unchanged.bodyText)")
            let moved = try await client.call("PATCH", "installations/phone-1", body: redirect)
            #expect(moved.status == 200, "\(moved.bodyText)")
            let back = #"[{"op":"replace","path":"/pushChannel","value":"\#(device.handle)"}]"#
            #expect(try await client.call("PATCH", "installations/phone-1", body: back).status == 200)
            #expect(try await client.call("PATCH", "installations/phone-1", body: patch).status == 200)
            let patched = try await client.call("GET", "installations/phone-1")
            #expect(patched.bodyText.contains(#""sports""#) && patched.bodyText.contains(#""userId":"bob""#), "\(patched.bodyText)")
            let badPatch = try await client.call(
                "PATCH", "installations/phone-1", body: #"[{"op":"move","path":"/tags"}]"#, authorization: listen)
            #expect(badPatch.status == 400 && badPatch.bodyText.contains("'move' is not supported"), "\(badPatch.bodyText)")

            let send = try await client.call(
                "POST", "messages", body: #"{"name":"Ann"}"#,
                headers: [("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-Tags", "$InstallationId:{phone-1}")])
            #expect(send.status == 201, "\(send.bodyText)")
            let byUser = try await client.call(
                "POST", "messages", body: #"{"aps":{"alert":"to bob"}}"#,
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "$UserId:{bob}")])
            #expect(byUser.status == 201, "\(byUser.bodyText)")
            let inbox = try await waitForInbox(fixture, device, count: 2)
            #expect(
                Set(inbox.map(\.payload)) == [#"{"aps":{"alert":"Hi Ann"}}"#, #"{"aps":{"alert":"to bob"}}"#], "\(inbox.map(\.payload))")

            // Bound to a user, it is the backend's to delete.
            #expect(try await client.call("DELETE", "installations/phone-1", authorization: listen).status == 403)
            #expect(try await client.call("DELETE", "installations/phone-1").status == 204)
            #expect(try await client.call("GET", "installations/phone-1").status == 404)
        }
    }

    /// What the hostile probe did with a Listen key to move a bound installation to its own device:
    /// each door refused, and a backend send to the installation still reaches the user's device.
    @Test func aListenKeyCannotTakeOverAnInstallationBoundToAUser() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let device = fixture.device(.apns)
            let thief = fixture.device(.apns)
            let listen = client.token(rule: SharedAccessRule.defaultListenName)
            let installation = """
                {"installationId":"phone-2","platform":"apns","pushChannel":"\(device.handle)","tags":["news"],"userId":"ann",
                 "templates":{"greeting":{"body":"{\\"aps\\":{\\"alert\\":\\"{'Hi ' + $(name)}\\"}}"}}}
                """
            #expect(try await client.call("PUT", "installations/phone-2", body: installation).status == 200)
            let stolen = installation.replacingOccurrences(of: device.handle, with: thief.handle)
            let unbound = stolen.replacingOccurrences(of: #","userId":"ann""#, with: "")
            let native = HubInstallations.registrationID(of: "phone-2").rawValue
            let template = HubInstallations.registrationID(of: "phone-2", template: "greeting").rawValue
            let patch = "application/json-patch+json"
            let refusals: [(method: String, path: String, body: String, contentType: String, reason: String)] = [
                ("DELETE", "installations/phone-2", "", "application/json", "may not delete"),
                ("PUT", "installations/phone-2", unbound, "application/json", "userId"),
                (
                    "PUT", "installations/phone-2", installation.replacingOccurrences(of: #""ann""#, with: #""eve""#), "application/json",
                    "userId"
                ),
                ("PUT", "installations/phone-2", stolen, "application/json", "pushChannel"),
                ("PATCH", "installations/phone-2", #"[{"op":"remove","path":"/userId"}]"#, patch, "userId"),
                (
                    "PATCH", "installations/phone-2",
                    #"[{"op":"remove","path":"/userId"},{"op":"replace","path":"/pushChannel","value":"\#(thief.handle)"}]"#, patch,
                    "userId"
                ),
                ("DELETE", "registrations/\(native)", "", "application/json", "may not delete"),
                ("DELETE", "registrations/\(template)", "", "application/json", "may not delete"),
                ("PUT", "registrations/\(native)", Self.appleRegistration(token: thief.handle, tags: "news"), Self.atom, "may not change"),
            ]
            for refusal in refusals {
                let answer = try await client.call(
                    refusal.method, refusal.path, body: refusal.body, contentType: refusal.contentType, authorization: listen)
                #expect(
                    answer.status == 403 && answer.bodyText.contains(refusal.reason),
                    "\(refusal.method) \(refusal.path): \(answer.status) \(answer.bodyText)")
            }
            // Nothing moved: the installation still names the user and the user's device.
            let kept = try await client.call("GET", "installations/phone-2")
            #expect(kept.bodyText.contains(device.handle) && kept.bodyText.contains(#""userId":"ann""#), "\(kept.bodyText)")
            // A Listen key may still write it again unchanged in those respects (new tags).
            let retagged = installation.replacingOccurrences(of: #"["news"]"#, with: #"["news","sports"]"#)
            #expect(try await client.call("PUT", "installations/phone-2", body: retagged, authorization: listen).status == 200)
            let send = try await client.call(
                "POST", "messages", body: #"{"aps":{"alert":"for ann"}}"#,
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "$InstallationId:{phone-2}")])
            #expect(send.status == 201, "\(send.bodyText)")
            let inbox = try await waitForInbox(fixture, device, count: 1)
            #expect(inbox.map(\.payload) == [#"{"aps":{"alert":"for ann"}}"#])
            #expect(fixture.inbox(thief).isEmpty)
            // The backend may unbind it, and then a Listen key may delete it.
            #expect(try await client.call("PUT", "installations/phone-2", body: unbound).status == 200)
            #expect(try await client.call("DELETE", "installations/phone-2", authorization: listen).status == 204)
        }
    }

    @Test func aScheduledSendIsCancelledAndItsTelemetrySaysSo() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try Client(fixture)
            let device = fixture.device(.apns)
            _ = try await client.call(
                "POST", "registrations", body: Self.appleRegistration(token: device.handle, tags: "t"), contentType: Self.atom)
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
            let later = formatter.string(from: Date().addingTimeInterval(3600))
            let scheduled = try await client.call(
                "POST", "schedulednotifications", body: #"{"aps":{"alert":"later"}}"#,
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-ScheduleTime", later)])
            #expect(scheduled.status == 201, "\(scheduled.bodyText)")
            let location = try #require(scheduled.header("Location"))
            #expect(location.contains("/default/schedulednotifications/"))
            let id = try #require(location.split(separator: "/").last?.split(separator: "?").first.map(String.init))
            let pending = try await client.call("GET", "messages/\(id)")
            #expect(pending.bodyText.contains("<State>Scheduled</State>"), "\(pending.bodyText)")
            #expect(try await client.call("DELETE", "schedulednotifications/\(id)").status == 200)
            // The cancel waits up to 10 s for the end; a busy machine may take longer.
            let cancelled = try await eventually(timeout: .seconds(90), every: .milliseconds(200)) {
                try await client.call("GET", "messages/\(id)")
            } until: {
                $0.bodyText.contains("<State>Canceled</State>")
            }
            #expect(cancelled.bodyText.contains("<State>Canceled</State>"), "\(cancelled.bodyText)")
            // The time as each SDK writes it.
            let soon = Date().addingTimeInterval(3600)
            func format(_ pattern: String) -> String {
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "UTC")
                formatter.dateFormat = pattern
                return formatter.string(from: soon)
            }
            for written in [
                format("yyyy-MM-dd'T'HH:mm:ss.SSSSSSS'Z'"), format("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"), format("yyyy-MM-dd'T'HH:mm:ss"),
                format("yyyy-MM-dd'T'HH:mm:ss'+00:00'"), format("yyyy-MM-dd") + "'T'" + format("HH:mm:ss"),
            ] {
                let accepted = try await client.call(
                    "POST", "schedulednotifications", body: #"{"aps":{"alert":"x"}}"#,
                    headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-ScheduleTime", written)])
                #expect(accepted.status == 201, "\(written): \(accepted.bodyText)")
            }
            let past = try await client.call(
                "POST", "schedulednotifications", body: #"{"aps":{"alert":"x"}}"#,
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-ScheduleTime", "2001-01-01T00:00:00")])
            #expect(past.status == 400 && past.bodyText.contains("ServiceBusNotification-ScheduleTime"), "\(past.bodyText)")
        }
    }
}

/// The signature check with its cache: a header verified once is still checked for expiry, rule
/// and resource on every request.
@Suite struct SignatureCacheTests {
    /// With `listener.hostnames`, a request must come in by one of the gateway's names, so a
    /// token is good only for the hosts the gateway answers to (not for whatever `Host` a client sends).
    @Test func withHostnamesConfiguredOnlyThoseHostsAreAnswered() async throws {
        try await GatewayFixture.with(adjust: { $0.listener.hostnames = ["push.example.com"] }) { fixture in
            let client = try HubAPITests.Client(fixture)
            let apple = [("ServiceBusNotification-Format", "apple")]
            let direct = try await fixture.call(
                "POST", "/default/messages?api-version=2015-01", user: nil, body: #"{"aps":{"alert":"x"}}"#,
                headers: apple + [("Authorization", client.token())])
            #expect(direct.status == 401 && direct.bodyText.contains("is not one of the gateway's names"), "\(direct.bodyText)")
            let named = try await fixture.call(
                "POST", "/default/messages?api-version=2015-01", user: nil, body: #"{"aps":{"alert":"x"}}"#,
                headers: apple + [
                    ("Host", "push.example.com"), ("Authorization", client.token(resource: "https://push.example.com/default")),
                ])
            #expect(named.status == 201, "\(named.bodyText)")
            // A token signed for the gateway's address is no good by its name either.
            let other = try await fixture.call(
                "POST", "/default/messages?api-version=2015-01", user: nil, body: #"{"aps":{"alert":"x"}}"#,
                headers: apple + [("Host", "push.example.com"), ("Authorization", client.token())])
            #expect(other.status == 401 && other.bodyText.contains("does not cover this request"), "\(other.bodyText)")
        }
    }

    @Test func aCachedTokenStillExpiresAndCoversOnlyItsResource() {
        let key = "a2V5LWZvci10aGUtY2FjaGUtdGVzdA=="
        let rules: [String: (rights: Set<AccessRight>, key: String)] = ["Send": ([.send], key)]
        let cache = SignatureCache()
        let token = SharedAccessSignature.token(resourceURI: "https://gw:8443/hub", keyName: "Send", key: key, expiry: 1000)
        func verify(
            _ header: String, path: String = "/hub/messages", now: Int64 = 500,
            rules override: [String: (rights: Set<AccessRight>, key: String)]? = nil
        ) -> Result<HubGrant, SASError> {
            HubDirectory.verify(header, rules: override ?? rules, hub: .default, host: "gw:8443", path: path, now: now, cache: cache)
        }
        #expect((try? verify(token).get())?.rule == "Send")
        // Cached now; the same header is refused once expired, or for another hub's path.
        #expect(verify(token, now: 1000) == .failure(.expired(1000)))
        #expect(verify(token, path: "/other/messages") == .failure(.wrongResource("gw/hub")))
        #expect(verify(token, path: "/hubx/messages") == .failure(.wrongResource("gw/hub")))
        // A rule removed from the configuration no longer admits its cached tokens.
        #expect(verify(token, rules: ["Other": ([.send], key)]) == .failure(.unknownRule("Send")))
        // A forged signature is never cached: refused every time.
        let forged = SharedAccessSignature.token(resourceURI: "https://gw:8443/hub", keyName: "Send", key: "wrong", expiry: 1000)
        #expect(verify(forged) == .failure(.badSignature))
        #expect(verify(forged) == .failure(.badSignature))
        // Resources as each SDK signs them, compared without scheme, port, query or trailing '/'.
        func covers(_ resource: String, _ host: String, _ path: String) -> Bool {
            let encoded = SharedAccessSignature.formEncode(resource)
            guard case .success(let token) = SharedAccessSignature.parse("SharedAccessSignature sr=\(encoded)&sig=x&se=1&skn=r") else {
                return false
            }
            return token.covers(host: host, path: path)
        }
        #expect(covers("http://GW/hub/messages/", "gw:8443", "/hub/messages"))
        #expect(covers("https://gw:8443/hub?api-version=2015-01", "gw:8443", "/hub/messages/"))
        #expect(covers("sb://gw/", "gw:8443", "/anyhub/installations/x"))
        #expect(covers("https://[::1]:8443/hub", "[::1]:8443", "/hub/x"))
        #expect(!covers("https://gw/hub", "gw", "/hubx/messages"))
        #expect(!covers("https://gw/hub/messages", "gw", "/hub/registrations"))
        #expect(!covers("https://other/hub", "gw", "/hub/messages"))
        // Percent-decoding: either case of hex, '+' kept (base64), a broken escape refused.
        #expect(SharedAccessSignature.percentDecoded("https%3a%2F%2Fgw%2fhub") == "https://gw/hub")
        #expect(SharedAccessSignature.percentDecoded("ab+c%2B") == "ab+c+")
        #expect(SharedAccessSignature.percentDecoded("%zz") == nil && SharedAccessSignature.percentDecoded("%4") == nil)
        #expect(SharedAccessSignature.percentDecoded("%C3%A9") == "é" && SharedAccessSignature.percentDecoded("%C3") == nil)
        guard case .failure(.malformed) = SharedAccessSignature.parse("SharedAccessSignature sr=a&sig=%zz&se=1&skn=x") else {
            Issue.record("a broken escape in sig must be refused as malformed")
            return
        }
        // A token that (nearly) never expires is refused: se at most maximumLifetime ahead.
        let forever = SharedAccessSignature.token(resourceURI: "https://gw:8443/hub", keyName: "Send", key: key, expiry: Int64.max)
        let tooLong = HubDirectory.verify(
            forever, rules: rules, hub: .default, host: "gw:8443", path: "/hub/x", now: 500, maximumLifetime: 3600, cache: cache)
        #expect(tooLong == .failure(.tooLong(expiry: Int64.max, maximum: 3600)))
        let withinAnHour = SharedAccessSignature.token(resourceURI: "https://gw:8443/hub", keyName: "Send", key: key, expiry: 4100)
        #expect(
            (try? HubDirectory.verify(
                withinAnHour, rules: rules, hub: .default, host: "gw:8443", path: "/hub/x", now: 500, maximumLifetime: 3600, cache: cache
            ).get())?.rule == "Send")
        // Fields other than sr, sig, se and skn are refused (they would pad the cache with copies of one token).
        guard case .failure(.malformed(let reason)) = SharedAccessSignature.parse(token + "&pad=1") else {
            Issue.record("an unknown field must be refused as malformed")
            return
        }
        #expect(reason.contains("'pad' is not a field of a token"))
    }
}

/// Several hubs in one instance: each its own rules, registrations and sends.
@Suite struct MultiHubTests {
    static let euKey = "ZXUtaHViLWtleS1mb3ItdGVzdHMtb25seS0zMmJ5dGVzIQ=="

    @Test func eachHubHasItsOwnRulesRegistrationsAndSends() async throws {
        try await InMemoryGatewayFixture.with(
            rewrite: { config in
                var apps = config["apps"] as? [String: Any] ?? [:]
                var eu = apps["default"] as? [String: Any] ?? [:]
                eu["accessRules"] = ["EuFull": ["key": ["value": Self.euKey], "rights": ["Listen", "Manage", "Send"]]]
                apps["eu"] = eu
                config["apps"] = apps
            }, adjust: { $0.auth.admins = ["root"] }
        ) { fixture in
            let base = "\(fixture.baseURL)"
            let expiry = Int64(Date().timeIntervalSince1970) + 600
            let eu = SharedAccessSignature.token(resourceURI: base + "/eu", keyName: "EuFull", key: Self.euKey, expiry: expiry)
            let defaultKey = try String(
                contentsOfFile: fixture.directory + "/hub-keys/default.\(SharedAccessRule.defaultFullName).key", encoding: .utf8)
            let defaultFull = SharedAccessSignature.token(
                resourceURI: base + "/", keyName: SharedAccessRule.defaultFullName, key: defaultKey, expiry: expiry)
            func call(
                _ method: String, _ path: String, _ token: String, body: String = "", headers: [(name: String, value: String)] = []
            )
                async throws -> CurlResponse
            {
                try await fixture.call(
                    method, path + (path.contains("?") ? "&" : "?") + "api-version=2015-01", user: nil, body: body,
                    contentType: HubAPITests.atom, headers: [("Authorization", token)] + headers)
            }
            let device = fixture.device(.apns)
            let registered = try await call(
                "POST", "/eu/registrations", eu, body: HubAPITests.appleRegistration(token: device.handle, tags: "eu-news"))
            #expect(registered.status == 200, "\(registered.bodyText)")
            #expect(registered.bodyText.contains("/eu/registrations/"))
            // The default hub's rule is not the eu hub's, even with a namespace-wide resource; and the other way round.
            let foreign = try await call("GET", "/eu/registrations", defaultFull)
            #expect(foreign.status == 401 && foreign.bodyText.contains("no shared access rule 'DefaultFullSharedAccessSignature'"))
            #expect(try await call("GET", "/default/registrations", eu).status == 401)
            // Registrations are the hub's own.
            let filter = "$filter=DeviceToken%20eq%20'\(device.handle)'"
            #expect(try await call("GET", "/eu/registrations?\(filter)", eu).bodyText.contains("<RegistrationId>"))
            #expect(!(try await call("GET", "/default/registrations?\(filter)", defaultFull).bodyText.contains("<RegistrationId>")))
            let wrongHub = try await call(
                "POST", "/default/messages", defaultFull, body: #"{"aps":{"alert":"not here"}}"#,
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "eu-news")])
            #expect(wrongHub.status == 201)
            let sent = try await call(
                "POST", "/eu/messages", eu, body: #"{"aps":{"alert":"eu only"}}"#,
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "eu-news")])
            #expect(sent.status == 201, "\(sent.bodyText)")
            // Both sends final (recorded), then the device's inbox: the eu send only.
            for (response, token) in [(wrongHub, defaultFull), (sent, eu)] {
                // http://host:port/{hub}/messages/{id}?api-version=… → /{hub}/messages/{id}
                let location = try #require(response.header("Location")?.split(separator: "?").first)
                let path = String(location.drop(while: { $0 != "/" }).dropFirst(2).drop(while: { $0 != "/" }))
                let final = try await eventually {
                    try await call("GET", path, token)
                } until: { details in
                    ["Completed", "NoTargetFound"].contains { details.bodyText.contains("<State>\($0)</State>") }
                }
                #expect(final.status == 200 && !final.bodyText.contains("<State>Processing</State>"), "\(final.bodyText)")
            }
            let inbox = fixture.inbox(device)
            #expect(inbox.count == 1 && inbox.first?.payload.contains("eu only") == true)
            #expect(try await call("GET", "/nope/registrations", eu).status == 404)
            // The console's admin view lists both hubs with rule names and rights, never a key.
            let me = try await fixture.call("GET", "/api/me", user: "root")
            #expect(
                me.bodyText.contains(#"{"name":"default","path":"\/default\/""#)
                    || me.bodyText.contains(#""name":"default","path":"/default/""#))
            #expect(me.bodyText.contains(#""name":"EuFull","rights":["Listen","Manage","Send"]"#), "\(me.bodyText)")
            #expect(!me.bodyText.contains(Self.euKey) && !me.bodyText.contains(defaultKey.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(!(try await fixture.call("GET", "/api/me", user: "alice").bodyText.contains("hubs")))
        }
    }
}

/// HTTPS on the listener (`listener.tls.port`, a certificate from the sandbox's CA): what
/// Notification Hubs clients derive from `sb://host:port/`.
@Suite struct HubHTTPSTests {
    @Test func theHubAPIIsServedOverHTTP2AndHTTP11WithTheSandboxCertificate() async throws {
        try await GatewayFixture.with(adjust: { $0.listener.headerTimeoutSeconds = 2 }) { fixture in
            let secure = try #require(fixture.local.secureBaseURL)
            let port = try #require(Int(secure.split(separator: ":").last ?? ""))
            let key = try String(
                contentsOfFile: fixture.local.directory + "/hub-keys/default.\(SharedAccessRule.defaultFullName).key", encoding: .utf8)
            let device = await fixture.sandbox.createDevice(.apns)
            let ca = fixture.local.directory + "/ca.pem"
            for version in [CurlHTTPClientConfiguration.HTTPVersion.http2, .http1] {
                let client = try CurlHTTPClient(configuration: .init(httpVersion: version, caFile: ca))
                // The Python SDK's token: the hub URL with the port, lower-cased; its URL ends in "/".
                let python = SharedAccessSignature.token(
                    resourceURI: "https://127.0.0.1:\(port)/default", keyName: SharedAccessRule.defaultFullName, key: key,
                    expiry: Int64(Date().timeIntervalSince1970) + 300)
                // The .NET SDK's: http://, no port, the full path with a trailing slash.
                let dotnet = SharedAccessSignature.token(
                    resourceURI: "http://127.0.0.1/default/messages/", keyName: SharedAccessRule.defaultFullName, key: key,
                    expiry: Int64(Date().timeIntervalSince1970) + 300)
                for token in [python, dotnet] {
                    let sent = try await client.execute(
                        CurlRequest(
                            method: "POST", url: "\(secure)/default/messages/?direct&api-version=2015-04",
                            headers: [
                                ("Authorization", token), ("ServiceBusNotification-Format", "apple"),
                                ("ServiceBusNotification-DeviceHandle", device.handle), ("Content-Type", "application/json;charset=utf-8"),
                            ],
                            body: Array(#"{"aps":{"alert":"over https"}}"#.utf8)))
                    #expect(sent.status == 201, "\(version): \(sent.bodyText)")
                    #expect(sent.httpVersion == (version == .http2 ? "2" : "1.1"))
                    #expect(sent.header("Location")?.hasPrefix("https://127.0.0.1:\(port)/default/messages/") == true)
                }
                await client.shutdown()
            }
            // Plain HTTP on the HTTPS port is not answered as HTTP.
            let plain = try RawConnection(port: port)
            _ = plain.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = await RawConnection.onThread { plain.readUntilClosed(timeout: 5) }
            #expect(answer.closed && !answer.text.contains("200 OK"))
            // A client that connects and never says hello is closed (at the header timeout, 2 s:
            // HandshakeDeadlineTests holds the time under a clock it moves; here, on a machine
            // loaded by the parallel suite, only that the server closes it at all, where without
            // the deadline it would stay open for good).
            let silent = try RawConnection(port: port)
            let closed = await RawConnection.onThread { silent.readUntilClosed(timeout: 60) }
            #expect(closed.closed && closed.text.isEmpty)
            let inbox = try await eventually {
                await fixture.sandbox.state.inbox(deviceID: device.id)
            } until: {
                $0.count >= 4
            }
            #expect(inbox.count == 4)
        }
    }
}

/// Browsers through the hub API, as Notification Hubs documents Web Push: Browser(Template)
/// registration descriptions (Endpoint, P256DH, Auth), installations with a pushChannel object,
/// `ServiceBusNotification-Format: browser`, and direct sends with P256DH and Auth headers.
@Suite struct HubBrowserTests {
    func parts(_ device: SandboxDevice) throws -> (endpoint: String, p256dh: String, auth: String) {
        let subscription = try #require(WebPushSubscription(handleValue: device.handle))
        return (subscription.endpoint, Base64URL.encode(subscription.p256dh), Base64URL.encode(subscription.auth))
    }

    @Test func registrationsInstallationsAndDirectSendsReachBrowsers() async throws {
        try await GatewayFixture.inProcess { fixture in
            let client = try HubAPITests.Client(fixture)
            let native = await fixture.sandbox.createDevice(.browser)
            let templated = await fixture.sandbox.createDevice(.browser)
            let installed = await fixture.sandbox.createDevice(.browser)
            let (endpoint, p256dh, auth) = try parts(native)
            let created = try await client.call(
                "POST", "registrations",
                body: """
                    <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">
                    <BrowserRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                    <Tags>news</Tags><Endpoint>\(endpoint)</Endpoint><P256DH>\(p256dh)</P256DH><Auth>\(auth)</Auth>
                    </BrowserRegistrationDescription></content></entry>
                    """, contentType: HubAPITests.atom)
            #expect(created.status == 200, "\(created.bodyText)")
            // Read back as Notification Hubs writes it: the three parts, the keys never merged.
            #expect(created.bodyText.contains("<BrowserRegistrationDescription"), "\(created.bodyText)")
            #expect(created.bodyText.contains("<Endpoint>\(endpoint)</Endpoint><P256DH>\(p256dh)</P256DH><Auth>\(auth)</Auth>"))

            // Found again by its endpoint, as a client looks its registration up before creating one.
            let filtered = try await client.call(
                "GET", "registrations?$filter=\("Endpoint eq '\(endpoint)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            #expect(filtered.status == 200, "\(filtered.bodyText)")
            #expect(filtered.bodyText.components(separatedBy: "<BrowserRegistrationDescription").count == 2, "\(filtered.bodyText)")

            let (templateEndpoint, templateKey, templateAuth) = try parts(templated)
            let template = try await client.call(
                "POST", "registrations",
                body: """
                    <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">
                    <BrowserTemplateRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                    <Tags>news</Tags><Endpoint>\(templateEndpoint)</Endpoint><P256DH>\(templateKey)</P256DH><Auth>\(templateAuth)</Auth>
                    <BodyTemplate><![CDATA[{"title": "$(headline)"}]]></BodyTemplate>
                    </BrowserTemplateRegistrationDescription></content></entry>
                    """, contentType: HubAPITests.atom)
            #expect(template.status == 200, "\(template.bodyText)")

            let (installEndpoint, installKey, installAuth) = try parts(installed)
            let installation = try await client.call(
                "PUT", "installations/web-1",
                body:
                    #"{"installationId":"web-1","platform":"browser","pushChannel":{"endpoint":"\#(installEndpoint)","p256dh":"\#(installKey)","auth":"\#(installAuth)"},"tags":["news"]}"#
            )
            #expect(installation.status == 200, "\(installation.bodyText)")
            let read = try await client.call("GET", "installations/web-1")
            let pushChannel = try #require(
                (try JSONSerialization.jsonObject(with: Data(read.body)) as? [String: Any])?["pushChannel"] as? [String: String],
                "\(read.bodyText)")
            #expect(pushChannel == ["endpoint": installEndpoint, "p256dh": installKey, "auth": installAuth])

            // A native browser send reaches the native registration and the installation.
            let sent = try await client.call(
                "POST", "messages", body: #"{"title":"native"}"#,
                headers: [("ServiceBusNotification-Format", "browser"), ("ServiceBusNotification-Tags", "news"), ("TTL", "120")])
            #expect(sent.status == 201, "\(sent.bodyText)")
            _ = try await client.finalDetails(of: sent)
            #expect(await fixture.sandbox.state.inbox(deviceID: native.id).map(\.payload) == [#"{"title":"native"}"#])
            // What is left of the TTL when it went out (a loaded machine takes a second or two).
            let ttl = await fixture.sandbox.state.inbox(deviceID: installed.id).first?.header("TTL").flatMap { Int($0) }
            #expect(ttl.map { (110...120).contains($0) } == true, "\(String(describing: ttl))")

            // A template send renders the template registration's body.
            let rendered = try await client.call(
                "POST", "messages", body: #"{"headline":"templated"}"#,
                headers: [("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-Tags", "news")])
            let details = try await client.finalDetails(of: rendered)
            let templatedInbox = await fixture.sandbox.state.inbox(deviceID: templated.id).map(\.payload)
            #expect(templatedInbox == [#"{"title":"templated"}"#], "\(templatedInbox) \(details.bodyText)")

            // A direct send: the endpoint, with the keys in P256DH and Auth.
            let other = await fixture.sandbox.createDevice(.browser)
            let (otherEndpoint, otherKey, otherAuth) = try parts(other)
            let direct = try await client.call(
                "POST", "messages?direct", body: "direct text",
                headers: [
                    ("ServiceBusNotification-Format", "browser"), ("ServiceBusNotification-DeviceHandle", otherEndpoint),
                    ("P256DH", otherKey), ("Auth", otherAuth),
                ])
            #expect(direct.status == 201, "\(direct.bodyText)")
            _ = try await client.finalDetails(of: direct)
            #expect(await fixture.sandbox.state.inbox(deviceID: other.id).map(\.payload) == ["direct text"])
        }
    }

    /// The Listen key an app ships cannot make the store keep unbounded reservations: each key
    /// holds at most `limits.maxHubReservationsPerKey` unused ids, counted per key.
    @Test func hubReservationsAreCappedPerKey() async throws {
        try await InMemoryGatewayFixture.with(rewrite: { config in
            var limits = config["limits"] as? [String: Any] ?? [:]
            limits["maxHubReservationsPerKey"] = 3
            config["limits"] = limits
        }) { fixture in
            let client = try HubAPITests.Client(fixture)
            let listen = client.token(rule: SharedAccessRule.defaultListenName)
            for _ in 0..<3 { #expect(try await client.call("POST", "registrationIDs", authorization: listen).status == 201) }
            let refused = try await client.call("POST", "registrationIDs", authorization: listen)
            #expect(refused.status == 429 && refused.bodyText.contains("at most 3"), "\(refused.bodyText)")
            // Another key has its own count.
            #expect(try await client.call("POST", "registrationIDs").status == 201)
        }
    }

    /// ... and reserves them at a bounded rate (finding 9): past the burst, 429 with `Retry-After`
    /// until the key's bucket refills; another key has its own bucket.
    @Test func hubReservationsAreRateLimitedPerKey() async throws {
        let clock = ManualClock()
        try await InMemoryGatewayFixture.with(
            clock: clock,
            rewrite: { config in
                var limits = config["limits"] as? [String: Any] ?? [:]
                limits["hubReservationsPerSecond"] = 1
                limits["hubReservationBurst"] = 2
                config["limits"] = limits
            }
        ) { fixture in
            let client = try HubAPITests.Client(fixture)
            let listen = client.token(rule: SharedAccessRule.defaultListenName)
            for _ in 0..<2 { #expect(try await client.call("POST", "registrationIDs", authorization: listen).status == 201) }
            let refused = try await client.call("POST", "registrationIDs", authorization: listen)
            #expect(refused.status == 429, "\(refused.bodyText)")
            #expect(refused.header("Retry-After") == "1")
            #expect(refused.bodyText.contains("hubReservationsPerSecond"), "\(refused.bodyText)")
            #expect(try await client.call("POST", "registrationIDs").status == 201)
            clock.advance(seconds: 1)
            #expect(try await client.call("POST", "registrationIDs", authorization: listen).status == 201)
        }
    }
}
