/// A registration listing's OData `$filter`: `Field eq 'value'` (a quote doubled inside the
/// value), the one form Notification Hubs documents for registrations.
package struct RegistrationFilter: Sendable, Hashable {
    /// The field, lower-cased (`devicetoken`, `channeluri`, `gcmregistrationid`, …).
    package let field: String
    package let value: String

    package init(parsing text: String) throws(HubParseError) {
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count == 3, parts[1].lowercased() == "eq", parts[2].hasPrefix("'"), parts[2].hasSuffix("'"), parts[2].count >= 2 else {
            throw HubParseError("$filter: '\(text.prefix(80))' must be Field eq 'value'")
        }
        field = parts[0].lowercased()
        value = String(parts[2].dropFirst().dropLast()).replacing("''", with: "'")
    }
}
