/// A template per platform for one purpose.
public struct TemplateSetConfiguration: Sendable, Hashable {
    public var templates: [Platform: TemplateConfiguration]

    public init(_ templates: [Platform: TemplateConfiguration] = [:]) { self.templates = templates }
}

/// One template: where its body comes from, its syntax, and its headers.
public struct TemplateConfiguration: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        /// A file in `templates/` (relative to the configuration file).
        case file(String)
        /// The body written in the configuration.
        case inline(String)
    }

    public var source: Source
    /// The body syntax; inferred from the file extension or the platform when nil.
    public var format: Template.Format?
    public var headers: [HTTPHeader]
    /// JSON path of this template in the configuration, for error messages.
    public var path: String

    public init(source: Source, format: Template.Format? = nil, headers: [HTTPHeader] = [], path: String = "") {
        self.source = source
        self.format = format
        self.headers = headers
        self.path = path
    }

    /// The format to compile `body` with: explicit, else by file extension, else as every template
    /// is (``Template/Format/resolved(for:headers:body:)``).
    public func resolvedFormat(for platform: Platform, body: String) -> Template.Format {
        if let format { return format }
        if case .file(let path) = source {
            let lowered = path.lowercased()
            if lowered.hasSuffix(".json") { return .json }
            if lowered.hasSuffix(".xml") { return .xml }
            if lowered.hasSuffix(".txt") || lowered.hasSuffix(".raw") { return .raw }
        }
        return .resolved(for: platform, headers: headers.map { ($0.name, $0.value) }, body: body)
    }
}
