extension Template {
    /// Compiles a parsed XML template. Expressions are recognised in text and attribute values;
    /// `#(p)` is not allowed in XML. The output is the document re-serialised with the same
    /// elements, attributes, comments and processing instructions.
    public init(xml document: XMLTemplateDocument) throws(TemplateError) {
        var segments: [Segment] = []
        var pending: [UInt8] = []
        if document.hasDeclaration {
            pending.append(contentsOf: #"<?xml version="1.0" encoding="utf-8"?>"#.utf8)
        }
        try Self.compile(document.root, path: "", segments: &segments, pending: &pending)
        segments.append(.literal(pending))
        self.init(format: .xml, segments: segments, json: nil, xml: document)
    }

    private static func compile(
        _ element: XMLTemplateElement, path parent: String, segments: inout [Segment], pending: inout [UInt8]
    ) throws(TemplateError) {
        let path = "\(parent)/\(element.name)"
        let location = element.line > 0 ? "\(path) (line \(element.line))" : path
        pending.append(UInt8(ascii: "<"))
        pending.append(contentsOf: element.name.utf8)
        for attribute in element.attributes {
            pending.append(UInt8(ascii: " "))
            pending.append(contentsOf: attribute.name.utf8)
            pending.append(contentsOf: "=\"".utf8)
            if attribute.isNamespaceDeclaration {
                try appendEscapedLiteral(attribute.value, attribute: true, location: location, to: &pending)
            } else {
                try compileValue(
                    attribute.value, context: .xmlAttribute, location: "\(location), attribute \(attribute.name)",
                    segments: &segments, pending: &pending)
            }
            pending.append(UInt8(ascii: "\""))
        }
        if element.children.isEmpty {
            pending.append(contentsOf: "/>".utf8)
            return
        }
        pending.append(UInt8(ascii: ">"))
        for child in element.children {
            switch child {
            case .element(let inner):
                try compile(inner, path: path, segments: &segments, pending: &pending)
            case .text(let text):
                try compileValue(text, context: .xmlText, location: location, segments: &segments, pending: &pending)
            case .comment(let text):
                pending.append(contentsOf: "<!--".utf8)
                pending.append(contentsOf: text.utf8)
                pending.append(contentsOf: "-->".utf8)
            case .processingInstruction(let target, let data):
                pending.append(contentsOf: "<?\(target)\(data.isEmpty ? "" : " " + data)?>".utf8)
            }
        }
        pending.append(contentsOf: "</".utf8)
        pending.append(contentsOf: element.name.utf8)
        pending.append(UInt8(ascii: ">"))
    }

    private static func compileValue(
        _ text: String, context: Context, location: String, segments: inout [Segment], pending: inout [UInt8]
    ) throws(TemplateError) {
        let expression: TemplateExpression
        do {
            expression = try TemplateExpression(parsing: text, allowNumeric: false)
        } catch {
            throw TemplateError(location: location, reason: error.description)
        }
        switch expression.kind {
        case .literal(let literal):
            try appendEscapedLiteral(literal, attribute: context == .xmlAttribute, location: location, to: &pending)
        case .numeric:
            throw TemplateError(location: location, reason: "#(…) is allowed only in JSON templates")
        case .text(let terms):
            segments.append(.literal(pending))
            pending = []
            var pieces: [Piece] = []
            for term in terms {
                switch term {
                case .property(let reference):
                    pieces.append(.property(reference))
                case .literal(let literal):
                    var bytes: [UInt8] = []
                    try appendEscapedLiteral(literal, attribute: context == .xmlAttribute, location: location, to: &bytes)
                    pieces.append(.bytes(bytes))
                }
            }
            segments.append(.value(context, pieces))
        }
    }

    private static func appendEscapedLiteral(
        _ text: String, attribute: Bool, location: String, to output: inout [UInt8]
    )
        throws(TemplateError)
    {
        do {
            try Escaping.appendXML(text, attribute: attribute, to: &output)
        } catch {
            throw TemplateError(location: location, reason: error.description)
        }
    }
}
