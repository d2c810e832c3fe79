internal import CLibXML2
public import Pushgate

/// Parses XML template bodies with libxml2 into the domain's ``XMLTemplateDocument``.
public enum XMLTemplateParser {
    /// Parses `text`; errors name the line and column.
    public static func parse(_ text: String) throws(TemplateError) -> XMLTemplateDocument {
        let bytes = Array(text.utf8)
        do {
            return try LibXML2.withDocument(bytes) { document throws(LibXML2.ParseFailure) in
                guard let root = xmlDocGetRootElement(document) else {
                    throw LibXML2.ParseFailure(line: 1, column: 1, message: "no root element")
                }
                return XMLTemplateDocument(root: element(root), hasDeclaration: startsWithDeclaration(bytes))
            }
        } catch {
            throw TemplateError(location: "line \(error.line), column \(error.column)", reason: "invalid XML: \(error.message)")
        }
    }

    private static func startsWithDeclaration(_ bytes: [UInt8]) -> Bool {
        var slice = bytes[...]
        if slice.starts(with: [0xEF, 0xBB, 0xBF]) { slice = slice.dropFirst(3) }
        return slice.starts(with: Array("<?xml".utf8))
    }

    private static func qualifiedName(_ name: UnsafePointer<xmlChar>?, _ namespace: xmlNsPtr?) -> String {
        let local = LibXML2.string(name)
        if let prefix = namespace?.pointee.prefix { return LibXML2.string(prefix) + ":" + local }
        return local
    }

    private static func element(_ node: xmlNodePtr) -> XMLTemplateElement {
        var attributes: [XMLTemplateAttribute] = []
        var namespace = node.pointee.nsDef
        while let declaration = namespace {
            let prefix = declaration.pointee.prefix.map { "xmlns:" + LibXML2.string($0) } ?? "xmlns"
            attributes.append(XMLTemplateAttribute(name: prefix, value: LibXML2.string(declaration.pointee.href)))
            namespace = declaration.pointee.next
        }
        var attribute = node.pointee.properties
        while let current = attribute {
            let value = LibXML2.take(xmlNodeGetContent(UnsafeMutableRawPointer(current).assumingMemoryBound(to: xmlNode.self)))
            attributes.append(XMLTemplateAttribute(name: qualifiedName(current.pointee.name, current.pointee.ns), value: value))
            attribute = current.pointee.next
        }
        var children: [XMLTemplateNode] = []
        var child = node.pointee.children
        while let current = child {
            switch current.pointee.type {
            case XML_ELEMENT_NODE:
                children.append(.element(element(current)))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                let text = LibXML2.take(xmlNodeGetContent(current))
                if case .text(let previous)? = children.last {
                    children[children.count - 1] = .text(previous + text)
                } else {
                    children.append(.text(text))
                }
            case XML_COMMENT_NODE:
                children.append(.comment(LibXML2.take(xmlNodeGetContent(current))))
            case XML_PI_NODE:
                children.append(
                    .processingInstruction(target: LibXML2.string(current.pointee.name), data: LibXML2.take(xmlNodeGetContent(current))))
            default:
                break
            }
            child = current.pointee.next
        }
        return XMLTemplateElement(
            name: qualifiedName(node.pointee.name, node.pointee.ns), attributes: attributes, children: children,
            line: Int(xmlGetLineNo(node)))
    }
}

extension Template {
    /// Compiles an XML template from its text (parsed with libxml2).
    public init(xmlText text: String) throws(TemplateError) {
        try self.init(xml: try XMLTemplateParser.parse(text))
    }

    /// Compiles a template body of the given format.
    public init(format: Template.Format, text: String) throws(TemplateError) {
        switch format {
        case .json: try self.init(json: text)
        case .xml: try self.init(xmlText: text)
        case .raw: try self.init(raw: text)
        }
    }
}
