import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateLocal
import PushgateSQLite
import PushgateServer
import PushgateTesting
import Testing

/// What hostile or broken clients send to a running gateway: each gets a clear answer (or its
/// connection closed on time), the store stays as it was, and the gateway keeps serving.
///
/// Serialized: the soak and flood tests load the event loops that every in-process gateway and
/// sandbox share, and the timeout tests would then see their timers fire seconds late.
@Suite(.serialized) struct HostileClientTests {
    static func start(_ adjust: @escaping @Sendable (inout PushgateConfiguration) -> Void = { _ in }) async throws -> LocalGateway {
        try await LocalGateway.start(retryPolicy: RetryPolicy(maximumAttempts: 2, initialBackoffSeconds: 0.05), adjust: adjust)
    }

    static func running(
        adjusting adjust: @escaping @Sendable (inout PushgateConfiguration) -> Void = { _ in }, _ body: (LocalGateway) async throws -> Void
    ) async throws {
        let local = try await start(adjust)
        do { try await body(local) } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }

    @Test func slowClientsAreClosedAndCannotCrowdOutRealOnes() async throws {
        try await Self.running(adjusting: {
            $0.listener.maximumConnections = 32
            $0.listener.headerTimeoutSeconds = 2
        }) { local in
            let port = local.port
            // 200 clients that never finish their request head.
            let slow = await RawConnection.onThread {
                (0..<200).compactMap { _ -> RawConnection? in
                    guard let connection = try? RawConnection(port: port) else { return nil }
                    connection.send("GET /healthz HTTP/1.1\r\nHost: pushgate\r\nX-Slow: ")
                    return connection
                }
            }
            #expect(slow.count > 100)
            let health = try await local.call("GET", "/healthz", user: nil)
            #expect(health.status == 200)
            #expect(local.server.connections.count <= 32)
            // By the header timeout every slow connection has been closed (displaced or timed out).
            let closed = await RawConnection.onThread { slow.map { $0.readUntilClosed(timeout: 15).closed } }
            #expect(closed.allSatisfy { $0 }, "\(closed.filter { !$0 }.count) slow connections still open")
            let counts = local.server.connections.closedCounts
            #expect(counts.displaced > 0 && counts.timedOut > 0, "\(counts)")
            #expect(try await local.call("GET", "/healthz", user: nil).status == 200)
        }
    }

