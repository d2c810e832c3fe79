internal import CLibXML2

/// The one place libxml2 is initialised and its pointers are handled. libxml2 is thread-safe once
/// `xmlInitParser` has run; every document and context is created, used and freed by one call.
enum LibXML2 {
    private static let initialized: Bool = {
        xmlInitParser()
        return true
    }()

    /// libxml2's version, for diagnostics.
    static var version: String {
        _ = initialized
        return String(cString: pushgate_xml_version())
    }

    /// Parsing options: no network access, no DTD loading, no entity substitution (no XXE, no
    /// billion laughs), errors collected instead of printed.
    static let safeOptions: Int32 = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)

    /// A parsed document, or where and why parsing failed.
    struct ParseFailure: Error {
        var line: Int
        var column: Int
        var message: String
    }

    /// Parses `bytes` and hands the document to `body`; the document is freed afterwards.
    /// Documents with a DOCTYPE are refused.
    static func withDocument<T>(_ bytes: [UInt8], _ body: (xmlDocPtr) throws(ParseFailure) -> T) throws(ParseFailure) -> T {
        _ = initialized
        guard let context = xmlNewParserCtxt() else { throw ParseFailure(line: 0, column: 0, message: "out of memory") }
        defer { xmlFreeParserCtxt(context) }
        let document: xmlDocPtr? = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    xmlCtxtReadMemory(context, $0, Int32(buffer.count), "template.xml", "UTF-8", safeOptions)
                }
            }
        }
        guard let document else {
            if let error = xmlCtxtGetLastError(context) {
                let message = error.pointee.message.map { String(cString: $0) } ?? "not well-formed XML"
                throw ParseFailure(
                    line: Int(error.pointee.line), column: Int(error.pointee.int2),
                    message: message.trimmingWhitespace())
            }
            throw ParseFailure(line: 0, column: 0, message: bytes.isEmpty ? "the document is empty" : "not well-formed XML")
        }
        defer { xmlFreeDoc(document) }
        if document.pointee.intSubset != nil {
            throw ParseFailure(line: 1, column: 1, message: "a DOCTYPE is not allowed in templates or payloads")
        }
        return try body(document)
    }

    /// A libxml2-owned string as a Swift string, freed afterwards.
    static func take(_ pointer: UnsafeMutablePointer<xmlChar>?) -> String {
        guard let pointer else { return "" }
        defer { pushgate_xml_free(pointer) }
        return String(cString: pointer)
    }

    static func string(_ pointer: UnsafePointer<xmlChar>?) -> String {
        pointer.map { String(cString: $0) } ?? ""
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var text = Substring(self)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return String(text)
    }
}
