import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateGateway

extension GatewayAssembly {
    /// How `app` reaches Apple's channel management (``Channels/Access``): its management host,
    /// bundle id, CA file and a provider-token manager of its own (the key read here), or why it
    /// cannot (no APNs, certificate authentication only, a key that does not read or sign). Never
    /// refuses a start: only channel calls fail, with the reason.
    public static func channelAccess(for app: LoadedApp, secrets: SecretResolver, clock: any PushgateClock) async -> Channels.Access {
        guard let apns = app.configuration.services.apns else {
            return .unavailable("broadcast channels need APNs: apps.\(app.id).services.apns is not configured")
        }
        guard case .token(let keyID, let teamID, let privateKey) = apns.authentication else {
            return .unavailable(
                "broadcast channels need APNs token authentication (apps.\(app.id).services.apns.token with a .p8 key): "
                    + "this app has certificate authentication only, which Apple does not document for channel management")
        }
        let tokens: APNSTokenManager
        do {
            tokens = try await APNSTokenManager(keyID: keyID, teamID: teamID, privateKeyPEM: try secrets.resolve(privateKey), clock: clock)
        } catch let error as SecretError {
            return .unavailable("apps.\(app.id).services.apns.token.privateKey: \(error.description)")
        } catch {
            return .unavailable("apps.\(app.id).services.apns.token.privateKey (key \(keyID)) is not an ES256 .p8 key")
        }
        return .apple(
            APNSChannelClient.Settings(
                endpoint: apns.channelsEndpoint, bundleID: apns.topic,
                caFile: apns.caFile.map { ConfigurationLoader.resolve($0, against: secrets.baseDirectory) }, tokens: tokens))
    }
}
