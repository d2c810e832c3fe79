/// APNs broadcast channel management on the wire (iOS 18; protocols.md §8), no I/O: the four
/// requests and what their answers mean.
///
/// | op | request | answer |
/// |---|---|---|
/// | create | `POST /1/apps/<bundleId>/channels` `{"message-storage-policy":n,"push-type":"LiveActivity"}` | 201, `apns-channel-id` |
/// | read | `GET /1/apps/<bundleId>/channels` + `apns-channel-id` | 200 `{"message-storage-policy":n,…}` |
/// | list | `GET /1/apps/<bundleId>/all-channels` | 200 `{"channels":[…]}` |
/// | delete | `DELETE /1/apps/<bundleId>/channels` + `apns-channel-id` | 204 |
///
/// Refusals carry `{"reason": …}`: `ChannelNotRegistered` (unknown, or the other environment),
/// `BadChannelId`, `MissingChannelId`, `MissingPushType`, `InvalidPushType`,
/// `CannotCreateChannelConfig` (the app's limit at Apple), the token reasons (403), …
public enum APNSChannelWire {
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        case create, read, list, delete
    }

    /// The only push type a channel carries.
    public static let pushType = "LiveActivity"
    /// A list answer: 10,000 channel ids of about 24 characters fit in a quarter of it.
    public static let maximumListAnswerBytes = 1024 * 1024
    /// Any other answer: a status, a few headers, at most a short JSON object.
    public static let maximumAnswerBytes = 16 * 1024
    /// The status each operation answers when it succeeds.
    public static func successStatus(of operation: Operation) -> Int {
        switch operation {
        case .create: 201
        case .read, .list: 200
        case .delete: 204
        }
    }

    /// The request for `operation`; `channelID` for read and delete, `storagePolicy` for create.
    /// `providerToken` and `requestID` (a lowercase UUID) go into headers here and nowhere else.
    public static func request(
        _ operation: Operation, endpoint: String, bundleID: String, channelID: String? = nil, storagePolicy: Int = 0,
        providerToken: String, requestID: String
    ) -> PushHTTPRequest {
        var headers = [
            HTTPHeader(name: "authorization", value: "bearer \(providerToken)"), HTTPHeader(name: "apns-request-id", value: requestID),
        ]
        if let channelID { headers.append(HTTPHeader(name: "apns-channel-id", value: channelID)) }
        let base = "\(endpoint)/1/apps/\(bundleID)"
        var request: PushHTTPRequest
        switch operation {
        case .create:
            headers.append(HTTPHeader(name: "content-type", value: "application/json"))
            request = PushHTTPRequest(
                method: "POST", url: "\(base)/channels", headers: headers,
                body: Array(#"{"message-storage-policy":\#(storagePolicy),"push-type":"\#(pushType)"}"#.utf8))
        case .read: request = PushHTTPRequest(method: "GET", url: "\(base)/channels", headers: headers, body: [])
        case .list: request = PushHTTPRequest(method: "GET", url: "\(base)/all-channels", headers: headers, body: [])
        case .delete: request = PushHTTPRequest(method: "DELETE", url: "\(base)/channels", headers: headers, body: [])
        }
        request.maximumResponseBodyBytes = operation == .list ? maximumListAnswerBytes : maximumAnswerBytes
        return request
    }

    /// Whether `id` can be sent as `apns-channel-id`: base64 (Apple's ids are), at most 256
    /// characters, so that nothing stored or listed can smuggle a header.
    public static func isChannelID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 256
            && id.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2B
                    || byte == 0x2F || byte == 0x3D || byte == 0x2D || byte == 0x5F
            }
    }

    /// Apple's reason for a refusal (`{"reason": …}`), if it gave one.
    public static func reason(_ response: PushHTTPResponse) -> String? { response.json?["reason"]?.stringValue }

    /// A read answer's `message-storage-policy`, or nil when the body does not carry 0 or 1.
    public static func storagePolicy(_ response: PushHTTPResponse) -> Int? {
        guard case .number(let text)? = response.json?["message-storage-policy"]?.kind, let policy = Int(text), policy == 0 || policy == 1
        else { return nil }
        return policy
    }

    /// A list answer's channel ids, or nil when the body is not `{"channels":[string…]}`.
    public static func channelIDs(_ response: PushHTTPResponse) -> [String]? {
        guard let elements = response.json?["channels"]?.arrayElements else { return nil }
        let ids = elements.compactMap(\.stringValue)
        return ids.count == elements.count ? ids : nil
    }

    /// Whether Apple refused `token` as stale: a newly signed one is the documented cure.
    public static func isExpiredToken(_ response: PushHTTPResponse) -> Bool {
        response.status == 403 && reason(response) == "ExpiredProviderToken"
    }
}
