import Pushgate
import PushgateDispatch

extension Channels {
    /// Runs `body` with a client of its own (one connection, closed after): management calls are
    /// few, and nothing is left open between them.
    func withClientResult<T: Sendable>(
        _ settings: APNSChannelClient.Settings, _ body: (APNSChannelClient) async throws(APNSChannelError) -> T
    ) async -> Result<T, APNSChannelError> {
        let client: APNSChannelClient
        do { client = try APNSChannelClient.open(settings) } catch { return .failure(error) }
        let result: Result<T, APNSChannelError>
        do { result = .success(try await body(client)) } catch { result = .failure(error) }
        await client.close()
        return result
    }

    /// ``withClientResult(_:_:)`` with Apple's refusal turned into the answer it deserves.
    func withClient<T: Sendable>(
        _ settings: APNSChannelClient.Settings, _ body: (APNSChannelClient) async throws(APNSChannelError) -> T
    ) async throws(GatewayError) -> T {
        switch await withClientResult(settings, body) {
        case .success(let value): return value
        case .failure(let error): throw Self.failure(error)
        }
    }

    /// Deletes at Apple a channel the store refused to keep; a failure is logged with its id (it
    /// then shows in the list as not Pushgate's).
    func undo(_ channelID: String, settings: APNSChannelClient.Settings, name: String) async {
        let result = await withClientResult(settings) { client throws(APNSChannelError) in try await client.delete(channelID) }
        if case .failure(let error) = result {
            logger.warning(
                "a broadcast channel the store refused could not be deleted at Apple",
                metadata: ["channel": "\(name)", "apns-channel-id": "\(channelID)", "error": "\(error)"])
        }
    }

    /// What an APNs channel management failure means to the caller.
    static func failure(_ error: APNSChannelError) -> GatewayError {
        let text = error.description
        switch error.kind {
        case .credentials:
            return GatewayError(.misconfigured, "services.apns.token: \(text)")
        case .unreachable, .unreadable:
            return GatewayError(.unavailable, "\(text); retry later")
        case .invalidChannelID:
            return GatewayError(.conflict, text)
        default:
            break
        }
        switch (error.status ?? 0, error.reason) {
        case (400, "CannotCreateChannelConfig"):
            return GatewayError(
                .tooManyRequests, "\(text): the app has as many channels as Apple allows (10,000 per app and environment); delete one first"
            )
        case (400, "ChannelNotRegistered"), (400, "BadChannelId"):
            return GatewayError(.conflict, "\(text): Apple does not know this channel")
        case (400, "FeatureNotEnabled"), (403, _), (401, _):
            return GatewayError(
                .misconfigured,
                "\(text): check apns.keyId, apns.teamId and the .p8 key, and that the App ID has the Broadcast capability")
        case (404, _), (405, _):
            return GatewayError(.misconfigured, "\(text): check apns.channelsEndpoint (the management host)")
        case (429, _), (500...599, _):
            return GatewayError(.unavailable, "\(text); retry later")
        default:
            return GatewayError(.misconfigured, text)
        }
    }
}
