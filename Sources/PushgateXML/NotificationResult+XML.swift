internal import CLibXML2
public import Pushgate

extension NotificationResult {
    /// The Notification Hubs XML namespace of `NotificationOutcome`.
    public static let xmlNamespace = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"

    /// The result in Notification Hubs' `NotificationOutcome` XML shape (what its test sends return),
    /// extended with the state, per-platform counts (telemetry's `…OutcomeCounts` elements) and the
    /// per-device status, reason and service message id. Written with libxml2's text writer.
    public func xmlDocument() -> [UInt8] {
        let writer = XMLTextWriter()
        writer.startDocument()
        writer.startElement("NotificationOutcome")
        writer.attribute("xmlns", Self.xmlNamespace)
        writer.attribute("xmlns:i", "http://www.w3.org/2001/XMLSchema-instance")
        writer.element("NotificationId", notificationID)
        writer.element("State", state.rawValue)
        writer.element("Success", String(successCount))
        writer.element("Failure", String(failureCount))
        writer.startElement("Results")
        for target in targets {
            writer.startElement("RegistrationResult")
            writer.element("ApplicationPlatform", target.platform.notificationHubsName)
            writer.element("PnsHandle", target.maskedHandle)
            writer.element("RegistrationId", target.registrationID.rawValue)
            writer.element("Outcome", target.outcome.rawValue)
            writer.element("Explanation", target.outcome.explanation)
            if let status = target.statusCode { writer.element("StatusCode", String(status)) }
            if let reason = target.reason { writer.element("Reason", reason) }
            if let id = target.serviceMessageID { writer.element("ServiceMessageId", id) }
            writer.element("Attempts", String(target.attempts))
            writer.element("LatencyMs", String(target.latencyMilliseconds))
            if let action = target.handleAction { writer.element("HandleAction", action.rawValue) }
            if !target.diagnostics.isEmpty {
                writer.startElement("Diagnostics")
                for header in target.diagnostics {
                    writer.startElement("Header")
                    writer.element("Name", header.name)
                    writer.element("Value", header.value)
                    writer.endElement()
                }
                writer.endElement()
            }
            writer.endElement()
        }
        writer.endElement()
        for summary in platforms {
            writer.startElement(Self.countsElement(summary.platform))
            for (outcome, count) in summary.sortedCounts {
                writer.startElement("Outcome")
                writer.element("Name", outcome.rawValue)
                writer.element("Count", String(count))
                writer.endElement()
            }
            writer.endElement()
        }
        writer.endElement()
        return writer.finish()
    }

    /// The element of `platform`'s counts in results and telemetry (`ApnsOutcomeCounts`, …).
    public static func countsElement(_ platform: Platform) -> String {
        switch platform {
        case .apns: "ApnsOutcomeCounts"
        case .fcm: "FcmV1OutcomeCounts"
        case .gcm: "GcmOutcomeCounts"
        case .wns: "WnsOutcomeCounts"
        case .browser: "BrowserOutcomeCounts"
        // Not a Notification Hubs platform: Pushgate's element, in the same pattern.
        case .hms: "HuaweiOutcomeCounts"
        case .unifiedpush: "UnifiedPushOutcomeCounts"
        }
    }
}

/// A thin wrapper over libxml2's `xmlTextWriter` writing into memory. Used by one thread at a time.
public final class XMLTextWriter {
    private let buffer: xmlBufferPtr
    private let writer: xmlTextWriterPtr

    public init() {
        buffer = xmlBufferCreate()
        writer = xmlNewTextWriterMemory(buffer, 0)
        xmlTextWriterSetIndent(writer, 0)
    }

    deinit {
        xmlBufferFree(buffer)
    }

    private func withXMLString<T>(_ text: String, _ body: (UnsafePointer<xmlChar>) -> T) -> T {
        text.withCString { pointer in pointer.withMemoryRebound(to: xmlChar.self, capacity: text.utf8.count + 1, body) }
    }

    public func startDocument() { xmlTextWriterStartDocument(writer, "1.0", "utf-8", nil) }

    public func startElement(_ name: String) { withXMLString(name) { _ = xmlTextWriterStartElement(writer, $0) } }

    public func endElement() { xmlTextWriterEndElement(writer) }

    public func attribute(_ name: String, _ value: String) {
        withXMLString(name) { name in withXMLString(value) { _ = xmlTextWriterWriteAttribute(writer, name, $0) } }
    }

    /// Writes `<name>text</name>`, escaping the text. Characters XML cannot carry are replaced by U+FFFD.
    public func element(_ name: String, _ text: String) {
        let safe = String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    switch scalar.value {
                    case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: scalar
                    default: "\u{FFFD}"
                    }
                }))
        withXMLString(name) { name in withXMLString(safe) { _ = xmlTextWriterWriteElement(writer, name, $0) } }
    }

    /// Writes `<name>` with the text as one CDATA section (a template body, as Notification Hubs writes it).
    public func cdataElement(_ name: String, _ text: String) {
        startElement(name)
        // "]]>" cannot appear in a CDATA section: split it across two.
        let pieces = Self.xmlSafe(text).split(separator: "]]>", omittingEmptySubsequences: false)
        for (index, piece) in pieces.enumerated() {
            let part = (index > 0 ? ">" : "") + piece + (index < pieces.count - 1 ? "]]" : "")
            withXMLString(part) { _ = xmlTextWriterWriteCDATA(writer, $0) }
        }
        endElement()
    }

    static func xmlSafe(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    switch scalar.value {
                    case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: scalar
                    default: "\u{FFFD}"
                    }
                }))
    }

    /// Ends the document, frees the writer and returns the bytes.
    public func finish() -> [UInt8] {
        xmlTextWriterEndDocument(writer)
        xmlFreeTextWriter(writer)
        let count = Int(xmlBufferLength(buffer))
        guard count > 0, let content = xmlBufferContent(buffer) else { return [] }
        return Array(UnsafeBufferPointer(start: content, count: count))
    }
}
