/// One app with its templates compiled, by purpose and platform: what the configuration loader
/// makes of an app, and all of the configuration the core reads (so the core needs no loader).
public struct LoadedApp: Sendable {
    public let configuration: AppConfiguration
    public let templates: [String: [Platform: PlatformTemplate]]

    public var id: AppID { configuration.id }

    public init(configuration: AppConfiguration, templates: [String: [Platform: PlatformTemplate]]) {
        self.configuration = configuration
        self.templates = templates
    }
}
