import Foundation
import Pushgate

/// Notification Hubs' default rule names.
enum SharedAccessRuleNames {
    static let listen = SharedAccessRule.defaultListenName
    static let full = SharedAccessRule.defaultFullName
}

/// Writes a gateway `config.json` that delivers through a push-service sandbox: every service's
/// endpoint points at the sandbox, its CA is trusted, its credentials come from the files the
/// sandbox wrote, and WNS channels on the sandbox host are allowed.
public struct SandboxGatewayConfiguration: Sendable {
    public var apnsEndpoint: String
    public var apnsTopic: String
    public var apnsKeyID: String
    public var apnsTeamID: String
    public var fcmEndpoint: String
    public var gcmEndpoint: String
    public var wnsTokenEndpoint: String
    public var wnsClientID: String
    public var wnsChannelHost: String
    /// The sandbox's Web Push host (`127.0.0.1:PORT`) and the VAPID application server key.
    public var webPushHost: String?
    public var vapidPublicKey: String?
    /// WNS through Microsoft Entra ID (as Windows App SDK apps authenticate): the tenant, the
    /// application's client id and the tenant's token endpoint on the sandbox; the secret is the
    /// `entraClientSecret` file. Without them, the classic package credentials.
    public var entra: (tenantID: String, clientID: String, tokenEndpoint: String)?
    /// Huawei Push Kit: the app id, the send API's base and the OAuth token endpoint on the
    /// sandbox; the secret is the `hmsAppSecret` file. Without them, no `hms` service.
    public var hms: (appID: String, endpoint: String, tokenEndpoint: String)?
    /// Paths of the files the sandbox wrote: `ca`, `apnsKey`, `serviceAccount`, `gcmServerKey`,
    /// `wnsClientSecret`, `vapidPrivateKey`, `hmsAppSecret`.
    public var files: [String: String]
    /// Gateway listener port (0: the OS picks).
    public var listenerPort: Int
    /// The gateway's HTTPS port (`listener.tls.port`; 0: the OS picks), served with the
    /// `gatewayCertificate` and `gatewayKey` files the sandbox's CA issued; nil: no HTTPS.
    public var listenerTLSPort: Int?
    /// Whether the tutorials' "password equals user name" rule is on (local development only).
    public var demoPasswordEqualsName: Bool
    /// The sandbox's control API, for the web console's sandbox devices and inboxes.
    public var sandboxControl: String?

    public init(
        apnsEndpoint: String, apnsTopic: String, apnsKeyID: String, apnsTeamID: String, fcmEndpoint: String, gcmEndpoint: String,
        wnsTokenEndpoint: String, wnsClientID: String, wnsChannelHost: String, webPushHost: String? = nil, vapidPublicKey: String? = nil,
        entra: (tenantID: String, clientID: String, tokenEndpoint: String)? = nil,
        hms: (appID: String, endpoint: String, tokenEndpoint: String)? = nil, files: [String: String], listenerPort: Int = 8080,
        listenerTLSPort: Int? = 8443, demoPasswordEqualsName: Bool = true, sandboxControl: String? = nil
    ) {
        self.apnsEndpoint = apnsEndpoint
        self.apnsTopic = apnsTopic
        self.apnsKeyID = apnsKeyID
        self.apnsTeamID = apnsTeamID
        self.fcmEndpoint = fcmEndpoint
        self.gcmEndpoint = gcmEndpoint
        self.wnsTokenEndpoint = wnsTokenEndpoint
        self.wnsClientID = wnsClientID
        self.wnsChannelHost = wnsChannelHost
        self.webPushHost = webPushHost
        self.vapidPublicKey = vapidPublicKey
        self.entra = entra
        self.hms = hms
        self.files = files
        self.listenerPort = listenerPort
        self.listenerTLSPort = listenerTLSPort
        self.demoPasswordEqualsName = demoPasswordEqualsName
        self.sandboxControl = sandboxControl
    }

