import Foundation
import Pushgate
import PushgateCurl
import PushgateDispatch
import PushgatePostgres
import PushgateSQLite
import PushgateTesting
import Testing

/// Several `pushgate serve` processes on one PostgreSQL database, and the database going away
/// under a running gateway. Skipped (with one line) without a PostgreSQL server.
@Suite(.serialized, .enabled(if: PostgresTesting.isAvailable)) struct MultiInstanceTests {
    static let bob = ("Authorization", "Basic " + Data("bob:bob".utf8).base64EncodedString())

    /// Points the sandbox's gateway configuration at `url`'s database.
    static func usePostgres(_ config: inout [String: Any], database: PostgresSettings, leaseSeconds: Int = 2) {
        config["store"] = ["postgres": ["url": "\(database.url.description)?sslmode=disable", "poolSize": 6, "timeoutSeconds": 3]]
        config["outbox"] = ["leaseSeconds": leaseSeconds]
    }

    /// Three instances share one database. A 50,000-device broadcast (asynchronous) is sent through
    /// the first; the instance that holds it drives it and the other two help with its pages.
    /// Mid-way the holder is killed with SIGKILL (a survivor takes the work over when its 2 s
    /// leases expire). Every instance claimed pages of it; every device ends with exactly one
    /// recorded outcome, every device received the message, and those that received it twice are
    /// at most what the dead instance had on the wire (APNs: 2 connections × 100 streams) plus one
    /// unflushed batch of answers (``AnswerFlush/count``).
    @Test func threeInstancesShareTheOutboxAndSurviveAKillNineMidBroadcast() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-instances-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let database = try await PostgresTesting.freshDatabase(prefix: "instances")
        let sandbox = try await StandingSandbox.start(in: folder) { Self.usePostgres(&$0, database: database) }

        let audience = 50_000
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1, totalTimeoutMilliseconds: 300_000))
        let created = try await client.execute(
            CurlRequest(
                method: "POST", url: sandbox.control + "/devices", headers: [("Content-Type", "application/json")],
                body: Array(#"{"platform":"apns","count":\#(audience)}"#.utf8)))
        #expect(created.status == 201)
        let devices = try #require(try JSONSerialization.jsonObject(with: Data(created.body)) as? [[String: Any]])
        let registrations = try devices.enumerated().map { index, device in
            try Registration(
                id: try RegistrationID(String(format: "m%07d", index)),
                handle: DeviceHandle(uncheckedPlatform: .apns, value: device["handle"] as? String ?? ""), tags: [try Tag.username("carol")],
                owner: "carol")
        }
        let store = try await PostgresStore.open(settings: database, password: nil)
        for start in stride(from: 0, to: audience, by: 10_000) {
            try await store.restore(Array(registrations[start..<start + 10_000]), now: RegistrationSeeds.now)
        }

        var instances: [(process: RunningProcess, server: String)] = []
        for _ in 0..<3 { instances.append(try await RunningProcess.serve(config: sandbox.configPath)) }
        let accepted = try await client.execute(
            CurlRequest(
                method: "POST", url: instances[0].server + "/api/notifications?pns=apns&to_tag=carol",
                headers: [Self.bob, ("Content-Type", "application/json"), ("Prefer", "respond-async")],
                body: Array(#""everyone, once""#.utf8)))
        #expect(accepted.status == 202, "\(accepted.bodyText)")
        let id = try #require((try JSONSerialization.jsonObject(with: Data(accepted.body)) as? [String: Any])?["notificationId"] as? String)

        let midway = try await OutboxRecoveryTests.waitForFinal(server: instances[0].server, id: id, seconds: 240) {
            ($0["processed"] as? Int ?? 0) >= 10_000
        }
        #expect((midway["processed"] as? Int ?? 0) < audience, "the broadcast finished before the kill: \(midway)")
        // Every instance has a share of it: its page claims so far.
        var claims: [Int] = []
        for instance in instances {
            let metrics = try await client.execute(CurlRequest(method: "GET", url: instance.server + "/metrics")).bodyText
            claims.append(Self.counter("pushgate_outbox_page_claims_total", in: metrics))
        }
        #expect(claims.allSatisfy { $0 > 0 }, "pages claimed per instance before the kill: \(claims)")
        // The instance holding it: its log names the notification.
        let driver = try #require(
            instances.firstIndex {
                $0.process.text.split(separator: "\n").contains { $0.contains("delivering a notification") && $0.contains(id) }
            },
            "no instance logged delivering \(id)")
        kill(instances[driver].process.processIdentifier, SIGKILL)
        _ = try await instances[driver].process.waitForExit(seconds: 10)
        // The dead driver's in-flight window: pages it claimed and never recorded.
        let window = try await store.unfinishedPages(notificationID: id, app: .default)
        let survivors = instances.indices.filter { $0 != driver }.map { instances[$0] }

        let outcome = try await OutboxRecoveryTests.waitForFinal(server: survivors[0].server, id: id, seconds: 400)
        #expect(outcome["state"] as? String == "Completed", "\(outcome)")
        #expect(outcome["processed"] as? Int == audience, "every target has exactly one outcome: \(outcome)")
        #expect(outcome["success"] as? Int == audience, "\(outcome)")
        #expect(
            survivors.contains { $0.process.text.contains("resuming a notification whose driver stopped") },
            "no survivor took the work over")

        let histogram = try await DeliveryHistogram.read(from: sandbox.control, client: client)
        let twice = histogram.receivedMoreThanOnce
        let violation = histogram.violation(audience: audience, onTheWire: 2 * 100 + AnswerFlush().count)
        #expect(violation == nil, "\(violation ?? "")")
        print(
            "three instances, kill -9 of instance \(driver + 1): page claims per instance \(claims); processed \(midway["processed"] ?? "?") before the kill; \(window) pages in flight; \(twice) devices received it twice; \(histogram)"
        )

        // Asynchronous sends through any instance are taken by whichever is free: several
        // small ones all end, whoever drives them.
        var ids: [String] = []
        for index in 0..<6 {
            let sent = try await client.execute(
                CurlRequest(
                    method: "POST", url: survivors[index % 2].server + "/api/notifications?pns=apns&to_tag=nobody",
                    headers: [Self.bob, ("Content-Type", "application/json"), ("Prefer", "respond-async")], body: Array(#""small""#.utf8)))
            #expect(sent.status == 202)
            if let small = (try? JSONSerialization.jsonObject(with: Data(sent.body)) as? [String: Any])?["notificationId"] as? String {
                ids.append(small)
            }
        }
        for small in ids {
            let final = try await OutboxRecoveryTests.waitForFinal(server: survivors[1].server, id: small, seconds: 30)
            #expect(final["state"] as? String == "NoTargetFound", "\(final)")
        }
        await client.shutdown()
        for survivor in survivors { #expect(try await survivor.process.terminate() == 0) }
        #expect(try await sandbox.process.terminate() == 0)
        await store.close()
    }

    /// A counter's value in a Prometheus exposition (0 when absent).
    static func counter(_ name: String, in exposition: String) -> Int {
        exposition.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }.map {
            Int($0)
        } ?? 0
    }

    /// The database stops under a running gateway: `/healthz` answers 503 naming it, a
    /// registration call answers 503 within the store timeout instead of hanging, and once the
    /// server is back the gateway reconnects by itself.
    @Test func aDatabaseOutageIsA503AndTheGatewayReconnects() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-outage-" + UUID().uuidString
        let cluster = folder + "-pg"
        defer {
            _ = system("bash '\(PushgateProcess.repositoryRoot)/scripts/postgres.sh' stop '\(cluster)'")
            try? FileManager.default.removeItem(atPath: folder)
        }
        let url = try await Self.script(["start", cluster]).trimmingCharacters(in: .whitespacesAndNewlines)
        var database = PostgresSettings(url: try PostgresURL(parsing: url))
        database.url.database = "postgres"
        let sandbox = try await StandingSandbox.start(in: folder) { Self.usePostgres(&$0, database: database) }
        let (gateway, server) = try await RunningProcess.serve(config: sandbox.configPath)
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1, totalTimeoutMilliseconds: 60_000))

        func health() async throws -> (Int, String) {
            let response = try await client.execute(CurlRequest(method: "GET", url: server + "/healthz"))
            return (response.status, response.bodyText)
        }
        func register() async throws -> (Int, String, Duration) {
            let started = ContinuousClock.now
            let response = try await client.execute(CurlRequest(method: "POST", url: server + "/api/register", headers: [Self.bob]))
            return (response.status, response.bodyText, ContinuousClock.now - started)
        }
        func waitFor(_ status: Int, seconds: Int) async throws -> (Int, String) {
            try await eventually(timeout: .seconds(seconds), every: .milliseconds(200)) {
                try await health()
            } until: {
                $0.0 == status
            }
        }

        #expect(try await health().0 == 200)
        #expect(try await register().0 == 200)

        _ = try await Self.script(["pause", cluster])
        let down = try await waitFor(503, seconds: 10)
        #expect(down.0 == 503 && down.1.contains("database unavailable"), "\(down)")
        let refused = try await register()
        #expect(refused.0 == 503, "\(refused)")
        #expect(refused.1.contains("database is unavailable"), "\(refused.1)")
        #expect(refused.2 < .seconds(8), "a call waited \(refused.2) while the database was down")

        _ = try await Self.script(["resume", cluster])
        let up = try await waitFor(200, seconds: 20)
        #expect(up.0 == 200, "\(up)")
        let again = try await register()
        #expect(again.0 == 200, "\(again)")
        #expect(gateway.text.contains("PostgreSQL postgres://postgres@127.0.0.1"))
        #expect(!gateway.text.lowercased().contains("password="))
        await client.shutdown()
        #expect(try await gateway.terminate() == 0)
        #expect(try await sandbox.process.terminate() == 0)
    }

    /// Runs scripts/postgres.sh; its standard output. Through `system(3)` on a thread of its own:
    /// Foundation's `Process` did not notice the script's exit once it had started a server.
    static func script(_ arguments: [String]) async throws -> String {
        let output = NSTemporaryDirectory() + "pushgate-postgres-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let command =
            "cd '\(PushgateProcess.repositoryRoot)' && bash scripts/postgres.sh "
            + arguments.map { "'\($0)'" }.joined(separator: " ") + " > '\(output)'"
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: system(command)) }.start()
        }
        guard status == 0 else { throw StoreError(.storage, "scripts/postgres.sh \(arguments) failed (\(status))") }
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }
}

