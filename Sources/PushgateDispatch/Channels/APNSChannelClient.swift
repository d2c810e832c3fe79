import Foundation
import Pushgate
import PushgateCurl

/// Apple's broadcast channel management API (iOS 18) for one app: create, read, list and delete
/// its channels, over HTTP/2 through libcurl, with a provider token from an ``APNSTokenManager``
/// (refreshed once on `ExpiredProviderToken`). Every request carries a new lowercase UUID as
/// `apns-request-id`; errors carry Apple's status, reason and that id.
///
/// ```swift
/// let client = try APNSChannelClient.open(settings)
/// let (channelID, _) = try await client.create(storagePolicy: 1)
/// await client.close()
/// ```
public struct APNSChannelClient: Sendable {
    /// Where and as whom: what the composition root reads from `services.apns`.
    public struct Settings: Sendable {
        /// The management host (`apns.channelsEndpoint`).
        public var endpoint: String
        /// The app's bundle id (`apns.topic`).
        public var bundleID: String
        /// A CA bundle to trust instead of the system's (the sandbox's), already resolved.
        public var caFile: String?
        public var tokens: APNSTokenManager

        public init(endpoint: String, bundleID: String, caFile: String?, tokens: APNSTokenManager) {
            self.endpoint = endpoint
            self.bundleID = bundleID
            self.caFile = caFile
            self.tokens = tokens
        }
    }

    public let settings: Settings
    private let transport: any PushTransport

    /// A client over `transport` (closed with ``close()``).
    public init(settings: Settings, transport: any PushTransport) {
        self.settings = settings
        self.transport = transport
    }

    /// A client with a connection pool of its own (one HTTP/2 connection), to be closed with ``close()``.
    public static func open(_ settings: Settings) throws(APNSChannelError) -> APNSChannelClient {
        do {
            let transport = try CurlPushTransport(configuration: .init(httpVersion: .http2, caFile: settings.caFile))
            return APNSChannelClient(settings: settings, transport: transport)
        } catch {
            throw APNSChannelError(.unreachable, detail: "cannot open a connection pool for APNs channel management: \(error.message)")
        }
    }

    public func close() async { await transport.shutdown() }

    /// Creates a channel with `storagePolicy` (0 no message stored, 1 the most recent one):
    /// Apple's channel id and the request's id.
    public func create(storagePolicy: Int) async throws(APNSChannelError) -> (channelID: String, requestID: String) {
        let (response, requestID) = try await exchange(.create, storagePolicy: storagePolicy)
        guard let channelID = response.header("apns-channel-id"), APNSChannelWire.isChannelID(channelID) else {
            throw APNSChannelError(
                .unreadable, status: response.status, requestID: requestID,
                detail: "APNs created a channel but answered no usable apns-channel-id")
        }
        return (channelID, response.header("apns-request-id") ?? requestID)
    }

    /// The channel's `message-storage-policy`.
    public func read(_ channelID: String) async throws(APNSChannelError) -> Int {
        let (response, requestID) = try await exchange(.read, channelID: channelID)
        guard let policy = APNSChannelWire.storagePolicy(response) else {
            throw APNSChannelError(
                .unreadable, status: response.status, requestID: requestID,
                detail: "APNs answered a channel read without a message-storage-policy of 0 or 1")
        }
        return policy
    }

    /// Every channel id of the app, as Apple lists them.
    public func list() async throws(APNSChannelError) -> [String] {
        let (response, requestID) = try await exchange(.list)
        guard let ids = APNSChannelWire.channelIDs(response) else {
            throw APNSChannelError(
                .unreadable, status: response.status, requestID: requestID,
                detail: "APNs answered the channel list without {\"channels\": [ids]}")
        }
        return ids
    }

    public func delete(_ channelID: String) async throws(APNSChannelError) {
        _ = try await exchange(.delete, channelID: channelID)
    }

    /// Sends one operation with the current provider token; on `ExpiredProviderToken`, once more
    /// with a new one. Answers the successful answer and its request id.
    private func exchange(
        _ operation: APNSChannelWire.Operation, channelID: String? = nil, storagePolicy: Int = 0
    ) async throws(APNSChannelError) -> (PushHTTPResponse, String) {
        if let channelID, !APNSChannelWire.isChannelID(channelID) {
            throw APNSChannelError(.invalidChannelID, detail: "'\(channelID.prefix(64))' is not a channel id APNs issues (base64)")
        }
        var token = try await providerToken(refreshing: nil)
        var refreshed = false
        while true {
            let requestID = UUID().uuidString.lowercased()
            let request = APNSChannelWire.request(
                operation, endpoint: settings.endpoint, bundleID: settings.bundleID, channelID: channelID,
                storagePolicy: storagePolicy, providerToken: token, requestID: requestID)
            let response: PushHTTPResponse
            do {
                response = try await transport.execute(request)
            } catch {
                throw APNSChannelError(
                    .unreachable, requestID: requestID,
                    detail: "APNs channel management at \(settings.endpoint) did not answer: \(error.description)")
            }
            if APNSChannelWire.isExpiredToken(response), !refreshed {
                refreshed = true
                token = try await providerToken(refreshing: token)
                continue
            }
            guard response.status == APNSChannelWire.successStatus(of: operation) else {
                throw APNSChannelError.refused(operation, response, requestID: requestID)
            }
            guard !response.isBodyTruncated else {
                throw APNSChannelError(
                    .unreadable, status: response.status, requestID: requestID,
                    detail: "APNs answered more than \(request.maximumResponseBodyBytes) bytes to a channel \(operation.rawValue)")
            }
            return (response, requestID)
        }
    }

    private func providerToken(refreshing previous: String?) async throws(APNSChannelError) -> String {
        do {
            if let previous { return try await settings.tokens.refresh(after: previous) }
            return try await settings.tokens.token()
        } catch {
            // The signing error names the key id at most, never the key.
            throw APNSChannelError(
                .credentials, detail: "cannot sign an APNs provider token with key id \(settings.tokens.keyID): \(error)")
        }
    }
}
