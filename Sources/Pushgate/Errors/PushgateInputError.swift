/// An error caused by what a caller sent (a request, a configuration, a template), as opposed to an
/// infrastructure fault. Its `description` names what is wrong and, where there is one, the
/// offending field, value or position; `httpStatusCode` is the 4xx answer it deserves.
public protocol PushgateInputError: Error, CustomStringConvertible, Sendable {
    /// The HTTP status a gateway answers with when this error reaches it (400 unless stated).
    var httpStatusCode: Int { get }
}

extension PushgateInputError {
    public var httpStatusCode: Int { 400 }
}
