/// A template cannot be used: where (a JSON path such as `$.aps.alert`, an XML element path and line,
/// or the template body) and what is wrong.
public struct TemplateError: PushgateInputError, Hashable {
    /// Where in the template the problem is, or nil for the template as a whole.
    public let location: String?
    public let reason: String

    public init(location: String?, reason: String) {
        self.location = location
        self.reason = reason
    }

    public var description: String {
        if let location { return "at \(location): \(reason)" }
        return reason
    }
}

/// A template could not be rendered with the given values.
public struct TemplateRenderError: PushgateInputError, Hashable {
    enum Code: Hashable {
        case invalidUTF8(String)
        case invalidXMLCharacter(String?, XMLCharacterError)
    }

    let code: Code

    /// A property's bytes are not valid UTF-8.
    public static func invalidUTF8(property: String) -> TemplateRenderError { .init(code: .invalidUTF8(property)) }

    static func invalidXMLCharacter(property: String?, _ error: XMLCharacterError) -> TemplateRenderError {
        .init(code: .invalidXMLCharacter(property, error))
    }

    public var description: String {
        switch code {
        case .invalidUTF8(let property):
            return "property '\(property)' is not valid UTF-8"
        case .invalidXMLCharacter(let property?, let error):
            return "property '\(property)' cannot be placed in an XML payload: \(error.description)"
        case .invalidXMLCharacter(nil, let error):
            return "the value cannot be placed in an XML payload: \(error.description)"
        }
    }
}
