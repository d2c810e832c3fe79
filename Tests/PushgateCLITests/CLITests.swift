import Foundation
import Pushgate
import PushgateCurl
import PushgateDispatch
import PushgateLocal
import PushgateSQLite
import PushgateTesting
import Synchronization
import Testing

@Suite struct CLITests {
    @Test func templatesCheckAcceptsTheShippedConfiguration() throws {
        let result = try PushgateProcess.run(["templates", "check"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains("ok  notify.apns  json  properties: message, user  headers: apns-push-type: alert; apns-priority: 10"))
        #expect(result.stdout.contains("ok  secure.wns  raw"))
        #expect(result.stdout.contains("configuration config.json is valid"))
    }

    @Test func templatesCheckFailsOnABrokenTemplateNamingIt() throws {
        let folder = NSTemporaryDirectory() + "pushgate-cli-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try #"{"apps": {"default": {"templates": {"notify": {"apns": {"body": "{\"aps\": {\"alert\": \"$(msg\"}}"}}}}}}"#
            .write(toFile: folder + "/config.json", atomically: true, encoding: .utf8)
        let result = try PushgateProcess.run(["templates", "check"], in: folder)
        #expect(result.status == 1)
        #expect(result.stderr.contains("config.json: $.apps.default.templates.notify.apns: APNs template"))
        #expect(result.stderr.contains("missing ')' to close $("))
    }

    @Test func templatesCheckWithSecretsReportsUnreadableSecretsWithoutValues() throws {
        let result = try PushgateProcess.run(["templates", "check", "--secrets"])
        #expect(result.status == 1)
        #expect(
            result.stdout.contains("FAIL secret gcm.serverKey: secret from environment variable PUSHGATE_GCM_SERVER_KEY is not set")
                || result.stdout.contains("ok  secret gcm.serverKey"))
        #expect(result.stdout.contains("FAIL secret apns.token.privateKey"))
    }

    @Test func templatesRenderPrintsHeadersAndEscapedPayloads() throws {
        let result = try PushgateProcess.run([
            "templates", "render", "--pns", "apns,wns", "--set", "user=al\"ice", "--set", "message=a<b & c",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "== apns (json)\nContent-Type: application/json\napns-push-type: alert\napns-priority: 10\n\n{\"aps\":{\"alert\":\"From al\\\"ice: a<b & c\"}}"
            ))
        #expect(result.stdout.contains("<text id=\"1\">From al&quot;ice: a&lt;b &amp; c</text>"))
        #expect(!result.stdout.contains("== fcm"))
    }

