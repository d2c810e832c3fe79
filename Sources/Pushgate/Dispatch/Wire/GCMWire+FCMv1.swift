/// A legacy GCM message delivered through FCM HTTP v1, as Google's migration guide maps the
/// fields. Google shut the legacy API down in 2024; registration tokens are the same for both
/// APIs, so a `gcm` registration is reached through v1 with its message translated:
///
/// | legacy | v1 |
/// |---|---|
/// | `notification.title`, `.body`, `.image` | `notification.title`, `.body`, `.image` |
/// | `notification.icon`, `.sound`, `.tag`, `.color`, `.click_action`, `.body_loc_key`, `.body_loc_args`, `.title_loc_key`, `.title_loc_args` | `android.notification.*` (same names) |
/// | `notification.android_channel_id` | `android.notification.channel_id` |
/// | `data` (any values) | `data` (every value a string: JSON text for non-strings) |
/// | `priority` `high`/`normal` (or 10/5) | `android.priority` `HIGH`/`NORMAL`, `apns.headers.apns-priority` 10/5 |
/// | `time_to_live` (whole seconds) | `android.ttl` (`"3600s"`), `apns.headers.apns-expiration` (now + ttl; 0 stays 0) |
/// | `collapse_key` | `android.collapse_key`, `apns.headers.apns-collapse-id` |
/// | `restricted_package_name` | `android.restricted_package_name` |
/// | `notification.badge`, `notification.sound` (iOS) | `apns.payload.aps.badge`, `.sound` |
/// | `content_available`, `mutable_content` | `apns.payload.aps.content-available`, `.mutable-content` |
/// | `dry_run: true` | `validate_only: true` |
///
/// The legacy API applied `priority`, `time_to_live` and `collapse_key` to iOS devices too; so does
/// the translation, through `apns.headers`. A `data` value of `null` is left out.
public enum LegacyGCMTranslation {
    /// Legacy notification fields that v1 keeps at the top of `notification`.
    static let commonNotificationFields: Set<String> = ["title", "body", "image"]
    /// Legacy notification fields that are Android's own in v1, with their v1 names.
    static let androidNotificationFields: [String: String] = [
        "icon": "icon", "sound": "sound", "tag": "tag", "color": "color", "click_action": "click_action",
        "body_loc_key": "body_loc_key", "body_loc_args": "body_loc_args", "title_loc_key": "title_loc_key",
        "title_loc_args": "title_loc_args", "android_channel_id": "channel_id",
    ]

