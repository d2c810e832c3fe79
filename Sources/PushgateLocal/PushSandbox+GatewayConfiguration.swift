import PNSSandbox
import PushgateConfig

extension PushSandbox {
    /// Writes the credentials and a gateway `config.json` that delivers through this sandbox into
    /// `directory`; returns the configuration's path. The gateway serves HTTPS on `listenerTLSPort`
    /// with a certificate from the sandbox's CA (nil: plain HTTP only).
    public func writeGatewayConfiguration(to directory: String, listenerPort: Int, listenerTLSPort: Int? = 8443) throws -> String {
        let files = try writeCredentialFiles(to: directory)
        let configPath = try SandboxGatewayConfiguration(
            apnsEndpoint: endpoints.apns, apnsTopic: credentials.apnsTopic, apnsKeyID: credentials.apnsKeyID,
            apnsTeamID: credentials.apnsTeamID,
            fcmEndpoint: endpoints.fcm, gcmEndpoint: endpoints.gcm, wnsTokenEndpoint: endpoints.wnsToken,
            wnsClientID: credentials.wnsClientID,
            wnsChannelHost: endpoints.wnsChannelHost, webPushHost: endpoints.webPushHost, vapidPublicKey: credentials.vapidPublicKey,
            entra: (credentials.entraTenantID, credentials.entraClientID, endpoints.entraToken),
            hms: (credentials.hmsAppID, endpoints.hms, endpoints.hmsToken), files: files, listenerPort: listenerPort,
            listenerTLSPort: listenerTLSPort, sandboxControl: endpoints.control
        ).write(to: directory)
        // Last: scripts wait for sandbox.json, then read config.json.
        try writeSummary(to: directory, files: files)
        return configPath
    }
}
