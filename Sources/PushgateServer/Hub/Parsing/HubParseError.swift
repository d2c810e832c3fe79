import Pushgate
import PushgateGateway

/// A hub request's header, query or body part does not parse; the message names the field and
/// the offending text (at most a short excerpt of it). The hub API answers it with 400.
package struct HubParseError: Error, Hashable, Sendable, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description.excerpt(maximumBytes: GatewayError.maximumMessageBytes) }
}
