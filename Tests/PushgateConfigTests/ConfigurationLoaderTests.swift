import Foundation
import Pushgate
import PushgateConfig
import Testing

/// A temporary folder with a config.json and template files, removed afterwards.
struct ConfigFolder: ~Copyable {
    let path: String

    init(files: [String: String]) throws {
        path = NSTemporaryDirectory() + "pushgate-config-" + UUID().uuidString
        for (name, content) in files {
            let file = path + "/" + name
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try content.write(toFile: file, atomically: true, encoding: .utf8)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    var configFile: String { path + "/config.json" }
}

@Suite struct ConfigurationLoaderTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func theShippedConfigurationReproducesTheTutorialPayloads() throws {
        let loaded = try ConfigurationLoader.load(file: Self.repositoryRoot + "/config.json")
        let notify = try #require(loaded.defaultApp.templates["notify"])
        let properties: TemplateProperties = ["user": "bob", "message": "Hello"]
        #expect(try notify[.apns]?.template.renderString(properties) == #"{"aps":{"alert":"From bob: Hello"}}"#)
        #expect(try notify[.fcm]?.template.renderString(properties) == #"{"data":{"message":"From bob: Hello"}}"#)
        #expect(try notify[.gcm]?.template.renderString(properties) == #"{"data":{"message":"From bob: Hello"}}"#)
        #expect(
            try notify[.wns]?.template.renderString(properties)
                == #"<toast><visual><binding template="ToastText01"><text id="1">From bob: Hello</text></binding></visual></toast>"#)
        #expect(notify[.wns]?.header("X-WNS-Type") == "wns/toast")
        #expect(notify[.apns]?.header("apns-push-type") == "alert")

        let secure = try #require(loaded.defaultApp.templates["secure"])
        let id: TemplateProperties = ["secureId": "7"]
        #expect(try secure[.apns]?.template.renderString(id) == #"{"aps":{"content-available":1},"secureId":"7"}"#)
        #expect(secure[.apns]?.header("apns-priority") == "5")
        #expect(try secure[.fcm]?.template.renderString(id) == #"{"data":{"secureId":"7"}}"#)
        #expect(try secure[.wns]?.template.renderString(id) == "7")
        #expect(secure[.wns]?.header("X-WNS-Type") == "wns/raw")
        #expect(secure[.wns]?.contentType == "application/octet-stream")
    }

    @Test func templateErrorsNameTheFileAndWhere() throws {
        let folder = try ConfigFolder(files: [
            "config.json": #"{"apps": {"default": {"templates": {"notify": {"apns": {"file": "templates/bad.json"}}}}}}"#,
            "templates/bad.json": "{\"aps\": {\n  \"alert\": \"$(user) says $(message)\"}}",
        ])
        #expect(
            performing: { try ConfigurationLoader.load(file: folder.configFile) },
            throws: { error in
                let error = error as! ConfigurationError
                return error.file == folder.configFile && error.path == "$.apps.default.templates.notify.apns"
                    && error.reason.contains("APNs template (templates/bad.json) at $.aps.alert: unexpected text after the expression")
            })
    }

