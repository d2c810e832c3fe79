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
    /// Headers whose values are template expressions (`"apns-collapse-id": "$(conversation)"`),
    /// evaluated per send and checked then; one that evaluates to the empty string is left out.
    public let headerExpressions: [(name: String, expression: TemplateExpression)]

    /// Headers that may take a per-send value: the ones that name or time one message.
    static let expressionHeaders: Set<String> = [
        "apns-collapse-id", "apns-expiration", "apns-id", "x-wns-tag", "x-wns-ttl",
    ]

    public init(platform: Platform, template: Template, headers: [(String, String)] = []) throws(TemplateError) {
        self.platform = platform
        self.template = template
        var literal: [(String, String)] = []
        var expressions: [(name: String, expression: TemplateExpression)] = []
        for (name, value) in headers {
            let expression: TemplateExpression
            do { expression = try TemplateExpression(parsing: value, allowNumeric: false) } catch {
                throw TemplateError(location: "header \(name)", reason: error.description)
            }
            if expression.isLiteral {
                literal.append((name, value))
                continue
            }
            guard Self.expressionHeaders.contains(name.lowercased()) else {
                throw TemplateError(
                    location: "header \(name)",
                    reason: "takes no expression; only \(Self.expressionHeaders.sorted().joined(separator: ", ")) may vary per send")
            }
            // The name is checked now with a placeholder; the value once it is known.
            let canonical = try Self.checkHeaders([(name, "")], platform: platform, checkValues: false)[0].name
            if literal.contains(where: { $0.0.lowercased() == name.lowercased() }) || expressions.contains(where: { $0.name == canonical })
            {
                throw TemplateError(location: "header \(name)", reason: "is given twice")
            }
            expressions.append((canonical, expression))
        }
        var checked = try Self.checkHeaders(literal, platform: platform)
        if let twice = checked.first(where: { header in expressions.contains { $0.name == header.name } }) {
            throw TemplateError(location: "header \(twice.name)", reason: "is given twice")
        }
        try Self.checkBody(template, platform: platform, headers: &checked)
        // Microsoft: X-WNS-Tag is for tile notifications only.
        let tagged = checked.contains { $0.name == "X-WNS-Tag" } || expressions.contains { $0.name == "X-WNS-Tag" }
        if platform == .wns, tagged, checked.first(where: { $0.name == "X-WNS-Type" })?.value != "wns/tile" {
            throw TemplateError(location: "header X-WNS-Tag", reason: "is for tile notifications (X-WNS-Type: wns/tile) only")
        }
        self.headers = checked
        self.headerExpressions = expressions
    }

    /// The headers of one send: the fixed ones, then each expression's value, checked as a fixed
    /// value would be (an empty value leaves the header out).
    public func renderHeaders(_ properties: TemplateProperties) throws(NotificationRenderError) -> [HTTPHeader] {
        guard !headerExpressions.isEmpty else { return headers }
        var rendered = headers
        for (name, expression) in headerExpressions {
            let value = expression.evaluateText(in: properties)
            if value.isEmpty { continue }
            do {
                rendered.append(contentsOf: try Self.checkHeaders([(name, value)], platform: platform))
            } catch {
                throw .header(name: name, reason: error.reason)
            }
        }
        return rendered
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
        case (.browser, .raw), (.unifiedpush, .raw): "text/plain; charset=utf-8"
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
        return RenderedNotification(platform: platform, body: body, headers: try renderHeaders(properties), contentType: contentType)
    }

    // MARK: Validation

    /// `mdm` is not among them (``APNSPushType``).
    private static let apnsPushTypes = Set(APNSPushType.allCases.map(\.rawValue))
    private static let webPushUrgencies: Set<String> = ["very-low", "low", "normal", "high"]
    private static let wnsTypes: [String: String] = ["wns/toast": "toast", "wns/tile": "tile", "wns/badge": "badge", "wns/raw": ""]
    private static let fcmMessageFields: Set<String> = ["data", "notification", "android", "apns", "webpush", "fcm_options"]
    /// A Push Kit v1 `message`'s members a template may give (the gateway sets the tokens).
    private static let hmsMessageFields: Set<String> = ["data", "notification", "android", "apns", "webpush"]
    private static let gcmFields: Set<String> = [
        "collapse_key", "priority", "content_available", "mutable_content", "time_to_live", "restricted_package_name",
        "dry_run", "data", "notification",
    ]

    /// Checks headers and returns them with canonical names; with `checkValues` false only the
    /// names are checked (for an expression, whose value is known per send).
    private static func checkHeaders(
        _ headers: [(String, String)], platform: Platform, checkValues: Bool = true
    ) throws(TemplateError) -> [HTTPHeader] {
        var result: [HTTPHeader] = []
        for (rawName, value) in headers {
            let lowered = rawName.lowercased()
            let location = "header \(rawName)"
            func fail(_ reason: String) -> TemplateError {
                TemplateError(location: location, reason: reason)
            }
            func check(_ valid: Bool, _ reason: @autoclosure () -> String) throws(TemplateError) {
                if checkValues && !valid { throw fail(reason()) }
            }
            if result.contains(where: { $0.name.lowercased() == lowered }) { throw fail("is given twice") }
            if value.contains(where: { $0.isNewline || ($0.asciiValue.map { $0 < 0x20 } ?? false) }) {
                throw fail("value must not contain control characters")
            }
            switch platform {
            case .apns:
                switch lowered {
                case "apns-push-type":
                    try check(
                        apnsPushTypes.contains(value),
                        "'\(value)' is not an APNs push type (\(apnsPushTypes.sorted().joined(separator: ", ")))")
                case "apns-priority":
                    try check(["1", "5", "10"].contains(value), "'\(value)' must be 1, 5 or 10")
                case "apns-expiration":
                    try check(Int(value).map { $0 >= 0 } ?? false, "'\(value)' must be UNIX epoch seconds (0 = do not store)")
                case "apns-topic":
                    try check(!value.isEmpty && !value.contains(" "), "must be a bundle id like com.example.app")
                case "apns-collapse-id":
                    try check(value.utf8.count <= 64, "is \(value.utf8.count) bytes; the limit is 64")
                case "apns-id":
                    try check(isCanonicalUUID(value), "'\(value)' must be a lower-case UUID (8-4-4-4-12 hex digits)")
                default:
                    throw fail(
                        "is not an APNs template header (apns-push-type, apns-priority, apns-expiration, apns-topic, apns-collapse-id, apns-id)"
                    )
                }
                result.append(HTTPHeader(name: lowered, value: value))
            case .wns:
                let canonical: String
                var value = value
                switch lowered {
                case "x-wns-type":
                    value = value.lowercased()
                    try check(wnsTypes[value] != nil, "'\(value)' must be wns/toast, wns/tile, wns/badge or wns/raw")
                    canonical = "X-WNS-Type"
                case "x-wns-cache-policy":
                    try check(["cache", "no-cache"].contains(value), "'\(value)' must be cache or no-cache")
                    canonical = "X-WNS-Cache-Policy"
                case "x-wns-requestforstatus":
                    try check(["true", "false"].contains(value), "'\(value)' must be true or false")
                    canonical = "X-WNS-RequestForStatus"
                case "x-wns-tag":
                    try check(
                        (1...16).contains(value.count) && value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
                        "'\(value)' must be 1 to 16 letters or digits")
                    canonical = "X-WNS-Tag"
                case "x-wns-group":
                    throw fail("is for Windows Phone channels only")
                case "x-wns-ttl":
                    try check(Int(value).map { $0 >= 0 } ?? false, "'\(value)' must be a whole number of seconds")
                    canonical = "X-WNS-TTL"
                case "x-wns-suppresspopup":
                    // Microsoft: Windows Phone channels only; on a Windows channel the notification
                    // is dropped with an error. Windows Phone is gone, so every channel is one where
                    // it fails.
                    throw fail("is for Windows Phone channels only; WNS drops the notification on Windows channels")
                default:
                    throw fail(
                        "is not a WNS template header (X-WNS-Type, X-WNS-Cache-Policy, X-WNS-RequestForStatus, X-WNS-Tag, X-WNS-TTL)"
                    )
                }
                result.append(HTTPHeader(name: canonical, value: value))
            case .hms:
                throw fail("Huawei Push Kit templates take no headers: the options are the message's own (android.urgency, android.ttl, …)")
            case .browser, .unifiedpush:
                let canonical: String
                switch lowered {
                case "ttl":
                    try check(Int(value).map { $0 >= 0 } ?? false, "'\(value)' must be a whole number of seconds")
                    canonical = "TTL"
                case "urgency":
                    try check(webPushUrgencies.contains(value), "'\(value)' must be very-low, low, normal or high (RFC 8030)")
                    canonical = "Urgency"
                case "topic":
                    try check(
                        (1...32).contains(value.utf8.count)
                            && value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
                        "'\(value)' must be 1 to 32 characters of the base64url alphabet (RFC 8030)")
                    canonical = "Topic"
                default:
                    throw fail("is not a Web Push template header (TTL, Urgency, Topic)")
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
        case .apns, .fcm, .gcm, .hms:
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
                let allowed = platform == .fcm ? fcmMessageFields : platform == .hms ? hmsMessageFields : gcmFields
                for member in members {
                    if ["token", "topic", "condition", "to", "registration_ids"].contains(member.key) {
                        throw fail(jsonPath("$", member.key), "the gateway sets the message target; remove '\(member.key)'")
                    }
                    guard allowed.contains(member.key) else {
                        throw fail(
                            jsonPath("$", member.key),
                            "is not a field of \(platform == .fcm ? "an FCM v1 message" : platform == .hms ? "a Push Kit message" : "a legacy GCM message") (\(allowed.sorted().joined(separator: ", ")))"
                        )
                    }
                }
                if platform == .hms, let data = root["data"] {
                    // Push Kit's `data` is a string (the app reads it as it likes).
                    guard data.stringValue != nil else { throw fail("$.data", "must be a string, found \(data.typeDescription)") }
                } else if let data = root["data"] {
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
        case .browser, .unifiedpush:
            // Any text: JSON (Declarative Web Push, or what a service worker reads; what a
            // UnifiedPush app's own server defines), or a string.
            return
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
    /// A dry run: the service validates the notification without delivering it (FCM v1's
    /// top-level `validate_only`; legacy GCM's `dry_run` is in the body itself).
    public let validateOnly: Bool

    public init(platform: Platform, body: [UInt8], headers: [HTTPHeader], contentType: String, validateOnly: Bool = false) {
        self.platform = platform
        self.body = body
        self.headers = headers
        self.contentType = contentType
        self.validateOnly = validateOnly
    }
}

/// Rendering a notification failed.
public enum NotificationRenderError: PushgateInputError, Hashable {
    case template(TemplateRenderError)
    case size(PayloadSizeError)
    /// A header's per-send value is not one the service accepts.
    case header(name: String, reason: String)

    public var isOverLimit: Bool {
        switch self {
        case .template(let error): error.isOverLimit
        case .size(let error): error.isOverLimit
        case .header: false
        }
    }

    public var description: String {
        switch self {
        case .template(let error): error.description
        case .size(let error): error.description
        case .header(let name, let reason): "header \(name): \(reason)"
        }
    }
}

/// Whether `text` is a UUID in APNs' canonical form (lower-case 8-4-4-4-12 hex digits).
func isCanonicalUUID(_ text: String) -> Bool {
    let groups = text.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
    return groups == [8, 4, 4, 4, 12] && text.allSatisfy { $0 == "-" || ($0.isHexDigit && !$0.isUppercase) }
}

extension Template.Format {
    /// A template's syntax, decided here for every template: the app's configured ones, the hub's
    /// native sends and each hub registration's own. It follows from the platform and the declared
    /// headers (WNS: `X-WNS-Type: wns/raw` in any letter case is raw text, any other type XML), and
    /// for Web Push from the body: JSON when it is a JSON object or array, plain text otherwise.
    public static func resolved(for platform: Platform, headers: [(String, String)], body: String) -> Template.Format {
        switch platform {
        case .apns, .fcm, .gcm, .hms: .json
        case .browser, .unifiedpush: Template.browserFormat(of: body)
        case .wns: PlatformTemplate.wnsType(in: headers) == "wns/raw" ? .raw : .xml
        }
    }
}

extension PlatformTemplate {
    /// The `X-WNS-Type` among `headers` in the spelling Microsoft documents (lower case; the value is
    /// compared and sent that way whatever case it is given in), or nil.
    public static func wnsType(in headers: [(String, String)]) -> String? {
        headers.first { $0.0.lowercased() == "x-wns-type" }?.1.lowercased()
    }
}
