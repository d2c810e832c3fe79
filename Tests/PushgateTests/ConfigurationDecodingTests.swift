import Pushgate
import Testing

@Suite struct ConfigurationDecodingTests {
    static let minimal = #"{"apps": {"default": {"templates": {"notify": {"apns": {"body": "{\"aps\":{}}"}}}}}}"#

    func decode(_ text: String) throws -> PushgateConfiguration {
        try PushgateConfiguration(json: Array(text.utf8), file: "config.json")
    }

    func expectError(
        _ text: String, path: String, contains message: String, line: Int? = nil, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        #expect(
            sourceLocation: sourceLocation, performing: { try decode(text) },
            throws: { error in
                let error = error as! ConfigurationError
                let lineMatches = line.map { error.location?.line == $0 } ?? true
                return error.file == "config.json" && error.path == path && error.reason.contains(message) && lineMatches
            })
    }

    @Test func aMinimalConfigurationGetsDocumentedDefaults() throws {
        let configuration = try decode(Self.minimal)
        #expect(configuration.listener == ListenerConfiguration(host: "127.0.0.1", port: 8080, maximumBodyBytes: 65536))
        #expect(configuration.store.kind == .sqlite(path: "pushgate.sqlite"))
        #expect(configuration.auth.demoPasswordEqualsName == false)
        #expect(configuration.defaultApp?.id == .default)
        #expect(configuration.defaultApp?.handles.wnsChannelHosts == ["*.notify.windows.com"])
        #expect(configuration.defaultApp?.templates["notify"]?.templates[.apns]?.source == .inline(#"{"aps":{}}"#))
    }

    @Test func unknownKeysAreReportedWithTheirPathLineAndASuggestion() {
        let text = """
            {
              "listener": { "prot": 80 },
              "apps": {}
            }
            """
        expectError(
            text, path: "$.listener.prot", contains: "unknown key 'prot'; expected one of: host, port, maxBodyBytes, headerTimeoutSeconds",
            line: 2)
        expectError(
            #"{"apps": {"default": {"templates": {"notify": {}}, "servces": {}}}}"#, path: "$.apps.default.servces",
            contains: "did you mean 'services'?")
        expectError(
            #"{"apps": {"default": {"templates": {"notify": {"ios": {}}}}}}"#, path: "$.apps.default.templates.notify.ios",
            contains: "expected one of: apns, fcm, gcm, wns")
    }

    @Test func wrongTypesAndRangesNameTheKeyAndWhatWasExpected() {
        expectError(
            #"{"listener": {"port": "80"}, "apps": {}}"#, path: "$.listener.port", contains: "expected a whole number, found a string")
        expectError(#"{"listener": {"port": 70000}, "apps": {}}"#, path: "$.listener.port", contains: "70000 is out of range 0…65535")
        expectError(#"{"listener": {"port": 1.5}, "apps": {}}"#, path: "$.listener.port", contains: "expected a whole number, found 1.5")
        expectError(
            #"{"auth": {"demoPasswordEqualsName": "yes"}, "apps": {}}"#, path: "$.auth.demoPasswordEqualsName",
            contains: "expected true or false")
        expectError(#"{"listener": [], "apps": {}}"#, path: "$.listener", contains: "expected an object, found an array")
    }

    @Test func missingRequiredPartsAreNamed() {
        expectError("{}", path: "$", contains: "missing required key 'apps'")
        expectError(#"{"apps": {}}"#, path: "$.apps", contains: "configure at least one app")
        expectError(#"{"apps": {"default": {}}}"#, path: "$.apps.default", contains: "missing required key 'templates'")
        expectError(
            #"{"apps": {"default": {"templates": {"secure": {}}}}}"#, path: "$.apps.default.templates",
            contains: "missing the \"notify\" template set")
        expectError(#"{"apps": {"Default!": {}}}"#, path: "$.apps[\"Default!\"]", contains: "app name 'Default!' is invalid")
        expectError(
            #"{"apps": {"default": {"templates": {"notify": {"apns": {}}}}}}"#, path: "$.apps.default.templates.notify.apns",
            contains: "give the template as \"file\"")
        expectError(
            #"{"apps": {"default": {"templates": {"notify": {"wns": {"body": "x", "format": "yaml"}}}}}}"#,
            path: "$.apps.default.templates.notify.wns.format", contains: "'yaml' is not a template format")
    }

    @Test func invalidJSONIsReportedWithLineAndColumn() {
        #expect(
            performing: { try decode("{\n  \"apps\": {,}\n}") },
            throws: { error in
                (error as! ConfigurationError).description == "config.json:2:12: $: invalid JSON: expected a string key, found ','"
            })
    }

    @Test func servicesAreDecodedWithSecretsAsSourcesNeverValues() throws {
        let text = #"""
            {"apps": {"default": {
              "templates": {"notify": {}},
              "services": {
                "apns": {"topic": "com.example.app", "endpoint": "https://127.0.0.1:9443", "caFile": "ca.pem",
                         "token": {"keyId": "ABC123DEFG", "teamId": "DEF123GHIJ", "privateKey": {"file": "key.p8"}}},
                "fcm": {"serviceAccount": {"env": "SA_JSON"}},
                "gcm": {"serverKey": {"value": "AAAA-server-key"}},
                "wns": {"clientId": "ms-app://s-1", "clientSecret": {"env": "WNS_SECRET"}},
                "browser": {"subject": "mailto:push@example.com", "vapidPrivateKey": {"env": "VAPID_KEY"},
                            "vapidPublicKey": "BAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="},
                "hms": {"appId": "10492735", "appSecret": {"env": "HMS_SECRET"}},
                "unifiedpush": {"subject": "mailto:push@example.com", "vapidPrivateKey": {"env": "UP_VAPID_KEY"},
                                "vapidPublicKey": "BAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}
              }}}}
            """#
        let services = try #require(try decode(text).defaultApp?.services)
        #expect(services.configuredPlatforms == Platform.allCases)
        // The key is kept in canonical base64url (no padding); the private key as its source only.
        #expect(
            services.browser?.vapidPublicKey == "BAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc")
        #expect(services.browser?.vapidPrivateKey == .environment("VAPID_KEY"))
        #expect(services.unifiedpush?.vapid?.vapidPrivateKey == .environment("UP_VAPID_KEY"))
        #expect(services.unifiedpush?.vapid?.vapidPublicKey == services.browser?.vapidPublicKey)
        #expect(
            services.apns
                == APNSConfiguration(
                    endpoint: "https://127.0.0.1:9443", topic: "com.example.app",
                    authentication: .token(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", privateKey: .file("key.p8")), caFile: "ca.pem"))
        #expect(services.fcm?.endpoint == FCMConfiguration.productionEndpoint)
        #expect(services.fcm?.serviceAccount == .environment("SA_JSON"))
        #expect(services.gcm?.serverKey == .inline("AAAA-server-key"))
        #expect(services.gcm?.serverKey?.description == "inline value (redacted)")
        #expect(services.wns?.scope == "notify.windows.com")
    }

    @Test func gcmRegistrationsGoThroughFCMv1WheneverThereIsAServiceAccount() throws {
        let fcmOnly = try #require(
            try decode(#"{"apps": {"default": {"templates": {"notify": {}}, "services": {"fcm": {"serviceAccount": {"env": "SA"}}}}}}"#)
                .defaultApp?.services)
        #expect(fcmOnly.gcmDelivery == .fcmV1 && fcmOnly.configuredPlatforms == [.fcm, .gcm])
        let legacy = try #require(
            try decode(
                #"{"apps": {"default": {"templates": {"notify": {}}, "services": {"fcm": {"serviceAccount": {"env": "SA"}}, "gcm": {"delivery": "legacy", "serverKey": {"env": "K"}}}}}}"#
            ).defaultApp?.services)
        #expect(legacy.gcmDelivery == .legacy)
        let keyOnly = try #require(
            try decode(#"{"apps": {"default": {"templates": {"notify": {}}, "services": {"gcm": {"serverKey": {"env": "K"}}}}}}"#)
                .defaultApp?.services)
        #expect(keyOnly.gcmDelivery == .legacy)
    }

    @Test func wnsTakesAnEntraIDApplication() throws {
        let services = try #require(
            try decode(
                #"{"apps": {"default": {"templates": {"notify": {}}, "services": {"wns": {"tenantId": "contoso.onmicrosoft.com", "clientId": "0f8fad5b-d9cb-469f-a165-70867728950e", "clientSecret": {"env": "S"}}}}}}"#
            ).defaultApp?.services)
        #expect(services.wns?.tenantID == "contoso.onmicrosoft.com")
        #expect(services.wns?.tokenEndpoint == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token")
        #expect(services.wns?.scope == "https://wns.windows.com/.default")
        let classic = try #require(
            try decode(
                #"{"apps": {"default": {"templates": {"notify": {}}, "services": {"wns": {"clientId": "ms-app://s-1", "clientSecret": {"env": "S"}}}}}}"#
            ).defaultApp?.services)
        #expect(classic.wns?.tenantID == nil && classic.wns?.tokenEndpoint == WNSConfiguration.productionTokenEndpoint)
        #expect(classic.wns?.scope == "notify.windows.com")
    }

    @Test func serviceSettingsAreValidated() {
        let prefix = #"{"apps": {"default": {"templates": {"notify": {}}, "services": "#
        expectError(
            prefix + #"{"gcm": {"delivery": "fcmV1", "serverKey": {"env": "K"}}}}}}"#, path: "$.apps.default.services.gcm.delivery",
            contains: "delivers through services.fcm's service account")
        expectError(
            prefix + #"{"wns": {"tenantId": "a/b", "clientId": "c", "clientSecret": {"env": "S"}}}}}}"#,
            path: "$.apps.default.services.wns.tenantId", contains: "must be the Entra ID tenant")
        expectError(
            prefix + #"{"wns": {"tenantId": "t", "scope": "notify.windows.com", "clientId": "c", "clientSecret": {"env": "S"}}}}}}"#,
            path: "$.apps.default.services.wns.scope", contains: "asks for https://wns.windows.com/.default")
        expectError(
            prefix + #"{"gcm": {"delivery": "v2"}}}}}"#, path: "$.apps.default.services.gcm.delivery",
            contains: "must be \"fcmV1\" or \"legacy\"")
        expectError(
            prefix + #"{"browser": {"subject": "push@example.com", "vapidPublicKey": "x", "vapidPrivateKey": {"env": "K"}}}}}}"#,
            path: "$.apps.default.services.browser.subject", contains: "must be a mailto: or https: contact")
        expectError(
            prefix + #"{"browser": {"subject": "mailto:a@b.c", "vapidPublicKey": "BAcH", "vapidPrivateKey": {"env": "K"}}}}}}"#,
            path: "$.apps.default.services.browser.vapidPublicKey", contains: "uncompressed P-256 public key")
        expectError(
            prefix + #"{"apns": {"topic": "t", "token": {"keyId": "short", "teamId": "DEF123GHIJ", "privateKey": {"file": "k"}}}}}}}"#,
            path: "$.apps.default.services.apns.token.keyId", contains: "must be 10 upper-case letters or digits")
        expectError(
            prefix + #"{"apns": {"topic": "t"}}}}}"#, path: "$.apps.default.services.apns", contains: "configure exactly one of \"token\"")
        expectError(
            prefix + #"{"gcm": {"serverKey": {"file": "a", "env": "B"}}}}}}"#, path: "$.apps.default.services.gcm.serverKey",
            contains: "exactly one of \"file\", \"env\" or \"value\"")
        expectError(
            prefix + #"{"gcm": {"serverKey": {"value": ""}}}}}}"#, path: "$.apps.default.services.gcm.serverKey",
            contains: "the secret's value is empty")
        expectError(
            prefix + #"{"fcm": {"endpoint": "http://fcm.googleapis.com", "serviceAccount": {"env": "X"}}}}}}"#,
            path: "$.apps.default.services.fcm.endpoint", contains: "must be an https:// URL")
        expectError(
            prefix + #"{"wns": {"clientSecret": {"env": "X"}}}}}}"#, path: "$.apps.default.services.wns",
            contains: "missing required key 'clientId'")
    }

    @Test func usersNeedPasswordHashesNotPasswords() {
        expectError(
            #"{"auth": {"users": [{"name": "alice", "passwordHash": "alice"}]}, "apps": {}}"#,
            path: "$.auth.users[0].passwordHash", contains: "never a plain password")
        expectError(
            #"{"auth": {"users": [{"name": "a", "passwordHash": "\#(Self.hash)"}, {"name": "a", "passwordHash": "\#(Self.hash)"}]}, "apps": {}}"#,
            path: "$.auth.users[1].name", contains: "configured twice")
    }

    /// A valid hash of 1,000 iterations (16 bytes of salt, 32 of key).
    static let hash = "pbkdf2-sha256$1000$" + salt + "$" + key
    static let salt = "c2FsdHNhbHQtc2FsdHNhbA=="
    static let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

    func users(_ hash: String, admins: String = "[]", demo: Bool = false) -> String {
        #"{"auth": {"users": [{"name": "alice", "passwordHash": "\#(hash)"}], "admins": \#(admins), "demoPasswordEqualsName": \#(demo)}, "#
            + #""apps": {"default": {"templates": {"notify": {}}}}}"#
    }

    /// 2^32−1 iterations held a core for ten minutes; a malformed salt loaded, then its user could
    /// never log in. Each is refused where it is configured, naming the user and the field.
    @Test func passwordHashesOutsideTheAcceptedRangeOrFormAreRefusedNamingTheUserAndTheField() throws {
        let refused: [(hash: String, reason: String)] = [
            ("pbkdf2-sha256$0$\(Self.salt)$\(Self.key)", "0 iterations are out of range 1000…10000000"),
            ("pbkdf2-sha256$1$\(Self.salt)$\(Self.key)", "1 iterations are out of range 1000…10000000"),
            ("pbkdf2-sha256$999$\(Self.salt)$\(Self.key)", "999 iterations are out of range"),
            ("pbkdf2-sha256$4294967295$\(Self.salt)$\(Self.key)", "4294967295 iterations are out of range"),
            ("pbkdf2-sha256$10000001$\(Self.salt)$\(Self.key)", "10000001 iterations are out of range"),
            (
                "pbkdf2-sha256$99999999999999999999$\(Self.salt)$\(Self.key)",
                "the iterations, '99999999999999999999', are not a whole number"
            ),
            ("pbkdf2-sha256$-5$\(Self.salt)$\(Self.key)", "the iterations, '-5', are not a whole number"),
            ("pbkdf2-sha256$1$x$y", "1 iterations are out of range"),
            ("pbkdf2-sha256$1000$x$y", "the salt is not base64"),
            ("pbkdf2-sha256$1000$c2FsdA$\(Self.key)", "the salt is not base64"),
            ("pbkdf2-sha256$1000$not-base64!$\(Self.key)", "the salt is not base64"),
            ("pbkdf2-sha256$1000$c2hvcnQ=$\(Self.key)", "the salt is 5 bytes; expected 8 to 1024"),
            ("pbkdf2-sha256$1000$\(Self.salt)$AAEC%%%=", "the key is not base64"),
            ("pbkdf2-sha256$1000$\(Self.salt)$AAAAAAAAAAA=", "the key is 8 bytes; expected 16 to 64"),
            ("pbkdf2-sha256$1000$\(Self.salt)", "expected a password hash"),
            ("pbkdf2-sha512$1000$\(Self.salt)$\(Self.key)", "expected a password hash"),
            ("alice", "expected a password hash"),
        ]
        for (hash, reason) in refused {
            expectError(users(hash), path: "$.auth.users[0].passwordHash", contains: "user 'alice': \(reason)")
        }
        expectError(users("alice"), path: "$.auth.users[0].passwordHash", contains: "never a plain password")
        // The bounds themselves load; below what new hashes use, with a warning naming the key.
        let lowest = try decode(users(Self.hash))
        #expect(
            lowest.warnings == [
                "$.auth.users[0].passwordHash: user 'alice' has a hash of 1000 iterations, fewer than the 210000 new hashes use; make a new one with `pushgate users hash`"
            ])
        let highest = try decode(users("pbkdf2-sha256$10000000$\(Self.salt)$\(Self.key)"))
        #expect(highest.warnings.isEmpty)
        #expect(try PBKDF2PasswordHash(parsing: Self.hash).encoded == Self.hash)
        expectError(
            #"{"auth": {"users": [{"name": "a:b", "passwordHash": "\#(Self.hash)"}]}, "apps": {}}"#, path: "$.auth.users[0].name",
            contains: "contains ':'")
    }

    @Test func adminsMustBeConfiguredUsersUnlessTheDemoRuleIsOn() throws {
        #expect(try decode(users(Self.hash, admins: #"["alice"]"#)).auth.admins == ["alice"])
        expectError(
            users(Self.hash, admins: #"["alice", "bob"]"#), path: "$.auth.admins[1]",
            contains: "'bob' is not a configured user (auth.users: alice)")
        expectError(users(Self.hash, admins: #"[""]"#, demo: true), path: "$.auth.admins[0]", contains: "an admin's name is empty")
        // With the demo rule anyone whose password is their name logs in, admins too.
        #expect(try decode(users(Self.hash, admins: #"["bob"]"#, demo: true)).auth.admins == ["bob"])
    }

    @Test func trustedProxiesAreAddressesOrNetworks() throws {
        func listener(_ proxies: String) -> String {
            #"{"listener": {"trustedProxies": \#(proxies)}, "apps": {"default": {"templates": {"notify": {}}}}}"#
        }
        #expect(try decode(Self.minimal).listener.trustedProxies.isEmpty)
        let configuration = try decode(listener(#"["10.0.0.5", "10.1.0.0/16", "::1", "fd00::/8"]"#))
        #expect(configuration.listener.trustedProxies.map(\.description) == ["10.0.0.5", "10.1.0.0/16", "::1", "fd00::/8"])
        expectError(
            listener(#"["10.0.0.5", "proxy.internal"]"#), path: "$.listener.trustedProxies[1]", contains: "is not an IP address or network")
        expectError(listener(#"["10.0.0.1/8"]"#), path: "$.listener.trustedProxies[0]", contains: "did you mean 10.0.0.0/8?")
        expectError(listener(#"["10.0.0.0/33"]"#), path: "$.listener.trustedProxies[0]", contains: "from 1 to 32")
        expectError(listener(#"["0.0.0.0/0"]"#), path: "$.listener.trustedProxies[0]", contains: "takes in every address")
        expectError(listener(#"["::/0"]"#), path: "$.listener.trustedProxies[0]", contains: "takes in every address")
        expectError(listener(#""10.0.0.5""#), path: "$.listener.trustedProxies", contains: "expected an array of strings")
    }

    @Test func addressRangesHoldTheirAddressesInEitherSpelling() throws {
        let network = try IPAddressRange(parsing: "10.1.0.0/16")
        #expect(network.contains(try #require(IPAddress("10.1.255.7"))))
        #expect(network.contains(try #require(IPAddress("::ffff:10.1.0.1"))))
        #expect(!network.contains(try #require(IPAddress("10.2.0.1"))))
        let six = try IPAddressRange(parsing: "2001:db8::/32")
        #expect(six.contains(try #require(IPAddress("2001:DB8:FFFF::1"))))
        #expect(!six.contains(try #require(IPAddress("2001:db9::1"))))
        #expect(try !IPAddressRange(parsing: "::/96").contains(#require(IPAddress("10.0.0.1"))))
        #expect(IPAddress("2001:0db8:0000:0000:0000:0000:0000:0001")?.description == "2001:db8::1")
        #expect(IPAddress("::ffff:192.0.2.1")?.description == "192.0.2.1")
        for text in ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4:80", "[::1]", "fe80::1%eth0", "::1::2", "unknown"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
    }

    @Test func severalAppsCanBeConfigured() throws {
        let text = #"{"apps": {"news": {"templates": {"notify": {}}}, "chat": {"templates": {"notify": {}}}}}"#
        let configuration = try decode(text)
        #expect(configuration.apps.map(\.id.rawValue) == ["news", "chat"])
        #expect(configuration.defaultApp == nil)
    }

    @Test func wnsChannelHostEntriesAreCheckedAndAnIPAddressNeedsItsPort() throws {
        func app(_ hosts: String) -> String {
            #"{"apps": {"default": {"handles": {"wnsChannelHosts": "# + hosts + #"}, "templates": {"notify": {}}}}}"#
        }
        let allowed = try decode(app(#"["*.notify.windows.com", "127.0.0.1:9003", "[::1]:9003", "localhost:9003"]"#))
        #expect(allowed.defaultApp?.handles.wnsChannelHosts == ["*.notify.windows.com", "127.0.0.1:9003", "[::1]:9003", "localhost:9003"])
        expectError(
            app(#"["*.notify.windows.com", "127.0.0.1"]"#), path: "$.apps.default.handles.wnsChannelHosts",
            contains: "entry 1: '127.0.0.1' is an IP address: allow it explicitly with its port, as 127.0.0.1:PORT")
        expectError(
            app(#"["*.notify.windows.com:8443"]"#), path: "$.apps.default.handles.wnsChannelHosts",
            contains: "entry 0: a *.domain pattern cannot name a port")
        expectError(app(#"["*.com"]"#), path: "$.apps.default.handles.wnsChannelHosts", contains: "would allow a whole top-level domain")
        expectError(app(#"["https://x.example.com/"]"#), path: "$.apps.default.handles.wnsChannelHosts", contains: "looks like a URL")
        expectError(app(#"["x.example.com."]"#), path: "$.apps.default.handles.wnsChannelHosts", contains: "it ends with '.'")
        expectError(app(#"["::1:9003"]"#), path: "$.apps.default.handles.wnsChannelHosts", contains: "is not a host name, host:port")
    }

    @Test func templateFormatsAreInferred() {
        let file = TemplateConfiguration(source: .file("templates/a.XML"))
        #expect(file.resolvedFormat(for: .apns, body: "") == .xml)
        #expect(TemplateConfiguration(source: .inline("")).resolvedFormat(for: .fcm, body: "{}") == .json)
        #expect(TemplateConfiguration(source: .inline("")).resolvedFormat(for: .wns, body: "<toast/>") == .xml)
        #expect(
            TemplateConfiguration(source: .inline(""), headers: [HTTPHeader(name: "X-WNS-Type", value: "wns/raw")]).resolvedFormat(
                for: .wns, body: "") == .raw)
        #expect(TemplateConfiguration(source: .inline(""), format: .raw).resolvedFormat(for: .apns, body: "{}") == .raw)
    }

    /// The configured templates, the hub's native sends and hub registrations' templates decide
    /// their format in one place (they used to disagree: a configured browser template was always
    /// JSON, and a configured `WNS/Raw` was XML where the hub said raw).
    @Test func oneResolverDecidesEveryTemplatesFormat() throws {
        #expect(Template.Format.resolved(for: .browser, headers: [], body: "Hello $(message)") == .raw)
        #expect(Template.Format.resolved(for: .browser, headers: [], body: #" {"title":"$(message)"}"#) == .json)
        #expect(Template.Format.resolved(for: .wns, headers: [("x-wns-type", "WNS/Raw")], body: "<toast/>") == .raw)
        #expect(Template.Format.resolved(for: .wns, headers: [("X-WNS-Type", "wns/toast")], body: "<toast/>") == .xml)
        // Configured so, both compile and the WNS type goes on the wire as Microsoft spells it.
        let browser = TemplateConfiguration(source: .inline("Hello $(message)"))
        #expect(browser.resolvedFormat(for: .browser, body: "Hello $(message)") == .raw)
        let raw = try PlatformTemplate(platform: .wns, template: try Template(raw: "$(message)"), headers: [("X-WNS-Type", "WNS/Raw")])
        #expect(raw.header("X-WNS-Type") == "wns/raw")
        #expect(String(decoding: try raw.render(["message": "<b>"]).body, as: UTF8.self) == "<b>")
    }
}