    @Test func templatesRenderRejectsAnUnknownPlatform() throws {
        let result = try PushgateProcess.run(["templates", "render", "--pns", "mpns"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("pns 'mpns' is not a known platform"))
    }

    @Test func templatesRenderReportsOversizedPayloads() throws {
        let result = try PushgateProcess.run([
            "templates", "render", "--pns", "apns", "--set", "message=" + String(repeating: "x", count: 5000),
        ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("error: apns: APNs payload is"))
        #expect(result.stderr.contains("the limit is 4096 bytes"))
    }

    @Test func badSetArgumentsAreExplained() throws {
        let result = try PushgateProcess.run(["templates", "render", "--set", "novalue"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--set 'novalue' must have the form name=value"))
    }

    @Test func versionNamesTheLinkedLibraries() throws {
        let result = try PushgateProcess.run(["version"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("libcurl"))
        #expect(result.stdout.contains("HTTP/2"))
        #expect(result.stdout.contains("libxml2 2."))
    }
}

@Suite struct SandboxCommandTests {
    @Test func runsUntilSIGTERMAndWritesAConfigurationThatChecksClean() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-sandbox-cli-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sandbox = try RunningProcess(["sandbox", "--dir", folder])
        // The banner is written once every listener is up.
        let banner = try await sandbox.waitFor("gateway   ")
        #expect(banner.contains("Pushgate sandbox running"))
        #expect(banner.contains("APNs      https://127.0.0.1:"))

        let check = try await PushgateProcess.run(["templates", "check", "--secrets", "--config", folder + "/config.json"])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("ok  secret fcm.serviceAccount"))

        #expect(try await sandbox.terminate() == 0)
        #expect(sandbox.text.contains("sandbox stopped"))
    }
}

@Suite struct DemoCommandTests {
    @Test func theDemoRunsEveryStepAndFitsEightyColumns() throws {
        let result = try PushgateProcess.run(["demo"])
        #expect(result.status == 0, "\(result.stderr)")
        for heading in ["== 1.", "== 2.", "== 3.", "== 4.", "== 5.", "== all steps worked"] {
            #expect(result.stdout.contains(heading), "missing \(heading)")
        }
        #expect(result.stdout.contains("state Completed: \(Platform.allCases.count) delivered, 0 failed"))
        #expect(result.stdout.contains(#"{"web_push":8030,"notification":{"title":"From bob","body":"Hello from Pushg"#))
        #expect(result.stdout.contains(#"{"aps":{"alert":"From bob: Hello from Pushgate"}}"#))
        #expect(result.stdout.contains("APNs answered that the device is gone -> ExpiredChannel"))
        #expect(result.stdout.contains(#"alice fetched it with her credentials: "Your code is 4711""#))
        #expect(result.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 })
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }
}

@Suite struct DemoKeepRunningTests {
    /// `pushgate demo --keep-running` as a new user leaves it: its lines appear as they happen
    /// with its output in a pipe, and SIGTERM (as SIGINT) stops it at once, with 0, removing the
    /// folder it made (keys, store).
    @Test(arguments: [SIGTERM, SIGINT]) func aDemoLeftRunningWritesAsItGoesAndStopsOnASignal(signal: Int32) async throws {
        let demo = try RunningProcess(["demo", "--keep-running"])
        let text = try await demo.waitFor("sandbox control API:", seconds: 120)
        let config = try #require(
            text.split(separator: "\n").first { $0.contains("gateway config: ") }.map {
                String($0.split(separator: " ").last ?? "")
            })
        let folder = (config as NSString).deletingLastPathComponent
        #expect(FileManager.default.fileExists(atPath: config), "\(config)")
        kill(demo.processIdentifier, signal)
        #expect(try await demo.waitForExit(seconds: 20) == 0, "\(demo.text.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: folder), "\(folder) is left behind")
        #expect(demo.text.contains("stopping:"), "\(demo.text.suffix(500))")
    }
}

@Suite struct SendCommandTests {
    @Test func sendPrintsTheOutcomesAndExitsByWhatHappened() async throws {
        let local = try await LocalGateway.start()
        do {
            let device = await local.sandbox.createDevice(.apns)
            _ = try await local.register(device, user: "alice")
            let sent = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--pns", "apns", "--to-tag", "alice", "Hi from the CLI",
            ])
            #expect(sent.status == 0, "\(sent.stderr)")
            // bob sees what his send did to alice's device, not which device it was.
            #expect(sent.stdout.contains("\(Platform.apns.paddedServiceName) Success 1"), "\(sent.stdout)")
            #expect(sent.stdout.contains("state Completed: 1 delivered, 0 failed"))
            #expect(await local.sandbox.state.inbox(deviceID: device.id).last?.payload == #"{"aps":{"alert":"From bob: Hi from the CLI"}}"#)

            let asJSON = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--to-tag", "alice", "--json", "x",
            ])
            #expect(try JSONParser.parse(Array(asJSON.stdout.utf8))["success"]?.kind == .number("1"))
            let asXML = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--to-tag", "alice", "--xml", "x",
            ])
            #expect(asXML.stdout.contains("<NotificationOutcome"))

            let nobody = try await PushgateProcess.run(["send", "--server", local.baseURL, "--user", "bob:bob", "--to-tag", "nobody", "x"])
            #expect(nobody.status == 1)
            #expect(nobody.stdout.contains("NoTargetFound"))

            let wrong = try await PushgateProcess.run(["send", "--server", local.baseURL, "--user", "bob:nope", "--to-tag", "alice", "x"])
            #expect(wrong.status == 2)
            #expect(wrong.stderr.contains("refused the credentials for 'bob' (401)"))

            let unknown = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--pns", "mpns", "--to-tag", "alice", "x",
            ])
            #expect(unknown.status != 0)
            #expect(unknown.stderr.contains("pns 'mpns' is not a known platform"))

            // An FCM topic instead of tags.
            let listener = await local.sandbox.createDevice(.fcm)
            _ = local.sandbox.state.changeSubscriptions(tokens: [listener.handle], topic: "news", subscribe: true)
            let topic = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--pns", "fcm", "--topic", "news", "--ttl", "600", "To the topic",
            ])
            #expect(topic.status == 0, "\(topic.stdout) \(topic.stderr)")
            let received = try #require(await local.sandbox.state.inbox(deviceID: listener.id).last?.payload)
            #expect(received.contains(#""topic":"news""#) && received.contains(#""ttl":"600s""#), "\(received)")
            let both = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--topic", "news", "--to-tag", "alice", "x",
            ])
            #expect(both.status != 0 && both.stderr.contains("give one of --to-tag"), "\(both.stderr)")
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }

    /// `send --async` prints the id; `send --at … --wait` follows a scheduled send to its report;
    /// `notifications list|show|cancel` read and stop the outbox.
    @Test func asynchronousScheduledAndCancelledSendsFromTheCommandLine() async throws {
        let local = try await LocalGateway.start()
        do {
            let device = await local.sandbox.createDevice(.apns)
            _ = try await local.register(device, user: "alice")
            let server = ["--server", local.baseURL, "--user", "bob:bob"]
            let queued = try await PushgateProcess.run(["send"] + server + ["--pns", "apns", "--to-tag", "alice", "--async", "queued"])
            #expect(queued.status == 0, "\(queued.stderr)")
            let id = queued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(id.count == 36, "\(queued.stdout)")
            #expect(queued.stderr.contains("pushgate notifications show \(id)"))

            let soon = RFC3339.format(Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970 + 4))
            let waited = try await PushgateProcess.run(
                ["send"] + server + ["--pns", "apns", "--to-tag", "alice", "--at", soon, "--wait", "at four"])
            #expect(waited.status == 0, "\(waited.stderr)")
            #expect(
                waited.stdout.contains(": Completed") && waited.stdout.contains("1 of 1 targets processed: 1 delivered, 0 failed"),
                "\(waited.stdout)")
            #expect(waited.stdout.contains("scheduled for \(soon)"), "\(waited.stdout)")

            let later = RFC3339.format(Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970 + 3600))
            let pending = try await PushgateProcess.run(["send"] + server + ["--pns", "apns", "--to-tag", "alice", "--at", later, "later"])
            let pendingID = pending.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let listed = try await PushgateProcess.run(["notifications", "list"] + server)
            #expect(listed.status == 0)
            #expect(
                listed.stdout.contains(pendingID) && listed.stdout.contains("Scheduled") && listed.stdout.contains(id), "\(listed.stdout)")
            let cancelled = try await PushgateProcess.run(["notifications", "cancel"] + server + [pendingID])
            #expect(cancelled.status == 0, "\(cancelled.stderr)")
            #expect(
                cancelled.stdout.contains("notification \(pendingID): Cancelled") && cancelled.stdout.contains("1 cancelled"),
                "\(cancelled.stdout)")
            let again = try await PushgateProcess.run(["notifications", "cancel"] + server + [pendingID])
            #expect(again.status == 2 && again.stderr.contains("409"), "\(again.stderr)")
            let shown = try await PushgateProcess.run(["notifications", "show"] + server + [id])
            #expect(shown.stdout.contains("notification \(id): Completed") && shown.stdout.contains("APNs: Success 1"), "\(shown.stdout)")
            let xml = try await PushgateProcess.run(["notifications", "show", "--xml"] + server + [id])
            #expect(xml.stdout.contains("<NotificationDetails"))
            let stranger = try await PushgateProcess.run(["notifications", "show", "--server", local.baseURL, "--user", "carol:carol", id])
            #expect(stranger.status == 2 && stranger.stderr.contains("404"))
            let badTime = try await PushgateProcess.run(["send"] + server + ["--to-tag", "alice", "--at", "tomorrow", "x"])
            #expect(badTime.status != 0 && badTime.stderr.contains("--at: 'tomorrow' is not an RFC 3339 date-time"), "\(badTime.stderr)")
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }

    @Test func sendExplainsAnUnreachableGatewayAndMissingArguments() throws {
        let unreachable = try PushgateProcess.run(["send", "--server", "http://127.0.0.1:9", "--user", "bob:bob", "--to-tag", "alice", "x"])
        #expect(unreachable.status == 3)
        #expect(unreachable.stderr.contains("cannot reach the gateway at http://127.0.0.1:9"))
        let noUser = try PushgateProcess.run(["send", "--to-tag", "alice", "x"])
        #expect(noUser.status != 0)
        #expect(noUser.stderr.contains("--user"))
        let noTarget = try PushgateProcess.run(["send", "--user", "bob:bob", "x"])
        #expect(noTarget.stderr.contains("give one of --to-tag (a user name), --tags (a tag expression), --topic or --condition"))
    }
}

