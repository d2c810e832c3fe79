/// Behaviour the services' public documentation does not pin down, decided once, here, so that
/// it is easy to find and change.
enum SandboxAssumptions {
    /// Web Push: how far a VAPID token's `exp` may pass 24 hours ahead (clock skew) before the
    /// service refuses it.
    static let webPushClockSkewSeconds = 60.0
    /// APNs: a body that is not a JSON object. Apple's reason table has no entry for it, so the
    /// sandbox answers as for an empty payload.
    static let apnsInvalidJSONReason = "PayloadEmpty"
    /// APNs: `apns-push-type: background` with `apns-priority: 10`.
    static let apnsBackgroundPriorityReason = "BadPriority"
    /// APNs: a well-formed token the sandbox never issued (the real service says the token is bad
    /// for this environment).
    static let apnsUnknownTokenReason = "BadDeviceToken"
    /// APNs: an `apns-topic` other than the app's bundle id (with its push-type suffix).
    static let apnsWrongTopicReason = "TopicDisallowed"
    /// APNs: how long a new provider token must wait after the previous one (Apple: no more often
    /// than every 20 minutes).
    static let apnsMinimumTokenRefreshSeconds = 20.0 * 60
    /// APNs: provider tokens older than this are `ExpiredProviderToken`.
    static let apnsProviderTokenLifetimeSeconds = 3600.0
    /// APNs: push types that need a provider token (protocols.md §8.3: `liveactivity` and
    /// `location` are "JWT only"); with a certificate they are 403 `InvalidProviderToken`
    /// (§7 names `InvalidProviderToken`/`MissingProviderToken` for a certificate; which one is
    /// UNCONFIRMED).
    static let apnsTokenOnlyPushTypes: Set<String> = ["liveactivity", "location"]

    // Live Activities (ActivityKit) and broadcast channels. APNs documents no reason for a Live
    // Activity payload it refuses (the device ignores a bad one); these reasons are the sandbox's,
    // all UNCONFIRMED, named in Apple's `Missing…`/`Bad…` style so a gateway's mistake shows.
    /// `aps.event` absent.
    static let liveActivityMissingEventReason = "MissingEvent"
    /// `aps.event` not `start`/`update`/`end`, or not one the request allows (a broadcast's
    /// `start`: "broadcast cannot start an activity").
    static let liveActivityBadEventReason = "BadEvent"
    static let liveActivityMissingTimestampReason = "MissingTimestamp"
    /// `aps.timestamp` not a number.
    static let liveActivityBadTimestampReason = "BadTimestamp"
    /// `aps.content-state` absent from a `start` or `update`.
    static let liveActivityMissingContentStateReason = "MissingContentState"
    /// `aps.content-state` not an object.
    static let liveActivityBadContentStateReason = "BadContentState"
    /// `aps.attributes-type` absent (or not a non-empty string) in a `start`.
    static let liveActivityMissingAttributesTypeReason = "MissingAttributesType"
    /// `aps.attributes` absent (or not an object) in a `start`.
    static let liveActivityMissingAttributesReason = "MissingAttributes"
    /// `aps.stale-date` or `aps.dismissal-date` not a number.
    static let liveActivityBadDateReason = "BadDate"
    /// `input-push-token` other than 0 or 1, `input-push-channel` not a string, or both at once
    /// (Apple: one or the other).
    static let liveActivityBadInputPushReason = "BadInputPush"
    /// A `liveactivity` push without `apns-push-type` to a Live Activity token. (Another push type
    /// to such a token is `DeviceTokenNotForTopic`: the token belongs to the
    /// `.push-type.liveactivity` topic.)
    static let liveActivityMissingPushTypeReason = "InvalidPushType"
    /// A start whose `input-push-channel` the app has no channel for (APNs' broadcast reason
    /// reused; whether APNs checks at all is UNCONFIRMED).
    static let liveActivityUnknownChannelReason = "ChannelNotRegistered"
    /// Broadcast channel ids are base64 with no fixed length; longer than this is `BadChannelId`
    /// (the sandbox's own are 24 characters).
    static let apnsMaximumChannelIDLength = 64
    /// Channel creation whose `message-storage-policy` is missing or not 0/1 (no documented
    /// reason).
    static let apnsBadStoragePolicyReason = "BadMessageStoragePolicy"
    /// Channel management with a body that is not a JSON object.
    static let apnsBadChannelBodyReason = "BadRequest"
    /// A broadcast without `apns-expiration` (documented as required; the reason is UNCONFIRMED).
    static let apnsMissingExpirationReason = "BadExpirationDate"
    /// A broadcast without `apns-priority` (documented as required, 5 or 10).
    static let apnsMissingPriorityReason = "BadPriority"

