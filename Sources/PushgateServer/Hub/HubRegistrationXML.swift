import Foundation
import Pushgate
import PushgateGateway
import PushgateXML

/// Notification Hubs' registration descriptions in Atom XML: parsing a request's entry, writing
/// an entry or a feed as Notification Hubs does.
enum HubRegistrationXML {
    static let atomNamespace = "http://www.w3.org/2005/Atom"
    static let connectNamespace = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
    static let instanceNamespace = "http://www.w3.org/2001/XMLSchema-instance"
    /// A registration that never expires, as Notification Hubs writes it.
    static let never = "9999-12-31T23:59:59.999Z"

    /// A parsed `…RegistrationDescription`.
    struct Description {
        var platform: Platform
        var isTemplate: Bool
        var handle: String
        var tags: [String]
        var bodyTemplate: String?
        var templateName: String?
        var wnsHeaders: [String: String]
        var expiry: String?
        var registrationID: String?
        /// `ExpirationTime`, unless "never".
        var expiration: Timestamp?
    }

    /// Description element names by platform (the native one; the template one inserts `Template`).
    /// Every platform's, to write any registration (a UnifiedPush one the tutorial API made
    /// included); a description is read only for ``Platform/hubPlatforms``.
    static let types: [(name: String, platform: Platform, handleElement: String)] = Platform.allCases.map {
        ($0.notificationHubs.registrationDescription, $0, $0.notificationHubs.handleElement)
    }

    /// A browser registration's subscription keys, beside its `<Endpoint>`.
    static let browserKeyElements = ["P256DH", "Auth"]

    static func localName(_ qualified: String) -> String {
        qualified.split(separator: ":").last.map(String.init) ?? qualified
    }

    static func elements(_ element: XMLTemplateElement) -> [XMLTemplateElement] {
        element.children.compactMap { if case .element(let child) = $0 { child } else { nil } }
    }

    static func text(_ element: XMLTemplateElement) -> String {
        element.children.map { if case .text(let text) = $0 { text } else { "" } }.joined()
    }