    /// The configuration as a JSON object, templates referenced as `templates/…` next to it.
    public func jsonObject() -> [String: Any] {
        func file(_ name: String) -> [String: String] { ["file": files[name] ?? ""] }
        let ca = files["ca"] ?? ""
        func template(_ purpose: String, _ platform: String, _ ext: String, _ headers: [String: String] = [:]) -> [String: Any] {
            var object: [String: Any] = ["file": "templates/\(purpose).\(platform).\(ext)"]
            if !headers.isEmpty { object["headers"] = headers }
            return object
        }
        var console: [String: Any] = ["enabled": true]
        if let sandboxControl { console["sandboxControl"] = sandboxControl }
        var listener: [String: Any] = ["host": "127.0.0.1", "port": listenerPort]
        // HTTPS beside plain HTTP (the listener is on loopback): Notification Hubs clients derive
        // https://host:port/ from a connection string.
        if let listenerTLSPort, files["gatewayCertificate"] != nil, files["gatewayKey"] != nil {
            listener["tls"] = ["certificateChain": file("gatewayCertificate"), "privateKey": file("gatewayKey"), "port": listenerTLSPort]
        }
        var handles: [String: Any] = ["wnsChannelHosts": [wnsChannelHost, "*.notify.windows.com"]]
        var services: [String: Any] = [
            "apns": [
                // The sandbox serves channel management and broadcasts on its APNs listener.
                "endpoint": apnsEndpoint, "channelsEndpoint": apnsEndpoint, "broadcastEndpoint": apnsEndpoint, "topic": apnsTopic,
                "caFile": ca,
                "token": ["keyId": apnsKeyID, "teamId": apnsTeamID, "privateKey": file("apnsKey")],
            ],
            "fcm": ["endpoint": fcmEndpoint, "serviceAccount": file("serviceAccount"), "caFile": ca],
            "gcm": ["endpoint": gcmEndpoint, "serverKey": file("gcmServerKey"), "caFile": ca],
            "wns": [
                "tokenEndpoint": wnsTokenEndpoint, "clientId": wnsClientID, "clientSecret": file("wnsClientSecret"), "caFile": ca,
            ],
        ]
        if let entra, files["entraClientSecret"] != nil {
            services["wns"] = [
                "tenantId": entra.tenantID, "clientId": entra.clientID, "clientSecret": file("entraClientSecret"),
                "tokenEndpoint": entra.tokenEndpoint, "caFile": ca,
            ]
        }
        if let hms, files["hmsAppSecret"] != nil {
            services["hms"] = [
                "endpoint": hms.endpoint, "tokenEndpoint": hms.tokenEndpoint, "appId": hms.appID, "appSecret": file("hmsAppSecret"),
                "caFile": ca,
            ]
        }
        var notify: [String: Any] = [
            "apns": template("notify", "apns", "json", ["apns-push-type": "alert", "apns-priority": "10"]),
            "fcm": template("notify", "fcm", "json"), "gcm": template("notify", "gcm", "json"), "hms": template("notify", "hms", "json"),
            "wns": template("notify", "wns", "xml", ["X-WNS-Type": "wns/toast"]),
        ]
        var secure: [String: Any] = [
            "apns": template("secure", "apns", "json", ["apns-push-type": "background", "apns-priority": "5"]),
            "fcm": template("secure", "fcm", "json"), "gcm": template("secure", "gcm", "json"), "hms": template("secure", "hms", "json"),
            "wns": template("secure", "wns", "txt", ["X-WNS-Type": "wns/raw"]),
        ]
        if let webPushHost, let vapidPublicKey, files["vapidPrivateKey"] != nil {
            handles["webPushHosts"] = [webPushHost] + WebPushLimits.defaultHosts
            services["browser"] = [
                "subject": "mailto:push@example.com", "vapidPublicKey": vapidPublicKey, "vapidPrivateKey": file("vapidPrivateKey"),
                "caFile": ca,
            ]
            notify["browser"] = template("notify", "browser", "json", ["TTL": "86400", "Urgency": "normal"])
            secure["browser"] = template("secure", "browser", "json", ["TTL": "600", "Urgency": "high"])
            // The sandbox's UnifiedPush distributor is on the same listener: its explicit
            // host:port is what admits a loopback address.
            handles["unifiedPushHosts"] = [webPushHost]
            services["unifiedpush"] = [
                "subject": "mailto:push@example.com", "vapidPublicKey": vapidPublicKey, "vapidPrivateKey": file("vapidPrivateKey"),
                "caFile": ca,
            ]
            notify["unifiedpush"] = template("notify", "unifiedpush", "json", ["TTL": "86400", "Urgency": "normal"])
            secure["unifiedpush"] = template("secure", "unifiedpush", "json", ["TTL": "600", "Urgency": "high"])
        }
        return [
            "listener": listener,
            "console": console,
            "store": ["sqlite": ["path": "pushgate.sqlite"]],
            "auth": ["users": [Any](), "admins": [Any](), "demoPasswordEqualsName": demoPasswordEqualsName],
            "apps": [
                "default": [
                    "handles": handles,
                    "services": services,
                    "accessRules": [
                        SharedAccessRuleNames.listen: ["key": ["file": Self.keyFile(SharedAccessRuleNames.listen)], "rights": ["Listen"]],
                        SharedAccessRuleNames.full: [
                            "key": ["file": Self.keyFile(SharedAccessRuleNames.full)], "rights": ["Listen", "Manage", "Send"],
                        ],
                    ],
                    "templates": ["notify": notify, "secure": secure],
                ]
            ],
        ]
    }

    /// Where a default rule's key is written, relative to the configuration.
    static func keyFile(_ rule: String) -> String { "hub-keys/default.\(rule).key" }

    /// Writes each default rule's key (32 random bytes, base64, as Notification Hubs issues them)
    /// unless it exists, readable by the owner only.
    static func writeKeys(in directory: String) throws {
        let folder = (directory as NSString).appendingPathComponent("hub-keys")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for rule in [SharedAccessRuleNames.listen, SharedAccessRuleNames.full] {
            let path = (directory as NSString).appendingPathComponent(keyFile(rule))
            guard !FileManager.default.fileExists(atPath: path) else { continue }
            var generator = SystemRandomNumberGenerator()
            let key = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
            guard FileManager.default.createFile(atPath: path, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
        }
    }

    /// Writes `config.json` and the embedded templates into `directory`; returns the config path.
    @discardableResult
    public func write(to directory: String) throws -> String {
        _ = try EmbeddedTemplates.write(to: directory)
        try Self.writeKeys(in: directory)
        let data = try JSONSerialization.data(
            withJSONObject: jsonObject(), options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        let path = (directory as NSString).appendingPathComponent("config.json")
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }
}