    @Test func idleTrickledAndStalledConnectionsAreClosedOnTime() async throws {
        try await Self.running(adjusting: {
            $0.listener.headerTimeoutSeconds = 1
            $0.listener.bodyTimeoutSeconds = 1
            $0.listener.bodyDeadlineSeconds = 2
            $0.listener.idleTimeoutSeconds = 2
        }) { local in
            let port = local.port
            let results = await RawConnection.onThread { () -> [String: (text: String, closed: Bool, seconds: Double)] in
                var results: [String: (text: String, closed: Bool, seconds: Double)] = [:]
                func timed(_ name: String, _ connection: RawConnection?, timeout: Double = 15) {
                    let started = Date()
                    let outcome = connection?.readUntilClosed(timeout: timeout) ?? (text: "no connection", closed: false)
                    results[name] = (outcome.text, outcome.closed, Date().timeIntervalSince(started))
                }
                // Keep-alive after one answered request.
                let idle = try? RawConnection(port: port)
                idle?.send("GET /healthz HTTP/1.1\r\nHost: pushgate\r\n\r\n")
                // The idle time counts from the answer (which a loaded machine may be slow to give).
                let answer = idle?.read(until: "ok\n", timeout: 30) ?? ""
                timed("idle", idle)
                let rest = results["idle"]?.text ?? ""
                results["idle"]?.text = answer + rest
                // A head trickled one byte every 200 ms: activity does not extend the header timeout.
                let trickle = try? RawConnection(port: port)
                let started = Date()
                for byte in "GET /healthz HTTP/1.1\r\nHost: pushgate\r\nX-Padding: aaaaaaaaaaaaaaaaaaaa".utf8 {
                    if trickle?.send([byte]) != true || Date().timeIntervalSince(started) > 12 { break }
                    Thread.sleep(forTimeInterval: 0.2)
                }
                timed("trickle", trickle, timeout: 3)
                results["trickle"]?.seconds = Date().timeIntervalSince(started)
                // A body that stops midway.
                let stalled = try? RawConnection(port: port)
                stalled?.send(
                    "PUT /api/register/x HTTP/1.1\r\nHost: pushgate\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"Platfo"
                )
                timed("stalled body", stalled)
                // A body dripped one byte every 400 ms: each read is within the body timeout, the
                // whole body is not within its deadline.
                let drip = try? RawConnection(port: port)
                drip?.send(
                    "PUT /api/register/x HTTP/1.1\r\nHost: pushgate\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
                let dripStarted = Date()
                while Date().timeIntervalSince(dripStarted) < 12, drip?.send("{") == true { Thread.sleep(forTimeInterval: 0.4) }
                results["dripped body"] = ("", true, Date().timeIntervalSince(dripStarted))
                // A chunked body that stops after one chunk.
                let chunked = try? RawConnection(port: port)
                chunked?.send("POST /api/notifications HTTP/1.1\r\nHost: pushgate\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n\"hell\r\n")
                timed("stalled chunked body", chunked)
                return results
            }
            let idle = try #require(results["idle"])
            #expect(idle.text.hasPrefix("HTTP/1.1 200"), "\(idle.text.prefix(80))")
            // Timeouts of 1-2 s; the bounds are loose (a loaded 2-core machine), they tell "closed by
            // its timeout" from "never closed".
            #expect(idle.closed && idle.seconds < 10, "idle keep-alive closed after \(idle.seconds) s")
            let trickle = try #require(results["trickle"])
            #expect(trickle.closed && trickle.seconds < 10, "trickled head closed after \(trickle.seconds) s")
            let dripped = try #require(results["dripped body"])
            #expect(dripped.seconds < 10, "a dripped body was read for \(dripped.seconds) s")
            for name in ["stalled body", "stalled chunked body"] {
                let result = try #require(results[name])
                #expect(result.closed && result.seconds < 10, "\(name) closed after \(result.seconds) s")
            }
            #expect(try await local.call("GET", "/healthz", user: nil).status == 200)
        }
    }

    @Test func oversizedAndEndlessBodiesAreRefusedWithoutBeingRead() async throws {
        try await Self.running { local in
            let port = local.port
            let auth = "Authorization: Basic " + Data("alice:alice".utf8).base64EncodedString()
            let results = await RawConnection.onThread { () -> [(String, Int, String, Bool)] in
                var results: [(String, Int, String, Bool)] = []
                let chunk = [UInt8](repeating: 0x20, count: 65536)
                // 100 MB declared, sent as fast as the server takes it.
                let declared = try? RawConnection(port: port)
                declared?.send(
                    "POST /api/notifications?pns=apns&to_tag=alice HTTP/1.1\r\nHost: pushgate\r\n\(auth)\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n"
                )
                var sent = 0
                while sent < 104_857_600, declared?.send(chunk) == true { sent += chunk.count }
                let declaredAnswer = declared?.readUntilClosed(timeout: 5) ?? (text: "", closed: false)
                results.append(("100 MB", sent, declaredAnswer.text, declaredAnswer.closed))
                // An endless chunked body.
                let endless = try? RawConnection(port: port)
                endless?.send(
                    "POST /api/notifications?pns=apns&to_tag=alice HTTP/1.1\r\nHost: pushgate\r\n\(auth)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                sent = 0
                let framed = Array("10000\r\n".utf8) + chunk + Array("\r\n".utf8)
                while sent < 104_857_600, endless?.send(framed) == true { sent += chunk.count }
                let endlessAnswer = endless?.readUntilClosed(timeout: 5) ?? (text: "", closed: false)
                results.append(("endless chunked", sent, endlessAnswer.text, endlessAnswer.closed))
                return results
            }
            for (name, sent, answer, closed) in results {
                #expect(answer.hasPrefix("HTTP/1.1 413"), "\(name): \(answer.prefix(120))")
                #expect(answer.contains("larger than 65536 bytes"), "\(name): \(answer.prefix(300))")
                #expect(closed, "\(name): connection left open")
                // Read no further than the limit (plus what sat in socket buffers).
                #expect(sent < 32 << 20, "\(name): the server took \(sent) bytes")
            }
            let health = try await local.call("GET", "/healthz", user: nil)
            #expect(health.status == 200)
        }
    }

    @Test func hostileBodiesAndRegistrationsAreRefusedByNameAndChangeNothing() async throws {
        try await Self.running { local in
            let device = await local.sandbox.createDevice(.apns)
            let id = try await local.register(device, user: "alice", tags: ["news"])
            let nested = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
            let manyTags = "[" + (0..<1_000).map { "\"t\($0)\"" }.joined(separator: ",") + "]"
            let tenThousandTags = "[" + (0..<10_000).map { "\"t\($0)\"" }.joined(separator: ",") + "]"
            func put(_ handle: String, tags: String = "[]", platform: String = "apns") -> String {
                #"{"Platform":"\#(platform)","Handle":"\#(handle)","Tags":\#(tags)}"#
            }
            let cases: [(String, String, String, String, Int, String)] = [
                ("PUT", "/api/register/\(id)", "application/json", "{\"Platform\": [1, 2", 400, "body: invalid JSON"),
                (
                    "PUT", "/api/register/\(id)", "application/json", #"{"Platform":7,"Handle":"x"}"#, 400,
                    "is required (\(Platform.alternatives))"
                ),
                ("PUT", "/api/register/\(id)", "application/json", nested, 400, "body:"),
                ("PUT", "/api/register/\(id)", "application/json", put(device.handle + "\\u0000\\u0007"), 400, "Handle"),
                ("PUT", "/api/register/\(id)", "application/json", put(String(repeating: "a", count: 60_000)), 400, "Handle"),
                ("PUT", "/api/register/\(id)", "application/json", put(String(repeating: "a", count: 1_000_000)), 413, "larger than"),
                ("PUT", "/api/register/\(id)", "application/json", put(device.handle, tags: manyTags), 400, "at most 60"),
                ("PUT", "/api/register/\(id)", "application/json", put(device.handle, tags: tenThousandTags), 413, "larger than"),
                (
                    "PUT", "/api/register/\(id)", "application/json", put(device.handle, tags: #"["a'; DROP TABLE registrations; --"]"#),
                    400,
                    "[0]: tag 'a'; DROP"
                ),
                ("PUT", "/api/register/\(id)", "application/json", put(device.handle, tags: #"["username:bob"]"#), 403, "another user"),
                ("PUT", "/api/register/\(id)", "application/json", put(device.handle, tags: #"["Username:alice"]"#), 400, "in lower case"),
                // The hub's implicit tags are set from installations, never given: whoever could
                // give one would receive that user's or installation's hub sends.
                (
                    "PUT", "/api/register/\(id)", "application/json", put(device.handle, tags: #"["news", "$UserId:{dave}"]"#), 400,
                    "[1]: tag '$UserId:{dave}' is reserved"
                ),
                (
                    "PUT", "/api/register/\(id)", "application/json", put(device.handle, tags: #"["$InstallationId:{dave-phone}"]"#), 400,
                    "[0]: tag '$InstallationId:{dave-phone}' is reserved"
                ),
                ("PUT", "/api/register/\(id)", "application/json", put(device.handle, platform: "baidu"), 400, "'baidu' is not supported"),
                ("PUT", "/api/register/\(id)", "text/plain", put(device.handle), 415, "Content-Type"),
                ("POST", "/api/notifications?pns=apns&to_tag=alice", "text/plain", "\"hi\"", 415, "Content-Type"),
                ("POST", "/api/notifications?pns=apns&to_tag=alice", "application/json", nested, 400, "body:"),
            ]
            for (method, path, contentType, body, status, text) in cases {
                let response = try await local.call(method, path, user: "alice", body: body, contentType: contentType)
                #expect(response.status == status, "\(method) \(path) \(body.prefix(40)): \(response.bodyText.prefix(200))")
                #expect(response.bodyText.contains(text), "\(body.prefix(40)): \(response.bodyText.prefix(200))")
            }
            // A huge tag is named by its first 40 characters and its length, not echoed whole.
            for huge in [
                String(repeating: "é", count: 20_000), String(repeating: "a", count: 121),
                String(repeating: "a", count: 60) + "!" + String(repeating: "b", count: 50),
            ] {
                let response = try await local.call(
                    "PUT", "/api/register/\(id)", user: "alice", body: put(device.handle, tags: "[\"\(huge)\"]"))
                #expect(response.status == 400, "\(response.bodyText.prefix(200))")
                #expect(response.bodyText.contains("tag '\(huge.prefix(40))…'"), "\(response.bodyText.prefix(300))")
                #expect(
                    response.bodyText.utf8.count < 400 && !response.bodyText.contains("UnicodeScalarView"),
                    "\(response.bodyText.prefix(300))")
            }
            // Malformed credentials: no colon, bad base64, 64 KB.
            for authorization in [
                "Basic " + Data("alice".utf8).base64EncodedString(), "Basic %%%", "Basic " + String(repeating: "QUFB", count: 16_384),
            ] {
                let response = try await local.call(
                    "PUT", "/api/register/\(id)", user: nil, body: put(device.handle), headers: [("Authorization", authorization)])
                #expect(response.status == 401, "\(authorization.prefix(20)): \(response.bodyText.prefix(200))")
            }
            // Unicode tags are letters: stored and read back as sent, then the registration is restored.
            let unicode = try await local.call(
                "PUT", "/api/register/\(id)", user: "alice", body: put(device.handle, tags: #"["café", "日本"]"#))
            #expect(unicode.status == 200, "\(unicode.bodyText)")
            #expect(
                try await local.store.registration(id: try RegistrationID(id), app: .default)?.tags.map(\.rawValue).contains("café") == true
            )
            #expect(
                try await local.call("PUT", "/api/register/\(id)", user: "alice", body: put(device.handle, tags: #"["news"]"#)).status
                    == 200)
            let stored = try await local.store.registration(id: try RegistrationID(id), app: .default)
            #expect(stored?.tags.map(\.rawValue) == ["news", "username:alice"])
            #expect(stored?.handle.value == device.handle)
            #expect(await local.sandbox.state.receivedCount() == 0)
        }
    }

    @Test func aHandleBelongsToOneOwnerAndAnotherUsersClaimNeitherDeletesNorDisclosesIt() async throws {
        try await Self.running { local in
            let device = await local.sandbox.createDevice(.apns)
            let aliceID = try await local.register(device, user: "alice")
            let claimed = try await local.call("POST", "/api/register?handle=\(device.handle)", user: "bob")
            #expect(claimed.status == 200)
            let bobID = String(claimed.bodyText.dropFirst().dropLast())
            #expect(bobID != aliceID)
            #expect(try await local.store.registration(id: try RegistrationID(aliceID), app: .default)?.owner == .user("alice"))
            let put = try await local.call(
                "PUT", "/api/register/\(bobID)", user: "bob", body: #"{"Platform":"apns","Handle":"\#(device.handle)","Tags":[]}"#)
            #expect(put.status == 409, "\(put.bodyText)")
            #expect(!put.bodyText.contains(aliceID) && !put.bodyText.contains("alice"))
            #expect(try await local.store.registration(id: try RegistrationID(aliceID), app: .default)?.owner == .user("alice"))
            // The owner's own second claim still finds its registration.
            let again = try await local.call("POST", "/api/register?handle=\(device.handle)", user: "alice")
            #expect(again.bodyText == "\"\(aliceID)\"")
        }
    }

    @Test func reservationsAreCappedPerUser() async throws {
        try await Self.running(adjusting: { $0.limits.maximumReservationsPerUser = 5 }) { local in
            for _ in 0..<5 { #expect(try await local.call("POST", "/api/register", user: "mallory").status == 200) }
            let refused = try await local.call("POST", "/api/register", user: "mallory")
            #expect(refused.status == 429)
            #expect(refused.bodyText.contains("at most 5 held at once by one user or key"))
            #expect(try await local.call("POST", "/api/register", user: "alice").status == 200)
        }
    }

    @Test func aSecurePushWithNoTargetStoresNothingAndItsPayloadIsCapped() async throws {
        try await Self.running(adjusting: { $0.limits.maximumSecurePayloadBytes = 1000 }) { local in
            for _ in 0..<20 {
                let response = try await local.call(
                    "POST", "/api/notifications?pns=all&to_tag=nobody&secure=true", user: "bob", body: "\"secret\"")
                #expect(response.status == 404)
            }
            #expect(try await local.store.secureMessageCount(app: .default) == 0)
            let device = await local.sandbox.createDevice(.apns)
            _ = try await local.register(device, user: "alice")
            let large = try await local.call(
                "POST", "/api/notifications?pns=apns&to_tag=alice&secure=true", user: "bob",
                body: "\"\(String(repeating: "x", count: 1001))\"")
            #expect(large.status == 413)
            #expect(large.bodyText.contains("at most 1000"))
            #expect(try await local.store.secureMessageCount(app: .default) == 0)
            let fits = try await local.call("POST", "/api/notifications?pns=apns&to_tag=alice&secure=true", user: "bob", body: "\"hello\"")
            #expect(fits.status == 200)
            #expect(try await local.store.secureMessageCount(app: .default) == 1)
        }
    }

    @Test func aStreamedSendCarriesOnAfterItsClientDisconnects() async throws {
        try await Self.running { local in
            try await local.store.restore(try RegistrationSeeds.apns(count: 2_000, user: "carol"), now: RegistrationSeeds.now)
            let port = local.port
            let auth = "Authorization: Basic " + Data("bob:bob".utf8).base64EncodedString()
            let firstLine = await RawConnection.onThread { () -> String in
                guard let connection = try? RawConnection(port: port) else { return "" }
                connection.send(
                    "POST /api/notifications?pns=apns&to_tag=carol HTTP/1.1\r\nHost: pushgate\r\n\(auth)\r\nAccept: application/x-ndjson\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n\"hi\""
                )
                return connection.read(until: "progress", timeout: 20)  // then the connection is dropped
            }
            #expect(firstLine.hasPrefix("HTTP/1.1 200"), "\(firstLine.prefix(200))")
            // Every target is still attempted: the counts reach 2,000.
            var counted = 0
            for _ in 0..<300 {
                let metrics = try await local.call("GET", "/metrics", user: nil).bodyText
                counted = metrics.split(separator: "\n").filter { $0.hasPrefix("pushgate_notifications_total{") }.reduce(0) {
                    $0 + (Int($1.split(separator: " ").last ?? "") ?? 0)
                }
                if counted >= 2_000 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(counted == 2_000)
        }
    }

    /// 200 concurrent clients registering devices and sending to themselves, for
    /// `PUSHGATE_SOAK_SECONDS` (default 10; the figure in docs/api.md used 60): no 5xx, no crash,
    /// `/healthz` answering throughout.
    @Test func twoHundredConcurrentClientsMixingRegistrationsAndSends() async throws {
        let seconds = Double(ProcessInfo.processInfo.environment["PUSHGATE_SOAK_SECONDS"] ?? "") ?? 10
        try await Self.running { local in
            let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1, maximumConnectionsPerHost: 220))
            let base = local.baseURL
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            var created: [String] = []
            for _ in 0..<40 { created.append(await local.sandbox.createDevice(.apns).handle) }
            let handles = created
            func call(_ method: String, _ path: String, user: String, body: String = "") async -> Int {
                let request = CurlRequest(
                    method: method, url: base + path,
                    headers: [
                        ("Content-Type", "application/json"),
                        ("Authorization", "Basic " + Data("\(user):\(user)".utf8).base64EncodedString()),
                    ], body: Array(body.utf8))
                return (try? await client.execute(request).status) ?? -1
            }
            let statuses = await withTaskGroup(of: [Int: Int].self) { group in
                for worker in 0..<200 {
                    group.addTask {
                        var seen: [Int: Int] = [:]
                        let user = "soak\(worker % 50)"
                        var round = 0
                        while ContinuousClock.now < deadline {
                            round += 1
                            if (worker + round) % 3 == 0 {
                                seen[
                                    await call("POST", "/api/notifications?pns=all&to_tag=\(user)", user: user, body: "\"hi \(round)\""),
                                    default: 0] += 1
                            } else {
                                let handle = handles[(worker * 7 + round) % handles.count]
                                let registration = try? await client.execute(
                                    CurlRequest(
                                        method: "POST", url: base + "/api/register",
                                        headers: [("Authorization", "Basic " + Data("\(user):\(user)".utf8).base64EncodedString())]))
                                seen[registration?.status ?? -1, default: 0] += 1
                                if let id = registration.map({ String($0.bodyText.dropFirst().dropLast()) }), registration?.status == 200 {
                                    let body = #"{"Platform":"apns","Handle":"\#(handle)","Tags":["soak"]}"#
                                    seen[await call("PUT", "/api/register/\(id)", user: user, body: body), default: 0] += 1
                                }
                            }
                        }
                        return seen
                    }
                }
                group.addTask {
                    var seen: [Int: Int] = [:]
                    while ContinuousClock.now < deadline {
                        let status = (try? await client.execute(CurlRequest(method: "GET", url: base + "/healthz")).status) ?? -1
                        seen[status == 200 ? 1200 : 1000 + status, default: 0] += 1
                        try? await Task.sleep(for: .milliseconds(200))
                    }
                    return seen
                }
                return await group.reduce(into: [Int: Int]()) { total, part in total.merge(part, uniquingKeysWith: +) }
            }
            await client.shutdown()
            #expect(statuses.keys.allSatisfy { $0 < 500 || $0 >= 1000 }, "\(statuses)")
            #expect(statuses[-1] == nil, "transport failures: \(statuses)")
            #expect(statuses.keys.filter { $0 >= 1000 } == [1200], "healthz: \(statuses)")
            #expect((statuses[200] ?? 0) > 200, "\(statuses)")
        }
    }

    /// 3,000 '(' or 4,000 '!' in `tags=` would overflow a recursive parser's stack and kill the process.
    @Test func hostileTagExpressionsAreRefusedAndTheGatewayKeepsServing() async throws {
        try await Self.running { local in
            for expression in [
                String(repeating: "(", count: 3_000), String(repeating: "!", count: 4_000) + "a",
                String(repeating: "!", count: 1_500) + "a",
            ] {
                let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                for path in ["/api/notifications?pns=apns&tags=\(encoded)", "/api/registrations?tags=\(encoded)"] {
                    let method = path.hasPrefix("/api/notifications") ? "POST" : "GET"
                    let response = try await local.call(method, path, user: "admin", body: method == "POST" ? "\"hi\"" : "")
                    #expect(response.status == 400, "\(path.prefix(60)): \(response.bodyText.prefix(200))")
                    #expect(response.bodyText.contains("tag expression"), "\(response.bodyText.prefix(200))")
                }
            }
            let health = try await local.call("GET", "/healthz", user: nil)
            #expect(health.status == 200)
        }
    }
}
