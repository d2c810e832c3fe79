internal import CLibXML2

/// Checks of XML payloads as a push service would make them (WNS toast, tile and badge bodies).
public enum XMLPayload {
    /// The name of the root element of a well-formed XML document.
    ///
    /// - Throws: ``XMLPayloadError`` naming the line and column when the bytes are not well formed,
    ///   carry a DOCTYPE, or are not UTF-8.
    public static func rootElementName(of bytes: [UInt8]) throws(XMLPayloadError) -> String {
        do {
            return try LibXML2.withDocument(bytes) { document throws(LibXML2.ParseFailure) in
                guard let root = xmlDocGetRootElement(document) else {
                    throw LibXML2.ParseFailure(line: 1, column: 1, message: "no root element")
                }
                return LibXML2.string(root.pointee.name)
            }
        } catch {
            throw XMLPayloadError(line: error.line, column: error.column, message: error.message)
        }
    }

    /// The version of libxml2 in use.
    public static var libraryVersion: String { LibXML2.version }
}

/// An XML payload is not acceptable.
public struct XMLPayloadError: Error, Hashable, Sendable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    public let message: String

    public var description: String { "XML payload is not well formed at line \(line), column \(column): \(message)" }
}
