extension Template {
    /// Compiles an opaque (raw) template: the whole body is one value (a literal or one
    /// expression) and is emitted without escaping, for payloads such as WNS raw notifications.
    public init(raw text: String) throws(TemplateError) {
        let expression: TemplateExpression
        do {
            expression = try TemplateExpression(parsing: text, allowNumeric: false)
        } catch {
            throw TemplateError(location: "body", reason: error.description)
        }
        let segment: Segment
        switch expression.kind {
        case .literal(let literal): segment = .literal(Array(literal.utf8))
        case .numeric: throw TemplateError(location: "body", reason: "#(…) is allowed only in JSON templates")
        case .text(let terms):
            segment = .value(
                .raw,
                terms.map { term in
                    switch term {
                    case .property(let reference): .property(reference)
                    case .literal(let literal): .bytes(Array(literal.utf8))
                    }
                })
        }
        self.init(format: .raw, segments: [segment], json: nil, xml: nil)
    }
}
