extension JSONValue {
    /// The value as compact JSON text (numbers exactly as they were written).
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        write(to: &output)
        return output
    }

    func write(to output: inout [UInt8]) {
        switch kind {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): Escaping.appendJSONString(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Escaping.appendJSONString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                member.value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The value with `value` set at `path` (object keys), creating objects on the way and
    /// replacing what was there. A non-object on the way is replaced by an object.
    public func setting(_ path: [String], to value: JSONValue) -> JSONValue {
        guard let key = path.first else { return value }
        var members: [JSONMember]
        if case .object(let existing) = kind { members = existing } else { members = [] }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = members[index].value.setting(Array(path.dropFirst()), to: value)
        } else {
            members.append(JSONMember(key: key, value: JSONValue(.object([])).setting(Array(path.dropFirst()), to: value)))
        }
        return JSONValue(.object(members), offset: offset)
    }
}

extension RenderedNotification {
    /// Longest time-to-live a send may ask for: FCM's four weeks (APNs stores for about 30 days).
    public static let maximumTimeToLiveSeconds = 2_419_200

    /// The notification with a relative time-to-live in each service's form: APNs
    /// `apns-expiration` (epoch seconds, `now` + `seconds`; 0 stays 0, "deliver once, do not
    /// store"), WNS `X-WNS-TTL`, FCM v1 `android.ttl` (`"3600s"`), legacy GCM `time_to_live`.
    /// The notification as a dry run the service validates without delivering: FCM v1 sends
    /// `validate_only: true` beside the message, legacy GCM `dry_run: true` in it. APNs and WNS
    /// have no such request; nil for them.
    public func validatingOnly() -> RenderedNotification? {
        switch platform {
        case .fcm:
            RenderedNotification(platform: platform, body: body, headers: headers, contentType: contentType, validateOnly: true)
        case .gcm:
            RenderedNotification(
                platform: platform,
                body: (try? JSONParser.parse(body))?.setting(["dry_run"], to: JSONValue(.bool(true))).serialized() ?? body,
                headers: headers, contentType: contentType, validateOnly: true)
        case .apns, .wns:
            nil
        }
    }

    public func withTimeToLive(_ seconds: Int, now: Double) -> RenderedNotification {
        func replacing(_ name: String, with value: String) -> [HTTPHeader] {
            headers.filter { $0.name.lowercased() != name.lowercased() } + [HTTPHeader(name: name, value: value)]
        }
        func settingBody(_ path: [String], _ value: JSONValue) -> [UInt8] {
            guard let root = try? JSONParser.parse(body) else { return body }
            return root.setting(path, to: value).serialized()
        }
        switch platform {
        case .apns:
            let expiration = seconds == 0 ? 0 : Int(now) + seconds
            return RenderedNotification(
                platform: platform, body: body, headers: replacing("apns-expiration", with: String(expiration)), contentType: contentType,
                validateOnly: validateOnly)
        case .wns:
            return RenderedNotification(
                platform: platform, body: body, headers: replacing("X-WNS-TTL", with: String(seconds)), contentType: contentType,
                validateOnly: validateOnly)
        case .fcm:
            return RenderedNotification(
                platform: platform, body: settingBody(["android", "ttl"], JSONValue(.string("\(seconds)s"))), headers: headers,
                contentType: contentType, validateOnly: validateOnly)
        case .gcm:
            return RenderedNotification(
                platform: platform, body: settingBody(["time_to_live"], JSONValue(.number(String(seconds)))), headers: headers,
                contentType: contentType, validateOnly: validateOnly)
        }
    }
}
