/// A well-formed XML template as a tree, produced by an XML parser (libxml2 in `PushgateXML`) and
/// compiled into a ``Template`` by the pure domain.
public struct XMLTemplateDocument: Sendable, Hashable {
    public var root: XMLTemplateElement
    /// Whether the source started with an XML declaration (`<?xml …?>`); kept in the output.
    public var hasDeclaration: Bool

    public init(root: XMLTemplateElement, hasDeclaration: Bool) {
        self.root = root
        self.hasDeclaration = hasDeclaration
    }
}

/// An element: its qualified name, its attributes (namespace declarations included, in order) and
/// its children.
public struct XMLTemplateElement: Sendable, Hashable {
    public var name: String
    public var attributes: [XMLTemplateAttribute]
    public var children: [XMLTemplateNode]
    /// Line of the element in the source, for error messages.
    public var line: Int

    public init(name: String, attributes: [XMLTemplateAttribute] = [], children: [XMLTemplateNode] = [], line: Int = 0) {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.line = line
    }
}

public struct XMLTemplateAttribute: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Namespace declarations (`xmlns`, `xmlns:p`) never hold expressions.
    public var isNamespaceDeclaration: Bool { name == "xmlns" || name.hasPrefix("xmlns:") }
}

public indirect enum XMLTemplateNode: Sendable, Hashable {
    case element(XMLTemplateElement)
    /// Character data (CDATA sections arrive as text and are re-escaped on output).
    case text(String)
    case comment(String)
    case processingInstruction(target: String, data: String)
}
