/// An error caused by what a caller sent (a request, a configuration, a template), as opposed to an
/// infrastructure fault. Its `description` names what is wrong and, where there is one, the
/// offending field, value or position. The domain says what kind of mistake it is; each API says
/// how it answers one (the core maps it to ``GatewayError``).
public protocol PushgateInputError: Error, CustomStringConvertible, Sendable {
    /// Whether the input is well-formed but more than a limit allows (a payload over its service's
    /// size), rather than malformed. False unless stated.
    var isOverLimit: Bool { get }
}

extension PushgateInputError {
    public var isOverLimit: Bool { false }
}
