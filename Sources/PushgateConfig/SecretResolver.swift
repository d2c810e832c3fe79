public import Foundation
public import Pushgate

/// Reads secrets from their sources. The value never appears in errors or descriptions.
public struct SecretResolver: Sendable {
    public var baseDirectory: String
    public var environment: [String: String]

    public init(baseDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.baseDirectory = baseDirectory
        self.environment = environment
    }

    /// The secret's bytes as text, trailing new lines removed for environment and inline values.
    public func resolve(_ source: SecretSource) throws(SecretError) -> String {
        switch source {
        case .inline(let value):
            return value
        case .environment(let name):
            guard let value = environment[name], !value.isEmpty else { throw SecretError(source: source, reason: "is not set") }
            return value
        case .file(let path):
            let resolved = ConfigurationLoader.resolve(path, against: baseDirectory)
            guard let data = FileManager.default.contents(atPath: resolved) else {
                throw SecretError(source: source, reason: "cannot be read (looked for \(resolved))")
            }
            guard let text = String(data: data, encoding: .utf8), !text.isEmpty else {
                throw SecretError(source: source, reason: "is empty or not UTF-8 text")
            }
            return text
        }
    }

    /// Whether the secret can be read, without returning it.
    public func check(_ source: SecretSource) -> SecretError? {
        do {
            _ = try resolve(source)
            return nil
        } catch {
            return error
        }
    }
}

/// A secret could not be read. Names the source, never the value.
public struct SecretError: Error, Hashable, Sendable, CustomStringConvertible {
    public let source: SecretSource
    public let reason: String

    public var description: String { "secret from \(source) \(reason)" }
}