    /// Parses an Atom entry (or a bare description); errors name the element.
    static func parse(_ body: [UInt8]) throws(GatewayError) -> Description {
        guard let text = String(validating: body, as: UTF8.self), !text.isEmpty else {
            throw .badRequest("body: an Atom entry with a registration description is required")
        }
        let document: XMLTemplateDocument
        do { document = try XMLTemplateParser.parse(text) } catch { throw .badRequest("body: \(error.description)") }
        var description = document.root
        if localName(description.name) == "entry" {
            // Exactly one content with exactly one description: an ambiguous entry is refused,
            // not read in part.
            let contents = elements(description).filter { localName($0.name) == "content" }
            guard let content = contents.first else { throw .badRequest("body: the Atom entry has no <content>") }
            guard contents.count == 1 else {
                throw .badRequest("body: the Atom entry has \(contents.count) <content> elements; one is allowed")
            }
            let inner = elements(content)
            guard let first = inner.first else { throw .badRequest("body: <content> holds no registration description") }
            guard inner.count == 1 else {
                throw .badRequest("body: <content> holds \(inner.count) elements; one registration description is allowed")
            }
            description = first
        }
        let name = localName(description.name)
        guard name.hasSuffix("RegistrationDescription") else {
            throw .badRequest("body: <\(name.prefix(60))> is not a registration description")
        }
        let stem = String(name.dropLast("RegistrationDescription".count))
        let isTemplate = stem.hasSuffix("Template")
        let typeName = isTemplate ? String(stem.dropLast("Template".count)) : stem
        guard let type = types.first(where: { $0.name == typeName && Platform.hubPlatforms.contains($0.platform) }) else {
            if typeName == "Mpns" { throw .badRequest("body: <\(name)>: MPNS is retired by Microsoft; register with WNS") }
            throw .badRequest(
                "body: <\(name.prefix(60))> is not supported; use Apple, Gcm, FcmV1, Windows or Browser(Template)RegistrationDescription")
        }
        var fields: [String: String] = [:]
        var wnsHeaders: [String: String] = [:]
        let known = Set([
            type.handleElement, "Tags", "BodyTemplate", "TemplateName", "Expiry", "WnsHeaders", "ETag", "ExpirationTime", "RegistrationId",
            "PushVariables", "SecondaryTileName",
        ]).union(type.platform == .browser ? browserKeyElements : [])
        for child in elements(description) {
            let field = localName(child.name)
            guard known.contains(field) else { throw .badRequest("body: <\(name)> has an unknown element <\(field.prefix(60))>") }
            if field == "WnsHeaders" {
                guard type.platform == .wns else { throw .badRequest("body: <WnsHeaders> is for Windows registrations only") }
                for header in elements(child) {
                    let parts = Dictionary(
                        elements(header).map { (localName($0.name), Self.text($0)) },
                        uniquingKeysWith: { (first: String, _: String) in first })
                    guard let headerName = parts["Header"], let value = parts["Value"], !headerName.isEmpty else {
                        throw .badRequest("body: <WnsHeader> needs <Header> and <Value>")
                    }
                    wnsHeaders[headerName] = value
                }
                continue
            }
            // Push variables (per-registration values a template may use) are not supported: an
            // empty element, as some serializers write it, is fine; values are refused, not dropped.
            if field == "PushVariables" {
                guard elements(child).isEmpty, Self.text(child).trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                    throw .badRequest("body: <PushVariables> are not supported here; put the values in the send's template properties")
                }
                continue
            }
            guard elements(child).isEmpty else { throw .badRequest("body: <\(field)> holds markup; it takes text only") }
            guard fields[field] == nil else { throw .badRequest("body: <\(field)> is given twice") }
            let value = Self.text(child)
            fields[field] = field == "BodyTemplate" ? value : value.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard var handle = fields[type.handleElement], !handle.isEmpty else {
            throw .badRequest("body: <\(name)> needs <\(type.handleElement)>")
        }
        if type.platform == .browser {
            // The subscription, as the core reads a browser's handle.
            guard let p256dh = fields["P256DH"], !p256dh.isEmpty, let auth = fields["Auth"], !auth.isEmpty else {
                throw .badRequest("body: <\(name)> needs <P256DH> and <Auth> beside <Endpoint>")
            }
            handle = WebPushSubscription.json(endpoint: handle, p256dh: p256dh, auth: auth)
        }
        if isTemplate, (fields["BodyTemplate"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw .badRequest("body: <\(name)> needs <BodyTemplate>")
        }
        if !isTemplate, fields["BodyTemplate"] != nil {
            throw .badRequest("body: <BodyTemplate> is for \(type.name)TemplateRegistrationDescription; <\(name)> is native")
        }
        let tags = (fields["Tags"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        // ExpirationTime: NH's "never" or an RFC 3339 time the registration expires at.
        var expiration: Timestamp?
        if let text = fields["ExpirationTime"], !text.isEmpty, !text.hasPrefix("9999-12-31") {
            do { expiration = try RFC3339.parse(text) } catch { throw .badRequest("body: <ExpirationTime>: \(error.description)") }
        }
        return Description(
            platform: type.platform, isTemplate: isTemplate, handle: handle, tags: tags, bodyTemplate: fields["BodyTemplate"],
            templateName: fields["TemplateName"].flatMap { $0.isEmpty ? nil : $0 }, wnsHeaders: wnsHeaders, expiry: fields["Expiry"],
            registrationID: fields["RegistrationId"], expiration: expiration)
    }

    /// The description element of `registration`, with its ETag.
    /// `masked`: the handle's middle hidden and a browser's keys left out (what a Listen key reads).
    static func writeDescription(_ registration: Registration, writer: XMLTextWriter, masked: Bool = false) {
        let type = types.first(where: { $0.platform == registration.platform })!
        let template = registration.template
        writer.startElement("\(type.name)\(template == nil ? "" : "Template")RegistrationDescription")
        writer.attribute("xmlns:i", instanceNamespace)
        writer.attribute("xmlns", connectNamespace)
        writer.element("ETag", registrationETag(registration))
        writer.element("ExpirationTime", registration.expiresAt.map { RFC3339.format($0) } ?? never)
        writer.element("RegistrationId", registration.id.rawValue)
        let tags = registration.tags.map(\.rawValue)
        if !tags.isEmpty { writer.element("Tags", tags.joined(separator: ",")) }
        if masked {
            writer.element(registration.platform == .browser ? "Endpoint" : type.handleElement, registration.handle.masked)
        } else if registration.platform == .browser, let subscription = WebPushSubscription(handleValue: registration.handle.value) {
            writer.element("Endpoint", subscription.endpoint)
            writer.element("P256DH", Base64URL.encode(subscription.p256dh))
            writer.element("Auth", Base64URL.encode(subscription.auth))
        } else {
            writer.element(type.handleElement, registration.handle.value)
        }
        if let template {
            // NH's FCM v1 templates (and Huawei's) read back in the send shape, {"message": {…}}.
            writer.cdataElement(
                "BodyTemplate", HubTemplates.written(template.body, for: registration.platform))
            let headers = template.headers.filter { $0.key != "apns-expiration" }.sorted { $0.key < $1.key }
            if registration.platform == .wns, !headers.isEmpty {
                writer.startElement("WnsHeaders")
                for (name, value) in headers {
                    writer.startElement("WnsHeader")
                    writer.element("Header", name)
                    writer.element("Value", value)
                    writer.endElement()
                }
                writer.endElement()
            }
            if registration.platform == .apns, let expiry = template.headers["apns-expiration"] { writer.element("Expiry", expiry) }
            if let name = template.name { writer.element("TemplateName", name) }
        }
        writer.endElement()
    }

    static func writeEntry(
        _ registration: Registration, base: String, apiVersion: String, updated: Timestamp, writer: XMLTextWriter, masked: Bool = false
    ) {
        let url = "\(base)/registrations/\(registration.id.rawValue)?api-version=\(apiVersion)"
        writer.startElement("entry")
        writer.attribute("xmlns", atomNamespace)
        // As NH writes it: the ETag also as the entry's OData metadata attribute.
        writer.attribute("xmlns:a", "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata")
        writer.attribute("a:etag", "W/\"\(registrationETag(registration))\"")
        writer.element("id", url)
        writer.startElement("title")
        writer.attribute("type", "text")
        writer.endElement()
        writer.element("updated", RFC3339.format(updated))
        writer.startElement("link")
        writer.attribute("rel", "self")
        writer.attribute("href", url)
        writer.endElement()
        writer.startElement("content")
        writer.attribute("type", "application/xml")
        writeDescription(registration, writer: writer, masked: masked)
        writer.endElement()
        writer.endElement()
    }

    /// `<entry>` for one registration.
    static func entry(_ registration: Registration, base: String, apiVersion: String, now: Timestamp, masked: Bool = false) -> [UInt8] {
        let writer = XMLTextWriter()
        writer.startDocument()
        writeEntry(registration, base: base, apiVersion: apiVersion, updated: now, writer: writer, masked: masked)
        return writer.finish()
    }

    /// `<feed>` of registrations.
    static func feed(
        _ registrations: [Registration], base: String, collection: String = "registrations", apiVersion: String, now: Timestamp
    ) -> [UInt8] {
        let writer = XMLTextWriter()
        writer.startDocument()
        writer.startElement("feed")
        writer.attribute("xmlns", atomNamespace)
        writer.startElement("title")
        writer.attribute("type", "text")
        writer.endElement()
        writer.element("id", "\(base)/\(collection)/?api-version=\(apiVersion)")
        writer.element("updated", RFC3339.format(now))
        writer.startElement("link")
        writer.attribute("rel", "self")
        writer.attribute("href", "\(base)/\(collection)/?api-version=\(apiVersion)")
        writer.endElement()
        for registration in registrations {
            writeEntry(registration, base: base, apiVersion: apiVersion, updated: now, writer: writer)
        }
        writer.endElement()
        return writer.finish()
    }

    /// Notification Hubs' error body.
    static func error(code: Int, detail: String) -> [UInt8] {
        let writer = XMLTextWriter()
        writer.startElement("Error")
        writer.element("Code", String(code))
        writer.element("Detail", detail)
        writer.endElement()
        return writer.finish()
    }
}
