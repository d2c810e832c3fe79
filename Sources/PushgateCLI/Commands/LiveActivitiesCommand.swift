import ArgumentParser
import Foundation
import Pushgate

/// `pushgate liveactivities list|show`: the Live Activities of a running gateway, read through
/// its API (`GET /api/liveactivities`, `GET /api/liveactivities/{name}`).
struct LiveActivitiesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liveactivities",
        abstract: "List and show the Live Activities of a running gateway: stamps, sends, content state, channel, devices.",
        discussion: """
            Example: pushgate liveactivities list --user alice:alice
            Example: pushgate liveactivities show order-4711 --user alice:alice
            Exit status: 0 shown; 2 the gateway refused (credentials, no such activity); 3 the gateway could not be reached.
            """,
        subcommands: [List.self, Show.self])

    /// One activity as `/api/liveactivities` answers it (times in Unix seconds).
    struct Activity: Decodable {
        var name: String
        var owner: String
        var stamp: Int64
        var event: String
        var sends: Int
        var immediateSends: Int
        var contentState: String?
        var startedAt: Double
        var updatedAt: Double
        var endedAt: Double?
        var channel: String?
        var devices: [String]?
    }

    /// Unix seconds as RFC 3339 (UTC).
    static func time(_ seconds: Double) -> String {
        Date(timeIntervalSince1970: seconds.rounded(.down)).formatted(.iso8601)
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Your Live Activities (an admin's: everyone's), newest first.")

        @OptionGroup var connection: NotificationsCommand.Connection

        @Option(help: "How many (1…1000).")
        var limit: Int = 100

        @Flag(help: "Print the gateway's JSON.")
        var json = false

        func run() async throws {
            let response = try await connection.call("GET", "/api/liveactivities?limit=\(limit)")
            if json {
                print(response.bodyText)
                return
            }
            let activities = try JSONDecoder().decode([Activity].self, from: Data(response.body))
            print("name                      owner        event   stamp        sends  p10    channel          updated")
            for activity in activities {
                let columns = [
                    (activity.name, 25), (activity.owner, 12), (activity.event, 7), (String(activity.stamp), 12),
                    (String(activity.sends), 6), (String(activity.immediateSends), 6), (activity.channel ?? "-", 16),
                ]
                let text = columns.map { DemoOutput.clip($0, $1).padding(toLength: $1, withPad: " ", startingAt: 0) }
                print(text.joined(separator: " ") + " " + LiveActivitiesCommand.time(activity.updatedAt))
            }
            print("\(activities.count) Live Activit\(activities.count == 1 ? "y" : "ies")")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One activity: its stamp, counts, channel, the last content state sent and the devices following it.")

        @OptionGroup var connection: NotificationsCommand.Connection

        @Argument(help: "The activity's name (as the app registered its update tokens).")
        var name: String

        @Option(help: "Its owner: a user name or $hub (admins; default: you).")
        var owner: String?

        @Flag(help: "Print the gateway's JSON.")
        var json = false

        func validate() throws {
            guard !name.isEmpty, name.utf8.count <= 128 else { throw ValidationError("give an activity name (1 to 128 characters)") }
        }

        func run() async throws {
            var path = "/api/liveactivities/\(SendNotificationCommand.encode(name))"
            if let owner { path += "?owner=\(SendNotificationCommand.encode(owner))" }
            let response = try await connection.call("GET", path)
            if json {
                print(response.bodyText)
                return
            }
            let activity = try JSONDecoder().decode(Activity.self, from: Data(response.body))
            let time = LiveActivitiesCommand.time
            print("live activity \(activity.name) of \(activity.owner): \(activity.endedAt == nil ? "running" : "ended")")
            print("  stamp    \(activity.stamp) (\(time(Double(activity.stamp)))), last event \(activity.event)")
            print("  sends    \(activity.sends), \(activity.immediateSends) at priority 10")
            print("  channel  \(activity.channel ?? "none")")
            print("  started  \(time(activity.startedAt))")
            print("  updated  \(time(activity.updatedAt))")
            if let endedAt = activity.endedAt { print("  ended    \(time(endedAt))") }
            print("content state: \(activity.contentState ?? "(none sent)")")
            let devices = activity.devices ?? []
            print("devices (update tokens, masked): \(devices.count)")
            for device in devices { print("  \(device)") }
        }
    }
}
