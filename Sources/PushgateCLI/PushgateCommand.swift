import ArgumentParser
import Pushgate

/// `pushgate`: the command line shell over the gateway's libraries.
@main
struct PushgateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushgate",
        // The services named from the platforms, so that a new one is named here too.
        abstract:
            "A self-hosted, multi-platform push notification gateway (\(Platform.allCases.map(\.serviceName).joined(separator: ", "))).",
        discussion: """
            Configure push services and per-platform templates in config.json (templates live in \
            templates/). Check them with `pushgate templates check`; preview a payload with \
            `pushgate templates render --pns apns --set message=Hello --set user=alice`.
            """,
        subcommands: [
            DemoCommand.self, ServeCommand.self, ReloadCommand.self, SendNotificationCommand.self, NotificationsCommand.self,
            RegistrationsCommand.self,
            LiveActivitiesCommand.self,
            ChannelsCommand.self,
            WebhooksCommand.self,
            SandboxCommand.self, TemplatesCommand.self, StoreCommand.self, HubsCommand.self,
            UsersCommand.self, VAPIDCommand.self,
            BenchCommand.self,
            VersionCommand.self,
        ]
    )
}
