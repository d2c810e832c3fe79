/// The configuration cannot be used: which file, which key (as a JSON path like
/// `$.apps.default.services.apns.topic`), where, and what was expected.
public struct ConfigurationError: PushgateInputError, Hashable {
    /// The file the problem is in, when it came from a file.
    public var file: String?
    /// JSON path of the offending key or value.
    public var path: String
    /// Line and column in the file, when known.
    public var location: SourceLocation?
    public var reason: String

    public init(file: String? = nil, path: String, location: SourceLocation? = nil, reason: String) {
        self.file = file
        self.path = path
        self.location = location
        self.reason = reason
    }

    public var description: String {
        var prefix = file ?? "configuration"
        if let location { prefix += ":\(location.line):\(location.column)" }
        return "\(prefix): \(path): \(reason)"
    }

    /// The same error, attributed to `file`.
    public func inFile(_ file: String) -> ConfigurationError {
        var copy = self
        copy.file = file
        return copy
    }
}
