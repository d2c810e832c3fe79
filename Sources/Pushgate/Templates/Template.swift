/// A parsed and validated template, ready to render many times.
///
/// A template is compiled once (at configuration load or registration time) into a list of
/// segments: pre-escaped literal bytes and the expression holes between them. Rendering walks the
/// segments and escapes each value for its context (JSON string, XML text, XML attribute), so no
/// property value can break the payload's structure.
///
/// ```swift
/// let template = try Template(json: #"{"aps":{"alert":"{'From ' + $(user) + ': ' + $(message)}"}}"#)
/// let payload = try template.render(["user": "bob", "message": "hi \"there\""])
/// // {"aps":{"alert":"From bob: hi \"there\""}}
/// ```
public struct Template: Sendable {
    /// The syntax of a template body.
    public enum Format: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// A JSON document; expressions in string values.
        case json
        /// An XML document; expressions in text and attribute values.
        case xml
        /// Opaque text (WNS raw); the whole body is one value, emitted unescaped.
        case raw

        public var description: String { rawValue }
    }

    /// A Web Push payload's format, by its text: JSON when it is an object or array (Declarative
    /// Web Push, or what a service worker parses), otherwise a plain string.
    public static func browserFormat(of text: String) -> Format {
        let first = text.utf8.first { !(" \t\r\n".utf8.contains($0)) }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[") ? .json : .raw
    }

    enum Context: Sendable {
        case jsonString, xmlText, xmlAttribute, raw
    }

    enum Piece: Sendable {
        /// Already escaped for the context.
        case bytes([UInt8])
        case property(PropertyReference)
    }

    enum Segment: Sendable {
        case literal([UInt8])
        case value(Context, [Piece])
        /// `#(p)` as a whole JSON value: a number when numeric, else a JSON string.
        case jsonNumeric(PropertyReference)
    }

    public let format: Format
    let segments: [Segment]
    /// Lower-cased names of every property the template reads.
    public let propertyKeys: Set<String>
    /// The parsed JSON body (JSON templates), for structural checks per platform.
    public let json: JSONValue?
    /// The parsed XML body (XML templates), for structural checks per platform.
    public let xml: XMLTemplateDocument?
    private let literalByteCount: Int

    init(format: Format, segments: [Segment], json: JSONValue?, xml: XMLTemplateDocument?) {
        // Merge adjacent literal segments so rendering appends fewer, larger runs.
        var merged: [Segment] = []
        for segment in segments {
            if case .literal(let bytes) = segment, case .literal(let previous)? = merged.last {
                merged[merged.count - 1] = .literal(previous + bytes)
            } else if case .literal(let bytes) = segment, bytes.isEmpty {
                continue
            } else {
                merged.append(segment)
            }
        }
        self.format = format
        self.segments = merged
        self.json = json
        self.xml = xml
        var keys: Set<String> = []
        var literalBytes = 0
        for segment in merged {
            switch segment {
            case .literal(let bytes): literalBytes += bytes.count
            case .jsonNumeric(let reference): keys.insert(reference.key)
            case .value(_, let pieces):
                for piece in pieces {
                    switch piece {
                    case .bytes(let bytes): literalBytes += bytes.count
                    case .property(let reference): keys.insert(reference.key)
                    }
                }
            }
        }
        self.propertyKeys = keys
        self.literalByteCount = literalBytes
    }

    /// Whether the template reads no property (it renders to the same bytes every time).
    public var isConstant: Bool { propertyKeys.isEmpty }

    /// Renders the template with `properties`. Missing properties render as their default or empty.
    public func render(_ properties: TemplateProperties) throws(TemplateRenderError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(literalByteCount + 64 * propertyKeys.count)
        for segment in segments {
            switch segment {
            case .literal(let bytes):
                output.append(contentsOf: bytes)
            case .jsonNumeric(let reference):
                let value = reference.evaluate(in: properties)
                if Self.isJSONNumber(value) {
                    output.append(contentsOf: value.utf8)
                } else {
                    Escaping.appendJSONString(value, to: &output)
                }
            case .value(let context, let pieces):
                for piece in pieces {
                    switch piece {
                    case .bytes(let bytes):
                        output.append(contentsOf: bytes)
                    case .property(let reference):
                        let value = reference.evaluate(in: properties)
                        switch context {
                        case .jsonString:
                            Escaping.appendJSONStringContent(value, to: &output)
                        case .xmlText, .xmlAttribute:
                            do {
                                try Escaping.appendXML(value, attribute: context == .xmlAttribute, to: &output)
                            } catch {
                                throw .invalidXMLCharacter(property: reference.name, error)
                            }
                        case .raw:
                            output.append(contentsOf: value.utf8)
                        }
                    }
                }
            }
        }
        return output
    }

    /// Renders to a string (convenience for tools and tests).
    public func renderString(_ properties: TemplateProperties) throws(TemplateRenderError) -> String {
        String(decoding: try render(properties), as: UTF8.self)
    }

    /// Whether `text` matches Notification Hubs' number pattern for `#(p)`:
    /// `(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    static func isJSONNumber(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var index = 0
        func digits() -> Int {
            let start = index
            while index < bytes.count && bytes[index] >= 0x30 && bytes[index] <= 0x39 { index += 1 }
            return index - start
        }
        guard !bytes.isEmpty else { return false }
        if bytes[0] == UInt8(ascii: "0") {
            index = 1
        } else if digits() == 0 {
            return false
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            if digits() == 0 { return false }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
            if digits() == 0 { return false }
        }
        return index == bytes.count
    }
}
