import ArgumentParser
import Foundation
import Pushgate

/// `pushgate webhooks list|retry|test`: a running gateway's outcome webhooks, through its admin
/// API (`GET /api/webhooks/parked`, `POST /api/webhooks/retry`, `POST /api/webhooks/test`).
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "List parked outcome webhook events, retry them, and post a test event to the receivers.",
        discussion: """
            Example: pushgate webhooks list --user admin:secret
            Example: pushgate webhooks retry --user admin:secret
            Example: pushgate webhooks test --receiver backend --user admin:secret
            Admins only. Exit status: 0 done; 1 a receiver did not accept the test event; 2 the gateway refused \
            (credentials, no such receiver); 3 the gateway could not be reached.
            """,
        subcommands: [List.self, Retry.self, Test.self])

    struct Parked: Decodable {
        struct Event: Decodable {
            var sequence: Int64
            var receiver: String
            var notification: String
            var attempts: Int
            var parkedAt: Double?
            var lastError: String?
            var event: String
        }

        var pending: Int
        var parked: Int
        var events: [Event]
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The events parked after their retries ran out (oldest first), and how many wait.")

        @OptionGroup var connection: NotificationsCommand.Connection

        @Option(help: "How many (1…1000).")
        var limit: Int = 100

        @Flag(help: "Print the gateway's JSON.")
        var json = false

        func run() async throws {
            let response = try await connection.call("GET", "/api/webhooks/parked?limit=\(limit)")
            if json {
                print(response.bodyText)
                return
            }
            let parked = try JSONDecoder().decode(Parked.self, from: Data(response.body))
            print("sequence  receiver          attempts  parked                notification                          last error")
            for event in parked.events {
                let columns = [
                    (String(event.sequence), 9), (event.receiver, 17), (String(event.attempts), 9),
                    (event.parkedAt.map(LiveActivitiesCommand.time) ?? "-", 21),
                    (event.notification.isEmpty ? "-" : event.notification, 37),
                ]
                let text = columns.map { DemoOutput.clip($0, $1).padding(toLength: $1, withPad: " ", startingAt: 0) }
                print(text.joined(separator: " ") + " " + (event.lastError ?? ""))
            }
            print("\(parked.parked) parked, \(parked.pending) pending")
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make parked events due again, with fresh retries.")

        @OptionGroup var connection: NotificationsCommand.Connection

        @Option(help: "Only this event (its sequence, from `webhooks list`).")
        var sequence: Int64?

        func run() async throws {
            let response = try await connection.call("POST", "/api/webhooks/retry" + (sequence.map { "?sequence=\($0)" } ?? ""))
            var retried = 0
            if let root = try? JSONParser.parse(response.body), let value = root["retried"], case .number(let text) = value.kind {
                retried = Int(text) ?? 0
            }
            print("\(retried) event\(retried == 1 ? "" : "s") due again")
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Post a ping event to the app's receivers and print their answers.")

        @OptionGroup var connection: NotificationsCommand.Connection

        @Option(help: "Only this receiver (its name in the configuration).")
        var receiver: String?

        struct Ping: Decodable {
            var receiver: String
            var url: String
            var status: Int?
            var ok: Bool
            var answer: String
        }

        func run() async throws {
            let query = receiver.map { "?receiver=" + ($0.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? $0) } ?? ""
            let response = try await connection.call("POST", "/api/webhooks/test" + query)
            let pings = try JSONDecoder().decode([Ping].self, from: Data(response.body))
            for ping in pings { print("\(ping.receiver) \(ping.url): \(ping.ok ? "ok" : "FAILED"), \(ping.answer)") }
            if pings.contains(where: { !$0.ok }) { throw ExitCode(1) }
        }
    }
}
