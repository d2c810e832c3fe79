import Foundation
import Hummingbird
import HummingbirdCore
import Pushgate
import PushgateGateway

/// A request's query, parsed once and strictly: names and values percent-decoded (`%24filter` is
/// `$filter`, as Python's requests and JavaScript's URLSearchParams write it), each name given at
/// most once, and, where a route lists what it takes, no other name. A flag is `true` or `false`
/// (`1` or `0`), never a silent default: `secure=yes`, a bare `?dryRun` or a misspelled `dry_run`
/// is a 400 naming it, and nothing is sent.
struct QueryParameters: Sendable {
    /// Decoded name → decoded value (nil: the name was given bare, `?direct`).
    private var values: [String: String?]

    /// Parses `uri`'s query. `accepting`, when given, is every name the route documents.
    init(_ uri: URI, accepting accepted: Set<String>? = nil) throws(GatewayError) {
        try self.init(query: uri.query ?? "", accepting: accepted)
    }

    init(query: String, accepting accepted: Set<String>? = nil) throws(GatewayError) {
        var values: [String: String?] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let rawName = String(parts[0])
            guard let name = Self.decoded(rawName) else {
                throw .badRequest("query: parameter name '\(Self.quoted(rawName))' is not valid percent-encoding")
            }
            var value: String?
            if parts.count == 2 {
                guard let decoded = Self.decoded(String(parts[1])) else {
                    throw .badRequest("query: \(Self.quoted(name)): the value is not valid percent-encoding")
                }
                value = decoded
            }
            if let accepted, !accepted.contains(name) {
                let suggestion = accepted.first { $0.lowercased() == name.lowercased() || Self.folded($0) == Self.folded(name) }
                throw .badRequest(
                    "query: unknown parameter '\(Self.quoted(name))'"
                        + (suggestion.map { "; did you mean '\($0)'?" }
                            ?? "; this route takes \(accepted.sorted().joined(separator: ", "))"))
            }
            guard values[name] == nil else { throw .badRequest("query: '\(Self.quoted(name))' is given more than once") }
            values[name] = value
        }
        self.values = values
    }

    /// `text` percent-decoded; Foundation's decoding (a bridge through `NSString`) only when
    /// there is something to decode, which most queries' names and values do not have.
    private static func decoded(_ text: String) -> String? {
        text.utf8.contains(UInt8(ascii: "%")) ? text.removingPercentEncoding : text
    }

    /// Whether `name` was given at all (bare or with a value).
    func has(_ name: String) -> Bool { values[name] != nil }

    /// The value of `name`; nil when it is absent, "" when it was given bare.
    func get(_ name: String) -> String? {
        guard let value = values[name] else { return nil }
        return value ?? ""
    }

    /// A flag: `true`/`1` or `false`/`0` (any case), `defaultValue` when absent. With `bare`, a
    /// name given alone (`?direct`, as Notification Hubs writes its flags) is true.
    func flag(_ name: String, default defaultValue: Bool = false, bare: Bool = false) throws(GatewayError) -> Bool {
        guard let given = values[name] else { return defaultValue }
        guard let value = given else {
            if bare { return true }
            throw .badRequest("\(name): give \(name)=true or \(name)=false")
        }
        switch value.lowercased() {
        case "true", "1": return true
        case "false", "0": return false
        default: throw .badRequest("\(name): '\(Self.quoted(value))' is not true or false")
        }
    }

    /// At most 60 bytes of client input, for an error message.
    static func quoted(_ text: String) -> String { text.excerpt(maximumBytes: 60) }

    /// A name without case, `_` or `-`: `dry_run` and `dryrun` fold to `dryRun`'s.
    private static func folded(_ name: String) -> String {
        name.lowercased().filter { $0 != "_" && $0 != "-" }
    }
}
