import ArgumentParser
import Foundation
import Pushgate
import PushgateCurl
import PushgateServer

/// `pushgate notifications list|show|cancel`: the outbox of a running gateway.
struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "List, inspect and cancel the notifications of a running gateway (its outbox and their telemetry).",
        subcommands: [List.self, Show.self, Cancel.self])

    struct Connection: ParsableArguments {
        @Option(help: "The gateway's base URL.")
        var server: String = "http://127.0.0.1:8080"

        @Option(help: "Credentials as name:password (admins see every sender's notifications).")
        var user: String

        func validate() throws {
            guard user.contains(":") else { throw ValidationError("--user must be name:password") }
            guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
                throw ValidationError("--server must be an http:// or https:// URL")
            }
        }

        /// Calls the gateway; exits 3 when it cannot be reached, 2 when it refuses.
        func call(_ method: String, _ path: String, accept: String = "application/json") async throws -> CurlResponse {
            let client = try CurlHTTPClient(
                configuration: .init(httpVersion: .http1, connectTimeoutMilliseconds: 5000, totalTimeoutMilliseconds: 60_000))
            let headers: [(name: String, value: String)] = [
                ("Authorization", "Basic \(Data(user.utf8).base64EncodedString())"), ("Accept", accept),
            ]
            let url = server.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + path
            let response: CurlResponse
            do {
                response = try await client.execute(CurlRequest(method: method, url: url, headers: headers))
            } catch {
                await client.shutdown()
                printError("error: cannot reach the gateway at \(server): \(error.message)")
                throw ExitCode(3)
            }
            await client.shutdown()
            guard (200..<300).contains(response.status) else {
                let reason = (try? JSONParser.parse(response.body))?["error"]?.stringValue ?? response.bodyText
                printError("error: the gateway answered \(response.status): \(reason)")
                throw ExitCode(2)
            }
            return response
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The newest notifications: yours, or everyone's for an admin.")

        @OptionGroup var connection: Connection

        @Option(help: "How many (1…1000).")
        var limit: Int = 20

        @Option(help: "Only this sender's (admins).")
        var sender: String?

        @Flag(help: "Print the gateway's JSON.")
        var json = false

        func run() async throws {
            var path = "/api/notifications?limit=\(limit)"
            if let sender { path += "&sender=\(SendNotificationCommand.encode(sender))" }
            let response = try await connection.call("GET", path)
            if json {
                print(response.bodyText)
                return
            }
            let records = try JSONDecoder().decode([NotificationRecordBody].self, from: Data(response.body))
            print("id                                    state           sender      enqueued                  delivered/targets")
            for record in records {
                let state = record.state.padding(toLength: 15, withPad: " ", startingAt: 0)
                let sender = DemoOutput.clip(record.sender, 11).padding(toLength: 11, withPad: " ", startingAt: 0)
                print("\(record.notificationId)  \(state) \(sender) \(record.enqueueTime)  \(record.success)/\(record.targetsText)")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A notification's telemetry: state, times, counts per platform and outcome, failed targets.")

        @OptionGroup var connection: Connection

        @Argument(help: "The notification id.")
        var id: String

        func validate() throws {
            guard !id.isEmpty, id.utf8.count <= 64 else { throw ValidationError("give a notification id (1 to 64 characters)") }
        }

        @Flag(help: "Print the gateway's JSON.")
        var json = false

        @Flag(help: "Print Notification Hubs' NotificationDetails XML.")
        var xml = false

        func run() async throws {
            let path = "/api/notifications/\(SendNotificationCommand.encode(id))/outcome"
            if xml {
                print(try await connection.call("GET", path, accept: "application/xml").bodyText)
                return
            }
            let response = try await connection.call("GET", path + "?failedLimit=1000")
            if json {
                print(response.bodyText)
                return
            }
            try JSONDecoder().decode(NotificationRecordBody.self, from: Data(response.body)).printReport()
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a scheduled or running notification; targets not yet sent are counted Cancelled.")

        @OptionGroup var connection: Connection

        @Argument(help: "The notification id.")
        var id: String

        func validate() throws {
            guard !id.isEmpty, id.utf8.count <= 64 else { throw ValidationError("give a notification id (1 to 64 characters)") }
        }

        func run() async throws {
            let response = try await connection.call("DELETE", "/api/notifications/\(SendNotificationCommand.encode(id))")
            try JSONDecoder().decode(NotificationRecordBody.self, from: Data(response.body)).printReport()
        }
    }
}

/// How the command line shows a notification's telemetry.
extension NotificationRecordBody {
    var isFinal: Bool { NotificationState(rawValue: state)?.isFinal ?? true }

    /// "1,000" once the audience is known, "≥ 1,000" while it is still being read.
    var targetsText: String { audienceComplete ? targets.formatted() : "≥\(targets.formatted())" }

    func printReport() {
        print("notification \(notificationId): \(state)")
        print("  sender \(sender), pns \(pns), tags \(tags)")
        print("  enqueued \(enqueueTime)" + (deliverAt.map { ", scheduled for \($0)" } ?? ""))
        if let startTime { print("  started  \(startTime)") }
        if let endTime { print("  ended    \(endTime)") }
        print(
            "  \(processed.formatted()) of \(targetsText) targets processed: \(success.formatted()) delivered, \(failure.formatted()) failed"
                + (cancelled > 0 ? ", \(cancelled.formatted()) cancelled" : "")
        )
        for platform in platforms where platform.total > 0 {
            let counts = platform.sortedCounts.map { "\($0.outcome) \($0.count.formatted())" }.joined(separator: ", ")
            print("  \(platform.platform.serviceName): \(counts)")
        }
        if let failedTargets, !failedTargets.isEmpty {
            print("failed targets:")
            print("\(DemoOutput.platformHeading) outcome          status  registration")
            for target in failedTargets {
                let platform = target.platform.paddedServiceName
                let outcome = target.outcome.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0)
                let status = String(target.statusCode ?? 0).padding(toLength: 7, withPad: " ", startingAt: 0)
                print("\(platform) \(outcome) \(status) \(target.registrationID.rawValue)  \(target.reason ?? "")")
            }
        }
    }
}
