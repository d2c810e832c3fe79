import Foundation
public import Pushgate
import PushgateXML

/// Reads `config.json`, the template files it references, and compiles every template, so that a
/// configuration that loads is one the gateway can serve with.
///
/// ```swift
/// let loaded = try ConfigurationLoader.load(file: "config.json")
/// let apns = loaded.defaultApp.templates["notify"]?[.apns]
/// ```
public enum ConfigurationLoader {
    /// Loads and checks the configuration in `file`. Relative paths inside it (templates, secrets,
    /// the SQLite file, CA files) are relative to the file's folder.
    public static func load(file: String) throws(ConfigurationError) -> LoadedConfiguration {
        let url = URL(fileURLWithPath: file)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ConfigurationError(file: file, path: "$", reason: "cannot read the file: \(Self.describe(error))")
        }
        return try load(json: Array(data), file: file, baseDirectory: url.deletingLastPathComponent().path)
    }

    /// Loads a configuration given as bytes; template files are looked up under `baseDirectory`.
    public static func load(json: [UInt8], file: String? = nil, baseDirectory: String) throws(ConfigurationError) -> LoadedConfiguration {
        let configuration = try PushgateConfiguration(json: json, file: file)
        var apps: [LoadedApp] = []
        for app in configuration.apps {
            var sets: [String: [Platform: PlatformTemplate]] = [:]
            for (purpose, set) in app.templates.sorted(by: { $0.key < $1.key }) {
                var compiled: [Platform: PlatformTemplate] = [:]
                for (platform, template) in set.templates.sorted(by: { $0.key < $1.key }) {
                    let platformTemplate = try compile(template, platform: platform, file: file, baseDirectory: baseDirectory)
                    if platform == .apns, let apns = app.services.apns, let pushType = platformTemplate.header("apns-push-type"),
                        let problem = APNSPushType.problem(
                            pushType: pushType, topic: platformTemplate.header("apns-topic"), bundleID: apns.topic,
                            tokenAuthentication: { if case .token = apns.authentication { true } else { false } }())
                    {
                        throw ConfigurationError(file: file, path: template.path, reason: "APNs template: \(problem)")
                    }
                    compiled[platform] = platformTemplate
                }
                sets[purpose] = compiled
            }
            apps.append(LoadedApp(configuration: app, templates: sets))
        }
        return LoadedConfiguration(configuration: configuration, apps: apps, baseDirectory: baseDirectory)
    }

    /// Compiles one configured template, reading its file if it has one.
    public static func compile(
        _ template: TemplateConfiguration, platform: Platform, file: String?, baseDirectory: String
    ) throws(ConfigurationError) -> PlatformTemplate {
        let body: String
        let origin: String
        switch template.source {
        case .inline(let text):
            body = text
            origin = "\(template.path).body"
        case .file(let path):
            let resolved = resolve(path, against: baseDirectory)
            guard let data = FileManager.default.contents(atPath: resolved) else {
                throw ConfigurationError(
                    file: file, path: "\(template.path).file", reason: "template file '\(path)' cannot be read (looked for \(resolved))")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw ConfigurationError(file: path, path: template.path, reason: "template file is not valid UTF-8")
            }
            body = text
            origin = path
        }
        do {
            let compiled = try Template(format: template.resolvedFormat(for: platform, body: body), text: body)
            return try PlatformTemplate(platform: platform, template: compiled, headers: template.headers.map { ($0.name, $0.value) })
        } catch {
            throw ConfigurationError(
                file: file, path: template.path,
                reason: "\(platform.serviceName) template (\(origin)) \(error.location.map { "at \($0)" } ?? "is invalid"): \(error.reason)"
            )
        }
    }

    /// `path` made absolute against `baseDirectory` when it is relative.
    public static func resolve(_ path: String, against baseDirectory: String) -> String {
        path.hasPrefix("/") ? path : URL(fileURLWithPath: baseDirectory).appendingPathComponent(path).standardizedFileURL.path
    }

    static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError { return "no such file" }
        return (nsError.userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription ?? nsError.localizedDescription
    }
}

/// A configuration with every template compiled.
public struct LoadedConfiguration: Sendable {
    public let configuration: PushgateConfiguration
    public let apps: [LoadedApp]
    /// The folder relative paths in the configuration are resolved against.
    public let baseDirectory: String

    /// The app requests go to when they name none.
    public var defaultApp: LoadedApp {
        apps.first(where: { $0.id == .default }) ?? apps[0]
    }

    public func app(_ id: AppID) -> LoadedApp? { apps.first(where: { $0.id == id }) }

    /// The same apps and templates with other instance-wide settings (listener, limits, auth);
    /// the apps are kept as loaded.
    public func replacing(_ configuration: PushgateConfiguration) -> LoadedConfiguration {
        LoadedConfiguration(configuration: configuration, apps: apps, baseDirectory: baseDirectory)
    }
}
