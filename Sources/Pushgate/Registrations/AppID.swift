/// The name of an app (a "hub"): one instance can serve several, each with its own credentials,
/// templates and registrations. `default` when only one is configured.
public struct AppID: ValidatedString {
    public let rawValue: String

    public static let `default` = AppID(unchecked: "default")

    /// Names are 1 to 50 characters of lower-case letters, digits, `-` and `_`.
    public init(_ text: String) throws(AppIDError) {
        guard (1...50).contains(text.count),
            text.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == "_") })
        else { throw AppIDError(text: text) }
        rawValue = text
    }

    private init(unchecked: String) { rawValue = unchecked }

}

/// An app name is malformed.
public struct AppIDError: PushgateInputError, Hashable {
    public let text: String
    public var description: String {
        "app name '\(text.prefix(60))' is invalid; use 1 to 50 lower-case letters, digits, '-' or '_'"
    }
}
