/// Per-send options applied to a rendered notification, each in its service's own form.
extension RenderedNotification {
    /// Longest time-to-live a send may ask for: FCM's four weeks (APNs stores for about 30 days).
    public static let maximumTimeToLiveSeconds = 2_419_200

    /// The notification as a dry run the service validates without delivering: FCM v1 sends
    /// `validate_only: true` beside the message, legacy GCM `dry_run: true` in it. APNs and WNS
    /// have no such request; nil for them.
    public func validatingOnly() -> RenderedNotification? {
        switch platform {
        case .fcm: with(validateOnly: true)
        case .gcm: with(body: settingBody(["dry_run"], JSONValue(.bool(true))), validateOnly: true)
        case .apns, .wns: nil
        }
    }

    /// The notification with a relative time-to-live in each service's form: APNs
    /// `apns-expiration` (epoch seconds, `now` + `seconds`; 0 stays 0, "deliver once, do not
    /// store"), WNS `X-WNS-TTL`, FCM v1 `android.ttl` (`"3600s"`), legacy GCM `time_to_live`.
    public func withTimeToLive(_ seconds: Int, now: Double) -> RenderedNotification {
        switch platform {
        case .apns: with(headers: replacingHeader("apns-expiration", with: String(seconds == 0 ? 0 : Int(now) + seconds)))
        case .wns: with(headers: replacingHeader("X-WNS-TTL", with: String(seconds)))
        case .fcm: with(body: settingBody(["android", "ttl"], JSONValue(.string("\(seconds)s"))))
        case .gcm: with(body: settingBody(["time_to_live"], JSONValue(.number(String(seconds)))))
        }
    }

    /// A copy with some parts changed.
    private func with(body: [UInt8]? = nil, headers: [HTTPHeader]? = nil, validateOnly: Bool? = nil) -> RenderedNotification {
        RenderedNotification(
            platform: platform, body: body ?? self.body, headers: headers ?? self.headers, contentType: contentType,
            validateOnly: validateOnly ?? self.validateOnly)
    }

    /// The headers with `name` (any case) replaced by one `name: value`.
    private func replacingHeader(_ name: String, with value: String) -> [HTTPHeader] {
        headers.filter { $0.name.lowercased() != name.lowercased() } + [HTTPHeader(name: name, value: value)]
    }

    /// The JSON body with `value` set at `path` (rendered bodies are JSON; kept as is otherwise).
    private func settingBody(_ path: [String], _ value: JSONValue) -> [UInt8] {
        guard let root = try? JSONParser.parse(body) else { return body }
        return root.setting(path, to: value).serialized()
    }
}