    /// FCM: what counts against the 4096-byte limit: the `message` object without its target.
    static let fcmMaximumMessageBytes = 4096
    /// FCM's error-code reference: "2048 bytes in the case of messages to topics".
    static let fcmMaximumTopicMessageBytes = 2048
    /// Firebase's topic-messaging limits: an app instance may be subscribed to 2,000 topics; a
    /// batch subscription names at most 1,000 registration tokens.
    static let fcmMaximumTopicsPerInstance = 2000
    static let fcmMaximumTokensPerBatch = 1000
    /// Firebase: a condition names at most five topics.
    static let fcmMaximumConditionTopics = 5
    /// FCM: the `message` of a 400 whose cause is in a google.rpc.BadRequest detail (an invalid
    /// token, a message too big), as real answers captured by client libraries show.
    static let fcmInvalidArgumentMessage = "Request contains an invalid argument."
    /// FCM: the `message` of a 400 for a message over the limit (firebase-admin-go#580, 2023; an
    /// older capture has the generic text above and no details).
    static let fcmMessageTooBigMessage = "Android message is too big"
    /// OAuth access-token lifetimes (Google: 3599 s; WNS: 86400 s).
    static let fcmAccessTokenLifetimeSeconds = 3599.0
    static let wnsAccessTokenLifetimeSeconds = 86400.0
    /// OAuth error texts (RFC 6749 shape; Google's exact wording is not published).
    static let invalidGrantDescription = "Invalid JWT Signature."

    // Huawei Push Kit v1 (protocols.md §9). Huawei documents the codes and the OAuth answer; the
    // rest below is the sandbox's choice.
    /// Push Kit's access tokens live `expires_in` 3600 seconds (documented).
    static let hmsAccessTokenLifetimeSeconds = 3600.0
    /// Tokens in one request (documented: 1 to 1,000; outside, 80300010).
    static let hmsMaximumTokens = 1000
    /// The body's limit in bytes, tokens not counted (documented: 4096). The sandbox counts the
    /// whole request body less each token's characters, quotes and separator.
    static let hmsMaximumMessageBytes = 4096
    /// The HTTP status each Push Kit code comes with: UNCONFIRMED for v1 (Huawei's v3 page lists
    /// 200, 400, 401, 404, 500, 502 and 503 without tying them to codes). The sandbox answers a
    /// partial success 200, its refusals of the request 400, OAuth failures 401, the internal
    /// error 500; a code not listed (an injected fault's) comes with the fault's status.
    static let hmsStatusByCode: [String: Int] = [
        "80000000": 200, "80100000": 200, "80100001": 400, "80100003": 400, "80100013": 400, "80200001": 401, "80200003": 401,
        "80300007": 400, "80300008": 400, "80300010": 400, "81000001": 500,
    ]
    /// The code an injected fault without a reason answers with (Push Kit's internal error).
    static let hmsDefaultFaultCode = "81000001"
    /// A partial success's `msg`: JSON text `{"success":n,"failure":m,"illegal_tokens":[…]}`. The
    /// member names are v1's as gorush and Huawei's samples read them; the exact shape is
    /// UNCONFIRMED (v3 answers `illegalTokens` grouped by reason instead).
    static let hmsIllegalTokensMember = "illegal_tokens"
    /// OAuth: a missing parameter or a grant type other than `client_credentials` (Huawei lists no
    /// sub-error for it; 20001 is UNCONFIRMED).
    static let hmsMissingParameterSubError = 20001
    /// OAuth: an injected fault's body, `{"error":<reason or status>,"error_description":…}`
    /// (Huawei's body for its 503 rate limiting is UNCONFIRMED).
    static let hmsOAuthFaultDescription = "Injected fault"
    // Topic and condition sends are accepted (80000000) and reach no sandbox device: the sandbox
    // has no Push Kit topic subscription API.

    /// GCM legacy: most tokens in one multicast request.
    static let gcmMaximumRegistrationIDs = 1000
    /// WNS: `X-WNS-Msg-ID` length (documented as at most 16 characters).
    static let wnsMessageIDLength = 16
    // UnifiedPush (the distributor, ntfy's behaviour): an uninstalled app is "no active
    // subscriber" (ntfy's 507, code 50701); an expired device is a gone endpoint, 410 (autopush's
    // and the spec's, code 41001 in ntfy's shape: ntfy itself has no such answer); an unknown
    // endpoint 404 (40401). A VAPID token is required only of a subscription made with
    // `"vapid": true` (Sunup's and NextPush's way), checked when one comes.
}