/// `pushgate store migrate` and `pushgate store copy`, SQLite → PostgreSQL and back.
@Suite(.enabled(if: PostgresTesting.isAvailable)) struct StoreCopyTests {
    static func config(in folder: String, store: [String: Any]) throws -> String {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/config.json"
        let templates = ["notify": ["apns": ["body": #"{"aps":{"alert":"$(message)"}}"#]]]
        try JSONSerialization.data(withJSONObject: ["store": store, "apps": ["default": ["templates": templates]]])
            .write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func registrationsCopyFromSQLiteToPostgreSQLAndBackResumingAfterACheckpoint() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-copy-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let database = try await PostgresTesting.freshDatabase(prefix: "copy")
        let sqliteConfig = try Self.config(in: folder + "/a", store: ["sqlite": ["path": "a.sqlite"]])
        let postgresConfig = try Self.config(
            in: folder + "/b", store: ["postgres": ["url": "\(database.url.description)?sslmode=disable"]])
        let backConfig = try Self.config(in: folder + "/c", store: ["sqlite": ["path": "c.sqlite"]])

        let source = try await SQLiteStore.open(path: folder + "/a/a.sqlite")
        let registrations = try (0..<5_000).map { index in
            try Registration(
                id: try RegistrationID(String(format: "c%06d", index)),
                handle: DeviceHandle(uncheckedPlatform: index % 2 == 0 ? .apns : .fcm, value: String(format: "handle%06d", index)),
                tags: [try Tag.username("u\(index % 7)"), try Tag("news")],
                expiresAt: index % 10 == 0 ? RegistrationSeeds.now.adding(seconds: 86400 * 365) : nil, owner: "u\(index % 7)")
        }
        try await source.restore(registrations, now: RegistrationSeeds.now)

        let migrated = try await PushgateProcess.run(["store", "migrate", "--config", postgresConfig])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.stdout.contains("PostgreSQL postgres://postgres@127.0.0.1"), "\(migrated.stdout)")
        #expect(migrated.stdout.contains("schema version \(PostgresStore.currentSchemaVersion)"), "\(migrated.stdout)")

        let copied = try await PushgateProcess.run(["store", "copy", "--from", sqliteConfig, "--to", postgresConfig, "--batch-size", "700"])
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(copied.stdout.contains("app default: 5000 registrations copied"), "\(copied.stdout)")

        let target = try await PostgresStore.open(settings: database, password: nil)
        for id in ["c000000", "c002501", "c004999"] {
            let original = try await source.registration(id: try RegistrationID(id), app: .default)
            #expect(try await target.registration(id: try RegistrationID(id), app: .default) == original)
        }

        // Added since: a second run resumes after the checkpoint and copies only those.
        try await source.restore(
            try (5_000..<5_010).map { index in
                try Registration(
                    id: try RegistrationID(String(format: "c%06d", index)),
                    handle: DeviceHandle(uncheckedPlatform: .apns, value: "late\(index)"), tags: [try Tag("news")], owner: "late")
            }, now: RegistrationSeeds.now)
        let resumed = try await PushgateProcess.run(["store", "copy", "--from", sqliteConfig, "--to", postgresConfig])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("resuming after c004999"), "\(resumed.stdout)")
        #expect(resumed.stdout.contains("app default: 10 registrations copied"), "\(resumed.stdout)")

        let back = try await PushgateProcess.run(["store", "copy", "--from", postgresConfig, "--to", backConfig])
        #expect(back.status == 0, "\(back.stderr)")
        #expect(back.stdout.contains("app default: 5010 registrations copied"), "\(back.stdout)")
        let returned = try await SQLiteStore.open(path: folder + "/c/c.sqlite")
        var count = 0
        for try await page in returned.registrations(
            matching: nil, platforms: .all, app: .default, batchSize: 1000, now: RegistrationSeeds.now)
        {
            count += page.count
        }
        #expect(count == 5_010)
        #expect(
            try await returned.registration(id: try RegistrationID("c000010"), app: .default)
                == (try await source.registration(id: try RegistrationID("c000010"), app: .default)))
        await target.close()
    }
}
