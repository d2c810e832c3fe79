/// A hub request's header, query or body part does not parse; the message names the field and
/// the offending text (at most a short excerpt of it). The hub API answers it with 400.
struct HubParseError: Error, Hashable, Sendable, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
