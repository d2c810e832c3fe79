/// Per-send options applied to a rendered notification, each in its service's own form.
extension RenderedNotification {
    /// Longest time-to-live a send may ask for: FCM's four weeks (APNs stores for about 30 days).
    public static let maximumTimeToLiveSeconds = 2_419_200

    /// The notification as a dry run the service validates without delivering: FCM v1 sends
    /// `validate_only: true` beside the message, legacy GCM `dry_run: true` in it. APNs and WNS
    /// have no such request; nil for them.
    public func validatingOnly() -> RenderedNotification? {
        switch platform {
        case .fcm, .hms: with(validateOnly: true)
        case .gcm: with(body: settingBody(["dry_run"], JSONValue(.bool(true))), validateOnly: true)
        case .apns, .wns, .browser, .unifiedpush: nil
        }
    }

    /// The notification with a relative time-to-live in each service's form: APNs
    /// `apns-expiration` (epoch seconds, `now` + `seconds`; 0 stays 0, "deliver once, do not
    /// store"), WNS `X-WNS-TTL`, FCM v1 `android.ttl` (`"3600s"`), legacy GCM `time_to_live`.
    public func withTimeToLive(_ seconds: Int, now: Double) -> RenderedNotification {
        switch platform {
        case .apns: with(headers: replacingHeader("apns-expiration", with: String(seconds == 0 ? 0 : Int(now) + seconds)))
        case .wns: with(headers: replacingHeader("X-WNS-TTL", with: String(seconds)))
        case .browser, .unifiedpush: with(headers: replacingHeader("TTL", with: String(seconds)))
        case .fcm, .hms: with(body: settingBody(["android", "ttl"], JSONValue(.string("\(seconds)s"))))
        case .gcm: with(body: settingBody(["time_to_live"], JSONValue(.number(String(seconds)))))
        }
    }

    /// Until when the service may keep the notification for a device that is offline, by what
    /// the payload itself says, for a notification sent at `sentAt` (epoch seconds): APNs
    /// `apns-expiration` (0 is "now or never": `sentAt`), WNS `X-WNS-TTL`, FCM v1 `android.ttl`,
    /// legacy GCM `time_to_live`. nil when it says nothing (the service's default applies).
    public func expiry(sentAt: Double) -> Double? {
        switch platform {
        case .apns:
            guard let value = HTTPHeader.value(of: "apns-expiration", in: headers).flatMap({ Int($0.trimmed()) }) else { return nil }
            return value == 0 ? sentAt : Double(value)
        case .wns, .fcm, .gcm, .browser, .hms, .unifiedpush:
            return relativeTimeToLive.map { sentAt + Double($0) }
        }
    }

    /// The notification as it should go out at `now` when it was sent at `sentAt`: a relative
    /// time-to-live (WNS, FCM v1, legacy GCM) less the whole seconds already gone, never below
    /// 0, so a retry or a redelivery after a crash does not live longer than the send asked.
    /// APNs' expiration is a point in time: unchanged, as is a payload without a time-to-live.
    public func remainingTimeToLive(at now: Double, sentAt: Double) -> RenderedNotification {
        let elapsed = now - sentAt
        guard elapsed >= 1, elapsed.isFinite, let seconds = relativeTimeToLive else { return self }
        return withTimeToLive(max(0, seconds - Int(min(elapsed, Double(Int.max / 2)))), now: now)
    }

    /// The relative time-to-live in whole seconds the payload carries, if any: WNS `X-WNS-TTL`,
    /// FCM v1 `android.ttl` (`"3600s"`, `"3.5s"`: whole seconds), legacy GCM `time_to_live`.
    private var relativeTimeToLive: Int? {
        switch platform {
        case .apns: return nil
        case .wns: return HTTPHeader.value(of: "X-WNS-TTL", in: headers).flatMap { Int($0.trimmed()) }.flatMap { $0 >= 0 ? $0 : nil }
        case .browser, .unifiedpush:
            return HTTPHeader.value(of: "TTL", in: headers).flatMap { Int($0.trimmed()) }.flatMap { $0 >= 0 ? $0 : nil }
        case .fcm, .hms:
            guard let text = (try? JSONParser.parse(body))?["android"]?["ttl"]?.stringValue, text.hasSuffix("s") else { return nil }
            return Self.wholeSeconds(Double(text.dropLast()))
        case .gcm:
            guard case .number(let text) = (try? JSONParser.parse(body))?["time_to_live"]?.kind else { return nil }
            return Self.wholeSeconds(Double(text))
        }
    }

    /// A time-to-live in seconds as whole seconds, capped far above any service's limit; nil when
    /// it is negative or no number.
    private static func wholeSeconds(_ seconds: Double?) -> Int? {
        guard let seconds, seconds >= 0, seconds.isFinite else { return nil }
        return Int(min(seconds, Double(maximumTimeToLiveSeconds * 2)))
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