@Suite struct RegistrationsCommandTests {
    @Test func listShowDeleteExportAndImportWorkOnTheStoreOfARunningGateway() async throws {
        let local = try await LocalGateway.start()
        do {
            let config = local.directory + "/config.json"
            var ids: [String] = []
            for platform in Platform.allCases {
                ids.append(try await local.register(await local.sandbox.createDevice(platform), user: "alice", tags: ["news"]))
            }
            ids.append(try await local.register(await local.sandbox.createDevice(.apns), user: "bob"))

            let all = try await PushgateProcess.run(["registrations", "list", "--config", config])
            #expect(all.status == 0, "\(all.stderr)")
            #expect(all.stdout.hasSuffix("\(ids.count) registrations\n"))
            for id in ids { #expect(all.stdout.contains(id)) }
            let news = try await PushgateProcess.run([
                "registrations", "list", "--config", config, "--tags", "news && !username:bob", "--pns", "apns,wns",
            ])
            #expect(news.stdout.hasSuffix("2 registrations\n"), "\(news.stdout)")
            let limited = try await PushgateProcess.run(["registrations", "list", "--config", config, "--limit", "2"])
            #expect(limited.stdout.hasSuffix("2 shown; more match (raise --limit, or export)\n"))

            let shown = try await PushgateProcess.run(["registrations", "show", "--config", config, ids[0]])
            let registration = try Registration(
                jsonLine: shown.stdout.trimmingCharacters(in: .newlines), app: .default,
                handles: HandlePolicy(wnsChannelHosts: [local.sandbox.endpoints.wnsChannelHost]))
            #expect(registration.id.rawValue == ids[0] && registration.owner == .user("alice"))

            // Export, delete two, import the export: everything is back, ids unchanged.
            let exportPath = local.directory + "/export.jsonl"
            let exported = try await PushgateProcess.run(["registrations", "export", "--config", config, "--output", exportPath])
            #expect(exported.status == 0 && exported.stderr.contains("exported \(ids.count) registrations"))
            #expect((try FileManager.default.attributesOfItem(atPath: exportPath)[.posixPermissions] as? Int) == 0o600)
            let deleted = try await PushgateProcess.run(["registrations", "delete", "--config", config, ids[0], ids[4]])
            #expect(deleted.status == 0 && deleted.stdout.contains("deleted \(ids[4])"))
            #expect(try await local.store.registration(id: try RegistrationID(ids[0]), app: .default) == nil)
            let again = try await PushgateProcess.run(["registrations", "delete", "--config", config, ids[0]])
            #expect(again.status == 1 && again.stderr.contains("not found: \(ids[0])"))
            // A dry run reads every line and writes nothing.
            let valid = try await PushgateProcess.run(["registrations", "import", "--config", config, "--dry-run", exportPath])
            #expect(valid.stdout == "\(ids.count) registrations valid; nothing written (--dry-run)\n", "\(valid.stderr)")
            #expect(try await local.store.registration(id: try RegistrationID(ids[0]), app: .default) == nil)
            // Standard input is read once, as a file is.
            let imported = try await PushgateProcess.run(["registrations", "import", "--config", config, "-"], standardInput: exportPath)
            #expect(imported.stdout == "imported \(ids.count) registrations into app default\n", "\(imported.stderr)")
            #expect(try await local.store.registration(id: try RegistrationID(ids[0]), app: .default)?.owner == .user("alice"))
            // The restored device still receives: the gateway finds it by tag.
            let sent = try await local.call("POST", "/api/notifications?pns=all&to_tag=bob", user: "alice", body: #""back""#)
            #expect(sent.status == 200 && sent.bodyText.contains(#""success":1"#))

            // One bad line: every error is named by line, and nothing is written.
            var lines = try String(contentsOfFile: exportPath, encoding: .utf8).split(separator: "\n").map(String.init)
            lines[1] = lines[1].replacingOccurrences(of: #""platform":""#, with: #""platform":"x"#)
            lines.append(#"{"id":"00000000000000000000000000000001","platform":"apns","handle":"zz","owner":"eve"}"#)
            try (lines.joined(separator: "\n") + "\n").write(toFile: exportPath, atomically: true, encoding: .utf8)
            try await local.store.restore([], now: Timestamp(secondsSinceEpoch: 0))
            _ = try await PushgateProcess.run(["registrations", "delete", "--config", config, ids[1]])
            let refused = try await PushgateProcess.run(["registrations", "import", "--config", config, exportPath])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("\(exportPath):2: 'platform': 'x"))
            #expect(
                refused.stderr.contains(
                    "\(exportPath):\(ids.count + 1): 'handle': APNs device token has an invalid character 'z' at position 1"))
            #expect(refused.stderr.contains("nothing imported: 2 invalid lines"))
            #expect(try await local.store.registration(id: try RegistrationID(ids[1]), app: .default) == nil)
            let dry = try await PushgateProcess.run(["registrations", "import", "--config", config, "--dry-run", exportPath])
            #expect(dry.status == 1)

            // A repeated id, a byte that is not UTF-8, a 2 MiB line: each named, nothing written.
            let good = try String(contentsOfFile: exportPath, encoding: .utf8).split(separator: "\n").map(String.init)[0]
            var hostile = Data((good + "\n" + good + "\n").utf8)
            hostile.append(contentsOf: Array(#"{"id":"0000000000000000000000000000000f","owner":"a"#.utf8) + [0xFF] + Array("\"}\n".utf8))
            hostile.append(Data(String(repeating: "x", count: 2 << 20).utf8) + Data("\n".utf8))
            try hostile.write(to: URL(fileURLWithPath: exportPath))
            let hostileImport = try await PushgateProcess.run(["registrations", "import", "--config", config, exportPath])
            #expect(hostileImport.status == 1)
            #expect(hostileImport.stderr.contains("\(exportPath):2: id: duplicate of line 1"), "\(hostileImport.stderr)")
            #expect(hostileImport.stderr.contains("\(exportPath):3:52: invalid UTF-8: byte 0xFF"), "\(hostileImport.stderr)")
            #expect(hostileImport.stderr.contains("\(exportPath):4: the line is 2097152 bytes long; the limit is 1048576 bytes (1 MiB)"))

            let badExpression = try await PushgateProcess.run(["registrations", "list", "--config", config, "--tags", "a &&"])
            #expect(badExpression.status != 0 && badExpression.stderr.contains("tag expression"))
            let badID = try await PushgateProcess.run(["registrations", "show", "--config", config, "not-an-id!"])
            #expect(badID.status == 1 && badID.stderr.contains("not-an-id!"))
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}

@Suite struct SendProgressTests {
    @Test func sendShowsProgressLinesWhileAFanOutRuns() async throws {
        let local = try await LocalGateway.start()
        do {
            let devices = try await RegistrationSeeds.sandboxDevices(600, .gcm, in: local.sandbox, user: "dave")
            try await local.store.restore(devices, now: RegistrationSeeds.now)
            let sent = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--to-tag", "dave", "--progress", "Hello, 600 devices",
            ])
            #expect(sent.status == 0, "\(sent.stderr)")
            // A line per batch (500 and 100, in the order they finish), then every device.
            #expect(
                sent.stderr.contains("500 devices answered, 500 delivered") || sent.stderr.contains("100 devices answered, 100 delivered"))
            #expect(sent.stderr.contains("600 devices answered, 600 delivered"))
            #expect(sent.stdout.contains("state Completed: 600 delivered, 0 failed"))
            let quiet = try await PushgateProcess.run([
                "send", "--server", local.baseURL, "--user", "bob:bob", "--to-tag", "dave", "--no-progress", "x",
            ])
            #expect(quiet.status == 0 && !quiet.stderr.contains("answered"))
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}

@Suite struct ServeCommandTests {
    /// `pushgate serve` on the configuration `pushgate sandbox` writes: a clear start-up log without
    /// secrets, the API answering, and a graceful stop on SIGTERM.
    @Test func servesTheSandboxConfigurationLogsNoSecretsAndStopsOnSIGTERM() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-serve-cli-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sandbox = try RunningProcess(["sandbox", "--dir", folder, "--gateway-port", "0"])
        _ = try await sandbox.waitFor("gateway   ")
        let (serve, server) = try await RunningProcess.serve(config: folder + "/config.json")

        let nobody = try await PushgateProcess.run(["send", "--server", server, "--user", "bob:bob", "--to-tag", "nobody", "hello"])
        #expect(nobody.status == 1, "\(nobody.stderr)")
        #expect(nobody.stdout.contains("NoTargetFound"))
        let wrong = try await PushgateProcess.run(["send", "--server", server, "--user", "bob:nope", "--to-tag", "alice", "hello"])
        #expect(wrong.status == 2)

        #expect(try await serve.terminate() == 0)
        #expect(try await sandbox.terminate() == 0)
        let text = serve.text
        for expected in [
            "store: SQLite", "(schema 11)", "service APNs: https://127.0.0.1:", "service WNS: https://127.0.0.1:", "web console: /console",
            "sandbox mode", "DEMO AUTHENTICATION IS ON", "stopped",
        ] {
            #expect(text.contains(expected), "missing '\(expected)' in:\n\(text)")
        }
        // No secret the sandbox wrote appears in the log.
        for file in ["gcm-server-key.txt", "wns-client-secret.txt"] {
            let secret = try String(contentsOfFile: folder + "/" + file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!secret.isEmpty && !text.contains(secret), "\(file) leaked")
        }
        #expect(!text.contains("PRIVATE KEY"))
    }

    /// SIGTERM while a send to 20,000 devices is in flight (each push answered after 100 ms): the
    /// gateway stops claiming pages, gives the pages out `listener.shutdownDeadlineSeconds` (2
    /// here), cancels the rest — its caller gets 202 with what was reached — releases its leases,
    /// closes the curl pools, exits 0. The next start resumes the send at once and every target
    /// ends with exactly one outcome.
    @Test func sigtermDuringALargeSendExitsWithinTheShutdownDeadline() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-serve-deadline-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sandbox = try await StandingSandbox.start(in: folder) { config in
            var listener = config["listener"] as? [String: Any] ?? [:]
            listener["shutdownDeadlineSeconds"] = 2
            config["listener"] = listener
        }

        // 20,000 of carol's devices in the gateway's store, each push answered after 100 ms.
        let store = try await SQLiteStore.open(path: sandbox.storePath)
        try await store.restore(try RegistrationSeeds.apns(count: 20_000, user: "carol", idPrefix: "d"), now: RegistrationSeeds.now)
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1))
        let scripted = try await client.execute(
            CurlRequest(
                method: "POST", url: sandbox.control + "/faults", headers: [("Content-Type", "application/json")],
                body: Array(#"{"service":"apns","count":1000000,"action":{"delay":{"milliseconds":100}}}"#.utf8)))
        await client.shutdown()
        #expect(scripted.status == 201)

        let (serve, server) = try await RunningProcess.serve(config: sandbox.configPath)
        // A scheduled send, due after the restart (20 s on), survives it.
        let scheduled = try RunningProcess([
            "send", "--server", server, "--user", "bob:bob", "--pns", "apns", "--to-tag", "dave",
            "--at", RFC3339.format(Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970 + 20)), "due after the restart",
        ])
        #expect(try await scheduled.waitForExit(seconds: 60) == 0, "\(scheduled.text)")
        let scheduledID = scheduled.text.split(separator: "\n").first { $0.count == 36 }.map(String.init) ?? ""
        let send = try RunningProcess([
            "send", "--server", server, "--user", "bob:bob", "--pns", "apns", "--to-tag", "carol", "--json",
            "hello",
        ])
        // SIGTERM once the send is on the wire: the sandbox has answered some of its pushes.
        let answered = try await eventually(timeout: .seconds(30)) {
            await OutboxRecoveryTests.sandboxAnswered(control: sandbox.control)
        } until: {
            $0 > 0
        }
        #expect(answered > 0, "the send never reached the sandbox: \(send.text.prefix(300))")
        #expect(serve.isRunning, "the send finished before SIGTERM: \(send.text.prefix(300))")
        let started = ContinuousClock.now
        let status = try await serve.terminate(seconds: 30)
        let elapsed = ContinuousClock.now - started
        #expect(status == 0, "\(serve.text.suffix(2000))")
        // Deadline 2 s, then cancellation, not a wait for the whole send (minutes).
        #expect(elapsed < .seconds(9), "exit took \(elapsed)")
        _ = try await send.waitForExit(seconds: 20)
        #expect(send.text.contains("shutting down"), "\(send.text.prefix(600))")
        #expect(serve.text.contains("stopped"))
        let id = try #require(
            send.text.components(separatedBy: #""notificationId":""#).dropFirst().first?.prefix(while: { $0 != "\"" }).description)

        // The next start takes the released work at once and finishes it. The sandbox answers at
        // once from here on: what is checked is what was recorded (every target once, the state),
        // not how fast a loaded machine gets through 18,000 slow answers.
        let cleared = try CurlHTTPClient(configuration: .init(httpVersion: .http1))
        let removed = try await cleared.execute(CurlRequest(method: "DELETE", url: sandbox.control + "/faults"))
        await cleared.shutdown()
        #expect(removed.status == 200 || removed.status == 204, "\(removed.bodyText)")
        let (restarted, newServer) = try await RunningProcess.serve(config: sandbox.configPath)
        let outcome = try await OutboxRecoveryTests.waitForFinal(server: newServer, id: id, seconds: 300)
        #expect(outcome["state"] as? String == "Completed", "\(outcome)")
        #expect(outcome["processed"] as? Int == 20_000, "\(outcome)")
        let due = try await OutboxRecoveryTests.waitForFinal(server: newServer, id: scheduledID, seconds: 60)
        #expect(due["state"] as? String == "NoTargetFound" && due["startTime"] is String, "\(due)")
        #expect(try await restarted.terminate() == 0)
        #expect(restarted.text.contains("resuming a notification") || restarted.text.contains("delivering a notification"))
        #expect(try await sandbox.process.terminate() == 0)
    }
}

/// `kill -9` in the middle of a broadcast, then a restart: the outbox resumes it.
@Suite struct OutboxRecoveryTests {
    /// How many APNs requests a standing sandbox has answered, whatever the status (its control
    /// API's `/stats`: `{"apns 200": N, "apns 410": M, …}`).
    static func sandboxAnswered(control: String) async -> Int {
        guard let client = try? CurlHTTPClient(configuration: .init(httpVersion: .http1)) else { return 0 }
        let response = try? await client.execute(CurlRequest(method: "GET", url: control + "/stats"))
        await client.shutdown()
        let text = response.map { String(decoding: $0.body, as: UTF8.self) } ?? ""
        return text.components(separatedBy: #""apns "#).dropFirst().reduce(0) { total, entry in
            let count = entry.drop { $0 != ":" }.dropFirst().prefix { $0.isNumber }
            return total + (Int(count) ?? 0)
        }
    }

    /// Polls a notification's telemetry (as bob) until it is final; the last answer.
    static func waitForFinal(
        server: String, id: String, seconds: Double, until: (([String: Any]) -> Bool)? = nil
    ) async throws
        -> [String: Any]
    {
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1))
        defer { Task { await client.shutdown() } }
        // A restarting gateway answers nothing for a while: such a poll reads as an empty answer.
        return try await eventually(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(200)) { () -> [String: Any] in
            guard
                let response = try? await client.execute(
                    CurlRequest(
                        method: "GET", url: server + "/api/notifications/\(id)/outcome",
                        headers: [("Authorization", "Basic " + Data("bob:bob".utf8).base64EncodedString())]))
            else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        } until: { body in
            guard !body.isEmpty else { return false }
            if let until { return until(body) }
            return ["Completed", "Abandoned", "NoTargetFound", "Cancelled"].contains(body["state"] as? String ?? "")
        }
    }

    /// 100,000 real sandbox devices; the gateway is killed with SIGKILL once 20,000 have answered,
    /// then started again (leases of 2 s, so the new process takes the dead one's work after 2 s).
    /// Every device ends with exactly one recorded outcome, every device received the message,
    /// and the devices that received it twice are at most the requests on the wire at the kill
    /// (APNs: 2 connections × 100 streams) plus one unflushed batch of answers (``AnswerFlush/count``):
    /// answers are recorded as they arrive, and the page claimed again skips them.
    @Test func killNineMidBroadcastThenRestartDeliversToEveryDeviceWithinTheInFlightWindow() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-crash-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sandbox = try await StandingSandbox.start(in: folder) { $0["outbox"] = ["leaseSeconds": 2] }

        let audience = 100_000
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1, totalTimeoutMilliseconds: 300_000))
        let created = try await client.execute(
            CurlRequest(
                method: "POST", url: sandbox.control + "/devices", headers: [("Content-Type", "application/json")],
                body: Array(#"{"platform":"apns","count":\#(audience)}"#.utf8)))
        #expect(created.status == 201)
        let devices = try #require(try JSONSerialization.jsonObject(with: Data(created.body)) as? [[String: Any]])
        #expect(devices.count == audience)
        let registrations = try devices.enumerated().map { index, device in
            try Registration(
                id: try RegistrationID(String(format: "k%07d", index)),
                handle: DeviceHandle(uncheckedPlatform: .apns, value: device["handle"] as? String ?? ""), tags: [try Tag.username("carol")],
                owner: "carol")
        }
        let store = try await SQLiteStore.open(path: sandbox.storePath)
        try await store.restore(registrations, now: RegistrationSeeds.now)

        let (first, server) = try await RunningProcess.serve(config: sandbox.configPath)
        let accepted = try await client.execute(
            CurlRequest(
                method: "POST", url: server + "/api/notifications?pns=apns&to_tag=carol",
                headers: [
                    ("Authorization", "Basic " + Data("bob:bob".utf8).base64EncodedString()), ("Content-Type", "application/json"),
                    ("Prefer", "respond-async"),
                ],
                body: Array(#""everyone, once""#.utf8)))
        #expect(accepted.status == 202, "\(accepted.bodyText)")
        let id = try #require((try JSONSerialization.jsonObject(with: Data(accepted.body)) as? [String: Any])?["notificationId"] as? String)

        let midway = try await Self.waitForFinal(server: server, id: id, seconds: 240) {
            ($0["processed"] as? Int ?? 0) >= 20_000
        }
        #expect((midway["processed"] as? Int ?? 0) < audience, "the broadcast finished before the kill: \(midway)")
        kill(first.processIdentifier, SIGKILL)
        _ = try await first.waitForExit(seconds: 10)

        let (second, newServer) = try await RunningProcess.serve(config: sandbox.configPath)
        let outcome = try await Self.waitForFinal(server: newServer, id: id, seconds: 400)
        #expect(outcome["state"] as? String == "Completed", "\(outcome)")
        #expect(outcome["processed"] as? Int == audience, "every target has exactly one outcome: \(outcome)")
        #expect(outcome["success"] as? Int == audience, "\(outcome)")
        #expect(second.text.contains("resuming a notification whose driver stopped"), "\(second.text.suffix(2000))")

        let histogram = try await DeliveryHistogram.read(from: sandbox.control, client: client)
        let twice = histogram.receivedMoreThanOnce
        let violation = histogram.violation(audience: audience, onTheWire: 2 * 100 + AnswerFlush().count)
        #expect(violation == nil, "\(violation ?? "")")
        print("kill -9 recovery: processed \(midway["processed"] ?? "?") before the kill; \(twice) devices received it twice; \(histogram)")
        await client.shutdown()
        #expect(try await second.terminate() == 0)
        #expect(try await sandbox.process.terminate() == 0)
    }
}

/// A `pushgate sandbox` process and the gateway configuration it wrote, adjusted by a test.
struct StandingSandbox {
    let process: RunningProcess
    let configPath: String
    /// The sandbox's control API.
    let control: String
    /// The gateway's SQLite file.
    let storePath: String

    static func start(in folder: String, adjust: (inout [String: Any]) -> Void) async throws -> StandingSandbox {
        let process = try RunningProcess(["sandbox", "--dir", folder, "--gateway-port", "0"])
        _ = try await process.waitFor("gateway   ")
        let configPath = folder + "/config.json"
        var config = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configPath))) as? [String: Any])
        let storeFile = try #require(((config["store"] as? [String: Any])?["sqlite"] as? [String: Any])?["path"] as? String)
        adjust(&config)
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
        let control = try #require((config["console"] as? [String: Any])?["sandboxControl"] as? String)
        return StandingSandbox(
            process: process, configPath: configPath, control: control,
            storePath: storeFile.hasPrefix("/") ? storeFile : folder + "/" + storeFile)
    }
}

/// `pushgate send --hub`: the Notification Hubs REST API over HTTPS, signed with a connection
/// string `pushgate hubs connection-string` printed.
@Suite struct HubSendCommandTests {
    @Test func sendsNativeNotificationsThroughAHubAndFollowsThemToTheEnd() async throws {
        let folder = NSTemporaryDirectory() + "pushgate-hub-send-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sandbox = try await StandingSandbox.start(in: folder) { _ in }
        let (serve, server) = try await RunningProcess.serve(config: sandbox.configPath)
        let marker = "listening on https://127.0.0.1:"
        let log = try await serve.waitFor(marker)
        let securePort = try #require(Int(log.components(separatedBy: marker).last?.prefix(while: \.isNumber) ?? ""))
        #expect(log.contains("hub default: /default/… rules: DefaultFullSharedAccessSignature (Listen, Send, Manage)"))

        // alice's device, registered through the tutorial API (username:alice).
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1))
        let created = try await client.execute(
            CurlRequest(
                method: "POST", url: sandbox.control + "/devices", headers: [("Content-Type", "application/json")],
                body: Array(#"{"platform":"apns"}"#.utf8)))
        let device = try #require(try JSONParser.parse(created.body)["handle"]?.stringValue)
        let deviceID = try #require(try JSONParser.parse(created.body)["id"]?.stringValue)
        let basic = ("Authorization", "Basic " + Data("alice:alice".utf8).base64EncodedString())
        let reserved = try await client.execute(
            CurlRequest(method: "POST", url: server + "/api/register?handle=\(device)", headers: [basic]))
        let id = String(reserved.bodyText.dropFirst().dropLast())
        let put = try await client.execute(
            CurlRequest(
                method: "PUT", url: server + "/api/register/\(id)", headers: [basic, ("Content-Type", "application/json")],
                body: Array(#"{"Platform":"apns","Handle":"\#(device)","Tags":[]}"#.utf8)))
        #expect(put.status == 200, "\(put.bodyText)")

        let connection = try await PushgateProcess.run([
            "hubs", "connection-string", "default", "--config", sandbox.configPath, "--endpoint", "127.0.0.1:\(securePort)",
        ])
        let connectionString = connection.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(connectionString.hasPrefix("Endpoint=sb://127.0.0.1:\(securePort)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;"))
        let ca = folder + "/ca.pem"
        let sent = try await PushgateProcess.run([
            "send", "--hub", "default", "--connection-string", connectionString, "--ca-file", ca, "--pns", "apns", "--to-tag", "alice",
            "hello from the hub",
        ])
        #expect(sent.status == 0, "\(sent.stdout)\n\(sent.stderr)")
        #expect(sent.stdout.contains("Completed  Success 1"), "\(sent.stdout)")
        let inbox = try await client.execute(CurlRequest(method: "GET", url: sandbox.control + "/devices/\(deviceID)/inbox"))
        #expect(inbox.bodyText.contains("hello from the hub"))

        // A test send prints NH's NotificationOutcome; a forged key is refused (exit 2).
        let test = try await PushgateProcess.run([
            "send", "--hub", "default", "--connection-string", connectionString, "--ca-file", ca, "--pns", "apns", "--to-tag", "alice",
            "--xml", "test",
        ])
        #expect(test.status == 0 && test.stdout.contains("<NotificationOutcome") && test.stdout.contains("<Success>1</Success>"))
        let key = try #require(connectionString.components(separatedBy: "SharedAccessKey=").last)
        let forged = try await PushgateProcess.run([
            "send", "--hub", "default", "--connection-string", connectionString.replacingOccurrences(of: key, with: "Zm9yZ2Vk"),
            "--ca-file",
            ca, "--pns", "apns", "--to-tag", "alice", "x",
        ])
        #expect(forged.status == 2 && forged.stderr.contains("401"), "\(forged.stderr)")
        // Without the CA, the gateway's certificate is not trusted (exit 3).
        let untrusted = try await PushgateProcess.run([
            "send", "--hub", "default", "--connection-string", connectionString, "--pns", "apns", "--to-tag", "alice", "x",
        ])
        #expect(untrusted.status == 3, "\(untrusted.stderr)")
        await client.shutdown()
        #expect(try await serve.terminate() == 0)
        #expect(try await sandbox.process.terminate() == 0)
        // The keys are never logged.
        #expect(!serve.text.contains(key))
    }
}

@Suite struct VAPIDCommandTests {
    @Test func generateMakesAPairAndPublicKeyPrintsTheConfiguredOneAfterCheckingIt() async throws {
        let generated = try await PushgateProcess.run(["vapid", "generate"])
        #expect(generated.status == 0, "\(generated.stderr)")
        let lines = generated.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(lines.count == 2 && lines[0].first == "vapidPublicKey" && lines[1].first == "vapidPrivateKey", "\(generated.stdout)")
        let publicKey = try #require(lines.first?.last.flatMap { Base64URL.decode(String($0)) })
        #expect(publicKey.count == 65 && publicKey.first == 4)
        #expect(lines.last?.last.flatMap { Base64URL.decode(String($0)) }?.count == 32)

        let local = try await LocalGateway.start()
        do {
            let config = local.directory + "/config.json"
            let shown = try await PushgateProcess.run(["vapid", "public-key", "--config", config])
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout == local.sandbox.credentials.vapidPublicKey + "\n")
            // A private key that is not the public key's pair is named, not used.
            let other = String(lines[1].last!)
            try (other + "\n").write(toFile: local.directory + "/vapid-private-key.txt", atomically: true, encoding: .utf8)
            let mismatched = try await PushgateProcess.run(["vapid", "public-key", "--config", config])
            #expect(
                mismatched.status != 0 && mismatched.stderr.contains("is not the private key of vapidPublicKey"), "\(mismatched.stderr)")
        } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }
}
