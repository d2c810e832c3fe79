extension Template {
    /// Compiles a JSON template. The body must be valid JSON; expressions are recognised in string
    /// values (never in keys). The output is the document re-emitted compactly.
    public init(json text: String) throws(TemplateError) {
        let root: JSONValue
        do {
            root = try JSONParser.parse(text)
        } catch {
            throw TemplateError(location: error.location.description, reason: "invalid JSON: \(error.reason)")
        }
        try self.init(json: root)
    }

    /// Compiles an already parsed JSON template.
    public init(json root: JSONValue) throws(TemplateError) {
        var segments: [Segment] = []
        var pending: [UInt8] = []
        try Self.compile(root, path: "$", segments: &segments, pending: &pending)
        segments.append(.literal(pending))
        self.init(format: .json, segments: segments, json: root, xml: nil)
    }

    private static func compile(
        _ value: JSONValue, path: String, segments: inout [Segment], pending: inout [UInt8]
    )
        throws(TemplateError)
    {
        switch value.kind {
        case .null: pending.append(contentsOf: "null".utf8)
        case .bool(let flag): pending.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let text): pending.append(contentsOf: text.utf8)
        case .string(let text):
            let expression: TemplateExpression
            do {
                expression = try TemplateExpression(parsing: text, allowNumeric: true)
            } catch {
                throw TemplateError(location: path, reason: error.description)
            }
            switch expression.kind {
            case .literal(let literal):
                Escaping.appendJSONString(literal, to: &pending)
            case .numeric(let reference):
                segments.append(.literal(pending))
                pending = []
                segments.append(.jsonNumeric(reference))
            case .text(let terms):
                pending.append(UInt8(ascii: "\""))
                segments.append(.literal(pending))
                pending = [UInt8(ascii: "\"")]
                segments.append(
                    .value(
                        .jsonString,
                        terms.map { term in
                            switch term {
                            case .property(let reference): return .property(reference)
                            case .literal(let literal):
                                var bytes: [UInt8] = []
                                Escaping.appendJSONStringContent(literal, to: &bytes)
                                return .bytes(bytes)
                            }
                        }))
            }
        case .array(let elements):
            pending.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { pending.append(UInt8(ascii: ",")) }
                try compile(element, path: "\(path)[\(index)]", segments: &segments, pending: &pending)
            }
            pending.append(UInt8(ascii: "]"))
        case .object(let members):
            pending.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { pending.append(UInt8(ascii: ",")) }
                Escaping.appendJSONString(member.key, to: &pending)
                pending.append(UInt8(ascii: ":"))
                try compile(member.value, path: jsonPath(path, member.key), segments: &segments, pending: &pending)
            }
            pending.append(UInt8(ascii: "}"))
        }
    }
}

/// `$.a.b` for identifier-like keys, `$.a["odd key"]` otherwise.
public func jsonPath(_ parent: String, _ key: String) -> String {
    let plain = !key.isEmpty && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
    return plain ? "\(parent).\(key)" : "\(parent)[\"\(key)\"]"
}