    @Test func xmlTemplateErrorsNameTheLine() throws {
        let folder = try ConfigFolder(files: [
            "config.json": #"{"apps": {"default": {"templates": {"notify": {"wns": {"file": "t.xml"}}}}}}"#,
            "t.xml": "<toast>\n<visual>\n</toast>",
        ])
        #expect(
            performing: { try ConfigurationLoader.load(file: folder.configFile) },
            throws: { error in
                (error as! ConfigurationError).reason.contains("WNS template (t.xml) at line 3, column 9: invalid XML")
            })
    }

    /// What `pushgate templates check` and a reload read: a hash of 2^32−1 iterations or a
    /// malformed salt stops the load, naming the file, the user and the field.
    @Test func aBadPasswordHashStopsTheLoadNamingTheUserAndTheField() throws {
        for (hash, reason) in [
            ("pbkdf2-sha256$4294967295$c2FsdHNhbHQtc2FsdHNhbA==$AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "4294967295 iterations"),
            ("pbkdf2-sha256$1000$x$y", "the salt is not base64"),
        ] {
            let folder = try ConfigFolder(files: [
                "config.json":
                    #"{"auth": {"users": [{"name": "root", "passwordHash": "\#(hash)"}]}, "apps": {"default": {"templates": {"notify": {}}}}}"#
            ])
            #expect(
                performing: { try ConfigurationLoader.load(file: folder.configFile) },
                throws: { error in
                    let error = error as! ConfigurationError
                    return error.file == folder.configFile && error.path == "$.auth.users[0].passwordHash"
                        && error.reason.hasPrefix("user 'root': \(reason)")
                })
        }
    }

    @Test func missingFilesAreNamed() throws {
        let folder = try ConfigFolder(files: [
            "config.json": #"{"apps": {"default": {"templates": {"notify": {"fcm": {"file": "templates/nope.json"}}}}}}"#
        ])
        #expect(
            performing: { try ConfigurationLoader.load(file: folder.configFile) },
            throws: { error in
                let error = error as! ConfigurationError
                return error.path == "$.apps.default.templates.notify.fcm.file"
                    && error.reason.contains("template file 'templates/nope.json' cannot be read")
            })
        #expect(
            performing: { try ConfigurationLoader.load(file: folder.path + "/missing.json") },
            throws: { error in
                (error as! ConfigurationError).reason == "cannot read the file: no such file"
            })
    }

    @Test func aPostgresStoreIsConfiguredWithItsPasswordAsASecretNeverInTheURL() throws {
        func load(_ store: String) throws -> LoadedConfiguration {
            let folder = try ConfigFolder(files: [
                "config.json":
                    #"{"store": \#(store), "apps": {"default": {"templates": {"notify": {"apns": {"body": "{}"}}}}}}"#
            ])
            return try ConfigurationLoader.load(file: folder.configFile)
        }
        func reason(_ store: String) -> String {
            do {
                _ = try load(store)
                return ""
            } catch {
                return "\(error)"
            }
        }
        let loaded = try load(
            #"{"postgres": {"url": "postgresql://gate@db.internal:6432/push?sslmode=verify-full", "password": {"env": "PG_PASSWORD"}, "poolSize": 12}}"#
        )
        guard case .postgres(let settings) = loaded.configuration.store.kind else {
            Issue.record("not a PostgreSQL store")
            return
        }
        #expect(settings.url.user == "gate" && settings.url.host == "db.internal" && settings.url.port == 6432)
        #expect(settings.url.database == "push" && settings.url.tls == .verifyFull)
        #expect(settings.password == .environment("PG_PASSWORD") && settings.poolSize == 12 && settings.timeoutSeconds == 5)
        #expect(!settings.preparedStatements, "prepared statements are off unless turned on")
        let prepared = try load(#"{"postgres": {"url": "postgres://gate@db/push", "preparedStatements": true}}"#)
        guard case .postgres(let preparedSettings) = prepared.configuration.store.kind else {
            Issue.record("not a PostgreSQL store")
            return
        }
        #expect(preparedSettings.preparedStatements)
        #expect(reason(#"{"postgres": {"url": "postgres://gate@db/push", "preparedStatements": "no"}}"#).contains("preparedStatements"))
        let socket = try PostgresURL(parsing: "postgres://gate@/push?host=/run/postgresql")
        #expect(socket.socketPath == "/run/postgresql/.s.PGSQL.5432" && socket.host == nil)

        // A password in the URL is refused without repeating it, whatever it holds.
        for url in ["postgres://gate:s3cr/et@db/push", "postgres://gate:12?34@db/push", "postgres://gate@db/push?password=hunter2"] {
            let text = reason(#"{"postgres": {"url": "\#(url)"}}"#)
            #expect(text.contains("$.store.postgres.url") && text.contains("holds a password"), "\(text)")
            #expect(!text.contains("s3cr") && !text.contains("hunter2") && !text.contains("34@"), "\(text)")
        }
        #expect(reason(#"{"postgres": {"url": "mysql://db/push"}}"#).contains("expected postgres:// or postgresql://"))
        #expect(reason(#"{"postgres": {"url": "postgres://db:99999/push"}}"#).contains("not a number from 1 to 65535"))
        #expect(reason(#"{"postgres": {"url": "postgres://db"}}"#).contains("names no database"))
        #expect(reason(#"{"postgres": {"url": "postgres://db/push?sslmode=maybe"}}"#).contains("sslmode 'maybe'"))
        #expect(reason(#"{"postgres": {"url": "postgres://db/p", "poolSize": 1}}"#).contains("$.store.postgres.poolSize"))
        #expect(reason(#"{"sqlite": {"path": "x"}, "postgres": {"url": "postgres://db/p"}}"#).contains("not both"))
    }

    @Test func inlineTemplatesAndHeadersAreCheckedToo() throws {
        let folder = try ConfigFolder(files: [
            "config.json":
                #"{"apps": {"default": {"templates": {"notify": {"wns": {"body": "<badge value=\"$(count)\"/>", "headers": {"X-WNS-Type": "wns/toast"}}}}}}}"#
        ])
        #expect(
            performing: { try ConfigurationLoader.load(file: folder.configFile) },
            throws: { error in
                (error as! ConfigurationError).reason.contains("X-WNS-Type wns/toast needs a <toast> root element")
            })
    }

    /// A template's APNs push type against its topic and its app's authentication, when the
    /// configuration loads; `mdm` is not a push type Pushgate sends.
    @Test func anAPNSTemplatesPushTypeIsCheckedAgainstItsTopicAndAuthentication() throws {
        func reason(_ headers: String, certificate: Bool = false) -> String? {
            let auth =
                certificate
                ? #""certificate": {"certificate": {"file": "c.pem"}, "privateKey": {"file": "c.pem"}}"#
                : #""token": {"keyId": "ABCDEFGHIJ", "teamId": "ABCDEFGHIJ", "privateKey": {"file": "k.p8"}}"#
            let json = """
                {"apps": {"default": {"services": {"apns": {"topic": "com.example.app", \(auth)}},
                 "templates": {"notify": {"apns": {"body": "{\\"aps\\":{\\"content-changed\\":true}}", "headers": {\(headers)}}}}}}}
                """
            do {
                _ = try ConfigurationLoader.load(json: Array(json.utf8), baseDirectory: NSTemporaryDirectory())
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason(#""apns-push-type": "widgets""#) == nil, "the topic is set for it: com.example.app.push-type.widgets")
        #expect(reason(#""apns-push-type": "widgets", "apns-topic": "com.example.app.push-type.widgets""#) == nil)
        #expect(
            reason(#""apns-push-type": "controls", "apns-topic": "com.example.app""#)?.contains("com.example.app.push-type.controls")
                == true)
        #expect(reason(#""apns-push-type": "pushtotalk", "apns-topic": "com.example.app.voip""#)?.contains(".voip-ptt") == true)
        #expect(reason(#""apns-push-type": "liveactivity""#, certificate: true)?.contains("needs token authentication") == true)
        #expect(reason(#""apns-push-type": "location""#, certificate: true)?.contains("needs token authentication") == true)
        #expect(reason(#""apns-push-type": "voip""#, certificate: true) == nil)
        #expect(reason(#""apns-push-type": "mdm""#)?.contains("not an APNs push type") == true)
        // The topic each push type needs, from the bundle id.
        for (type, topic) in [
            (APNSPushType.alert, "com.example.app"), (.background, "com.example.app"), (.location, "com.example.app.location-query"),
            (.voip, "com.example.app.voip"), (.complication, "com.example.app.complication"),
            (.fileprovider, "com.example.app.pushkit.fileprovider"), (.liveActivity, "com.example.app.push-type.liveactivity"),
            (.pushToTalk, "com.example.app.voip-ptt"), (.widgets, "com.example.app.push-type.widgets"),
            (.controls, "com.example.app.push-type.controls"),
        ] {
            #expect(type.topic(bundleID: "com.example.app") == topic)
            let request = APNSWire.request(
                endpoint: "https://apns", deviceToken: "ab",
                notification: RenderedNotification(
                    platform: .apns, body: [], headers: [HTTPHeader(name: "apns-push-type", value: type.rawValue)],
                    contentType: "application/json"),
                topic: "com.example.app", providerToken: nil)
            #expect(request.headers.first { $0.name == "apns-topic" }?.value == topic, "\(type)")
        }
    }

    @Test func secretsResolveFromFilesAndEnvironmentWithoutLeaking() throws {
        let folder = try ConfigFolder(files: ["secrets/key.p8": "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n"])
        let resolver = SecretResolver(baseDirectory: folder.path, environment: ["WNS_SECRET": "s3cr3t"])
        #expect(try resolver.resolve(.file("secrets/key.p8")).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try resolver.resolve(.environment("WNS_SECRET")) == "s3cr3t")
        #expect(try resolver.resolve(.inline("v")) == "v")
        #expect(
            performing: { try resolver.resolve(.environment("MISSING")) },
            throws: { error in
                (error as! SecretError).description == "secret from environment variable MISSING is not set"
            })
        let error = resolver.check(.file("secrets/none.p8"))
        #expect(error?.description.contains("secret from file secrets/none.p8 cannot be read") == true)
        #expect(resolver.check(.environment("WNS_SECRET")) == nil)
        #expect(!String(describing: SecretSource.inline("s3cr3t")).contains("s3cr3t"))
    }
}

@Suite struct EmbeddedTemplatesTests {
    @Test func theEmbeddedTemplatesAreTheRepositorysTemplatesByteForByte() throws {
        let folder = ConfigurationLoaderTests.repositoryRoot + "/templates"
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(names == EmbeddedTemplates.files.keys.sorted())
        for name in names {
            let onDisk = try String(contentsOfFile: folder + "/" + name, encoding: .utf8)
            #expect(EmbeddedTemplates.files[name] == onDisk, "\(name) differs; update EmbeddedTemplates.swift")
        }
    }

    @Test func aSandboxGatewayConfigurationLoadsAndPointsAtTheSandbox() throws {
        let folder = try ConfigFolder(files: [:])
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        let path = try SandboxGatewayConfiguration(
            apnsEndpoint: "https://127.0.0.1:9001", apnsTopic: "com.example.app", apnsKeyID: "ABCDEFGHIJ", apnsTeamID: "KLMNOPQRST",
            fcmEndpoint: "https://127.0.0.1:9002", gcmEndpoint: "https://127.0.0.1:9002/fcm/send",
            wnsTokenEndpoint: "https://127.0.0.1:9003/accesstoken.srf",
            wnsClientID: "ms-app://s-1", wnsChannelHost: "127.0.0.1:9003", webPushHost: "127.0.0.1:9004",
            vapidPublicKey: Base64URL.encode([4] + [UInt8](repeating: 7, count: 64)),
            hms: ("10492735", "https://127.0.0.1:9005", "https://127.0.0.1:9005/oauth2/v3/token"),
            files: [
                "ca": folder.path + "/ca.pem", "apnsKey": folder.path + "/k.p8", "vapidPrivateKey": folder.path + "/vapid.txt",
                "hmsAppSecret": folder.path + "/hms.txt",
            ]
        ).write(to: folder.path)
        let loaded = try ConfigurationLoader.load(file: path)
        let app = loaded.defaultApp.configuration
        #expect(app.services.apns?.endpoint == "https://127.0.0.1:9001")
        #expect(app.services.apns?.caFile == folder.path + "/ca.pem")
        #expect(app.services.configuredPlatforms == Platform.allCases)
        #expect(app.handles.wnsChannelHosts.contains("127.0.0.1:9003"))
        #expect(loaded.configuration.auth.demoPasswordEqualsName)
        #expect(loaded.defaultApp.templates["secure"]?[.wns]?.header("X-WNS-Type") == "wns/raw")
    }
}
