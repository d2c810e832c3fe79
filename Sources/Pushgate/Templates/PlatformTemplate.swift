/// A template bound to a platform, with the headers its requests carry (`apns-push-type`,
/// `apns-priority`, `X-WNS-Type`, …), checked for what that push service accepts.
///
/// ```swift
/// let apns = try PlatformTemplate(
///     platform: .apns,
///     template: try Template(json: #"{"aps":{"alert":"$(message)"}}"#),
///     headers: [("apns-push-type", "alert"), ("apns-priority", "10")])
/// let notification = try apns.render(["message": "Hello"])
/// ```
public struct PlatformTemplate: Sendable {
    public let platform: Platform
    public let template: Template
    /// Header names in canonical spelling (lower-case for APNs' HTTP/2, `X-WNS-…` for WNS), in order.
    public let headers: [HTTPHeader]

    public init(platform: Platform, template: Template, headers: [(String, String)] = []) throws(TemplateError) {
        self.platform = platform
        self.template = template
        var checked = try Self.checkHeaders(headers, platform: platform)
        try Self.checkBody(template, platform: platform, headers: &checked)
        self.headers = checked
    }

    /// The value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first(where: { $0.name.lowercased() == lowered })?.value
    }

    /// The `Content-Type` the rendered body is sent with.
    public var contentType: String {
        switch (platform, template.format) {
        case (.wns, .raw): "application/octet-stream"
        case (.wns, _): "text/xml"
        default: "application/json"
        }
    }

    /// Renders the body with `properties` and checks it against the service's size limit.
    public func render(_ properties: TemplateProperties) throws(NotificationRenderError) -> RenderedNotification {
        let body: [UInt8]
        do { body = try template.render(properties) } catch { throw .template(error) }
        do {
            try PayloadLimit.check(size: body.count, platform: platform, apnsPushType: header("apns-push-type"))
        } catch { throw .size(error) }
        return RenderedNotification(platform: platform, body: body, headers: headers, contentType: contentType)
    }

    // MARK: Validation

    private static let apnsPushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk",
        "widgets", "controls",
    ]
    private static let wnsTypes: [String: String] = ["wns/toast": "toast", "wns/tile": "tile", "wns/badge": "badge", "wns/raw": ""]
    private static let fcmMessageFields: Set<String> = ["data", "notification", "android", "apns", "webpush", "fcm_options"]
    private static let gcmFields: Set<String> = [
        "collapse_key", "priority", "content_available", "mutable_content", "time_to_live", "restricted_package_name",
        "dry_run", "data", "notification",
    ]

    private static func checkHeaders(_ headers: [(String, String)], platform: Platform) throws(TemplateError) -> [HTTPHeader] {
        var result: [HTTPHeader] = []
        for (rawName, value) in headers {
            let lowered = rawName.lowercased()
            let location = "header \(rawName)"
            func fail(_ reason: String) -> TemplateError { TemplateError(location: location, reason: reason) }
            if result.contains(where: { $0.name.lowercased() == lowered }) { throw fail("is given twice") }
            if value.contains(where: { $0.isNewline || ($0.asciiValue.map { $0 < 0x20 } ?? false) }) {
                throw fail("value must not contain control characters")
            }
            switch platform {
            case .apns:
                switch lowered {
                case "apns-push-type":
                    guard apnsPushTypes.contains(value) else {
                        throw fail("'\(value)' is not an APNs push type (\(apnsPushTypes.sorted().joined(separator: ", ")))")
                    }
                case "apns-priority":
                    guard ["1", "5", "10"].contains(value) else { throw fail("'\(value)' must be 1, 5 or 10") }
                case "apns-expiration":
                    guard let seconds = Int(value), seconds >= 0 else {
                        throw fail("'\(value)' must be UNIX epoch seconds (0 = do not store)")
                    }
                case "apns-topic":
                    guard !value.isEmpty, !value.contains(" ") else { throw fail("must be a bundle id like com.example.app") }
                case "apns-collapse-id":
                    guard value.utf8.count <= 64 else { throw fail("is \(value.utf8.count) bytes; the limit is 64") }
                default:
                    throw fail(
                        "is not an APNs template header (apns-push-type, apns-priority, apns-expiration, apns-topic, apns-collapse-id)")
                }
                result.append(HTTPHeader(name: lowered, value: value))
            case .wns:
                let canonical: String
                switch lowered {
                case "x-wns-type":
                    guard wnsTypes[value] != nil else { throw fail("'\(value)' must be wns/toast, wns/tile, wns/badge or wns/raw") }
                    canonical = "X-WNS-Type"
                case "x-wns-cache-policy":
                    guard ["cache", "no-cache"].contains(value) else { throw fail("'\(value)' must be cache or no-cache") }
                    canonical = "X-WNS-Cache-Policy"
                case "x-wns-requestforstatus":
                    guard ["true", "false"].contains(value) else { throw fail("'\(value)' must be true or false") }
                    canonical = "X-WNS-RequestForStatus"
                case "x-wns-tag", "x-wns-group":
                    guard (1...16).contains(value.count), value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                        throw fail("'\(value)' must be 1 to 16 letters or digits")
                    }
                    canonical = lowered == "x-wns-tag" ? "X-WNS-Tag" : "X-WNS-Group"
                case "x-wns-ttl":
                    guard let seconds = Int(value), seconds >= 0 else { throw fail("'\(value)' must be a whole number of seconds") }
                    canonical = "X-WNS-TTL"
                case "x-wns-suppresspopup":
                    guard ["true", "false"].contains(value) else { throw fail("'\(value)' must be true or false") }
                    canonical = "X-WNS-SuppressPopup"
                default:
                    throw fail(
                        "is not a WNS template header (X-WNS-Type, X-WNS-Cache-Policy, X-WNS-RequestForStatus, X-WNS-Tag, X-WNS-TTL, X-WNS-Group, X-WNS-SuppressPopup)"
                    )
                }
                result.append(HTTPHeader(name: canonical, value: value))
            case .fcm, .gcm:
                throw fail("\(platform.serviceName) templates take no headers; set options such as android.priority in the body")
            }
        }
        return result
    }

    private static func checkBody(_ template: Template, platform: Platform, headers: inout [HTTPHeader]) throws(TemplateError) {
        func fail(_ location: String?, _ reason: String) -> TemplateError { TemplateError(location: location, reason: reason) }
        switch platform {
        case .apns, .fcm, .gcm:
            guard template.format == .json, let root = template.json else {
                throw fail(nil, "\(platform.serviceName) templates must be JSON, not \(template.format)")
            }
            guard let members = root.objectMembers else { throw fail("$", "must be a JSON object, found \(root.typeDescription)") }
            if platform == .apns {
                if let aps = root["aps"], aps.objectMembers == nil {
                    throw fail("$.aps", "must be an object, found \(aps.typeDescription)")
                }
                let pushType = headers.first(where: { $0.name == "apns-push-type" })?.value
                let priority = headers.first(where: { $0.name == "apns-priority" })?.value
                if pushType == "background", let priority, priority != "5" {
                    throw fail("header apns-priority", "background notifications must use priority 5, not \(priority)")
                }
            } else {
                let allowed = platform == .fcm ? fcmMessageFields : gcmFields
                for member in members {
                    if ["token", "topic", "condition", "to", "registration_ids"].contains(member.key) {
                        throw fail(jsonPath("$", member.key), "the gateway sets the message target; remove '\(member.key)'")
                    }
                    guard allowed.contains(member.key) else {
                        throw fail(
                            jsonPath("$", member.key),
                            "is not a field of \(platform == .fcm ? "an FCM v1 message" : "a legacy GCM message") (\(allowed.sorted().joined(separator: ", ")))"
                        )
                    }
                }
                if let data = root["data"] {
                    guard let entries = data.objectMembers else { throw fail("$.data", "must be an object, found \(data.typeDescription)") }
                    if platform == .fcm {
                        for entry in entries {
                            guard let text = entry.value.stringValue, !text.trimmed().hasPrefix("#") else {
                                throw fail(jsonPath("$.data", entry.key), "FCM data values must be strings")
                            }
                        }
                    }
                }
            }
        case .wns:
            let declared = headers.first(where: { $0.name == "X-WNS-Type" })?.value
            switch template.format {
            case .raw:
                if let declared, declared != "wns/raw" {
                    throw fail("header X-WNS-Type", "'\(declared)' needs an XML body; raw bodies are sent as wns/raw")
                }
                if declared == nil { headers.insert(HTTPHeader(name: "X-WNS-Type", value: "wns/raw"), at: 0) }
            case .xml:
                let rootName = template.xml?.root.name ?? ""
                if let declared {
                    guard declared != "wns/raw" else { return }
                    let expected = wnsTypes[declared]!
                    guard rootName == expected else {
                        throw fail("/\(rootName)", "X-WNS-Type \(declared) needs a <\(expected)> root element")
                    }
                } else {
                    guard let type = wnsTypes.first(where: { $0.value == rootName && !rootName.isEmpty })?.key else {
                        throw fail("/\(rootName)", "the root element must be <toast>, <tile> or <badge>, or set X-WNS-Type: wns/raw")
                    }
                    headers.insert(HTTPHeader(name: "X-WNS-Type", value: type), at: 0)
                }
            case .json:
                if declared != nil && declared != "wns/raw" {
                    throw fail("header X-WNS-Type", "'\(declared!)' needs an XML body")
                }
                if declared == nil { headers.insert(HTTPHeader(name: "X-WNS-Type", value: "wns/raw"), at: 0) }
            }
        }
    }
}

/// One HTTP header: name and value.
public struct HTTPHeader: Sendable, Hashable, Codable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }
}

/// A notification ready for one push service: its body, headers and content type.
public struct RenderedNotification: Sendable, Hashable {
    public let platform: Platform
    public let body: [UInt8]
    public let headers: [HTTPHeader]
    public let contentType: String

    public init(platform: Platform, body: [UInt8], headers: [HTTPHeader], contentType: String) {
        self.platform = platform
        self.body = body
        self.headers = headers
        self.contentType = contentType
    }
}

/// Rendering a notification failed.
public enum NotificationRenderError: PushgateInputError, Hashable {
    case template(TemplateRenderError)
    case size(PayloadSizeError)

    public var httpStatusCode: Int {
        switch self {
        case .template(let error): error.httpStatusCode
        case .size(let error): error.httpStatusCode
        }
    }

    public var description: String {
        switch self {
        case .template(let error): error.description
        case .size(let error): error.description
        }
    }
}