    /// The v1 message (without its target) for a rendered legacy message sent at `now` (epoch
    /// seconds: an APNs expiration is a point in time).
    public static func v1Notification(_ notification: RenderedNotification, now: Double) -> RenderedNotification {
        guard let root = try? JSONParser.parse(notification.body), let members = root.objectMembers else {
            return RenderedNotification(
                platform: .fcm, body: notification.body, headers: [], contentType: "application/json",
                validateOnly: notification.validateOnly)
        }
        var message: [JSONMember] = []
        var android: [JSONMember] = []
        var androidNotification: [JSONMember] = []
        var aps: [JSONMember] = []
        var apnsHeaders: [JSONMember] = []
        var validateOnly = notification.validateOnly
        func string(_ text: String) -> JSONValue { JSONValue(.string(text)) }
        for member in members {
            let value = member.value
            switch member.key {
            case "notification":
                var common: [JSONMember] = []
                for field in value.objectMembers ?? [] {
                    if commonNotificationFields.contains(field.key) {
                        common.append(JSONMember(key: field.key, value: field.value))
                    } else if let name = androidNotificationFields[field.key] {
                        androidNotification.append(JSONMember(key: name, value: Self.locArguments(field.value, name: name)))
                    }
                    // The legacy iOS fields.
                    if field.key == "sound" { aps.append(JSONMember(key: "sound", value: field.value)) }
                    if field.key == "badge",
                        let badge = field.value.stringValue.flatMap({ Int($0) }).map(String.init) ?? Self.wholeNumber(field.value)
                    {
                        aps.append(JSONMember(key: "badge", value: JSONValue(.number(badge))))
                    }
                    // Fields of the legacy iOS notification (badge, subtitle) have no v1 place here.
                }
                if !common.isEmpty { message.append(JSONMember(key: "notification", value: JSONValue(.object(common)))) }
            case "data":
                let entries = (value.objectMembers ?? []).filter { $0.value.kind != .null }.map { entry in
                    JSONMember(
                        key: entry.key, value: string(entry.value.stringValue ?? String(decoding: entry.value.serialized(), as: UTF8.self)))
                }
                message.append(JSONMember(key: "data", value: JSONValue(.object(entries))))
            case "priority":
                let text = value.stringValue ?? String(decoding: value.serialized(), as: UTF8.self)
                let high = ["high", "10"].contains(text.lowercased())
                android.append(JSONMember(key: "priority", value: string(high ? "HIGH" : "NORMAL")))
                apnsHeaders.append(JSONMember(key: "apns-priority", value: string(high ? "10" : "5")))
            case "time_to_live":
                // Whole seconds only (FCM v1 refuses "6e2s"; a string is no legacy TTL).
                if let seconds = Self.wholeNumber(value), let count = Int(seconds), count >= 0 {
                    android.append(JSONMember(key: "ttl", value: string(seconds + "s")))
                    apnsHeaders.append(JSONMember(key: "apns-expiration", value: string(count == 0 ? "0" : String(Int(now) + count))))
                }
            case "collapse_key":
                android.append(JSONMember(key: "collapse_key", value: value))
                if let text = value.stringValue, text.utf8.count <= 64 {
                    apnsHeaders.append(JSONMember(key: "apns-collapse-id", value: value))
                }
            case "restricted_package_name":
                android.append(JSONMember(key: member.key, value: value))
            case "content_available":
                if value.kind == .bool(true) { aps.append(JSONMember(key: "content-available", value: JSONValue(.number("1")))) }
            case "mutable_content":
                if value.kind == .bool(true) { aps.append(JSONMember(key: "mutable-content", value: JSONValue(.number("1")))) }
            case "dry_run":
                if value.kind == .bool(true) { validateOnly = true }
            default:
                break
            }
        }
        if !androidNotification.isEmpty { android.append(JSONMember(key: "notification", value: JSONValue(.object(androidNotification)))) }
        if !android.isEmpty { message.append(JSONMember(key: "android", value: JSONValue(.object(android)))) }
        var apns: [JSONMember] = []
        if !apnsHeaders.isEmpty { apns.append(JSONMember(key: "headers", value: JSONValue(.object(apnsHeaders)))) }
        if !aps.isEmpty {
            apns.append(JSONMember(key: "payload", value: JSONValue(.object([JSONMember(key: "aps", value: JSONValue(.object(aps)))]))))
        }
        if !apns.isEmpty { message.append(JSONMember(key: "apns", value: JSONValue(.object(apns)))) }
        return RenderedNotification(
            platform: .fcm, body: JSONValue(.object(message)).serialized(), headers: [], contentType: "application/json",
            validateOnly: validateOnly)
    }

    /// A JSON number written as a whole number (`600`, not `6e2` or `600.5`), as text.
    static func wholeNumber(_ value: JSONValue) -> String? {
        guard case .number(let text) = value.kind, !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return text
    }

    /// `body_loc_args` / `title_loc_args`: v1 takes an array of strings; the legacy API also took
    /// the array as a JSON string.
    static func locArguments(_ value: JSONValue, name: String) -> JSONValue {
        guard name.hasSuffix("_loc_args") else { return value }
        if let text = value.stringValue, let parsed = try? JSONParser.parse(text), parsed.arrayElements != nil { return parsed }
        return value
    }
}
