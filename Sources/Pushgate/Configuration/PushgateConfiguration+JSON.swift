extension PushgateConfiguration {
    /// Decodes a configuration from the bytes of a `config.json`.
    ///
    /// Every error names the JSON path of the offending key, its line and column, and what was
    /// expected; unknown keys are errors. `file` is used in error messages only.
    public init(json source: [UInt8], file: String? = nil) throws(ConfigurationError) {
        do {
            self = try Self.decode(source)
        } catch {
            throw file.map { error.inFile($0) } ?? error
        }
    }

    private static func decode(_ source: [UInt8]) throws(ConfigurationError) -> PushgateConfiguration {
        let root: JSONValue
        do {
            root = try JSONParser.parse(source)
        } catch {
            throw ConfigurationError(path: "$", location: error.location, reason: "invalid JSON: \(error.reason)")
        }
        var reader = try JSONObjectReader(root, path: "$", source: source)

        var listener = ListenerConfiguration()
        if var object = try reader.object("listener") {
            listener.host = try object.string("host") ?? listener.host
            listener.port = try object.int("port", in: 0...65535) ?? listener.port
            listener.maximumBodyBytes = try object.int("maxBodyBytes", in: 1024...(64 << 20)) ?? listener.maximumBodyBytes
            listener.headerTimeoutSeconds = try object.int("headerTimeoutSeconds", in: 1...3600) ?? listener.headerTimeoutSeconds
            listener.bodyTimeoutSeconds = try object.int("bodyTimeoutSeconds", in: 1...3600) ?? listener.bodyTimeoutSeconds
            listener.bodyDeadlineSeconds = try object.int("bodyDeadlineSeconds", in: 1...86400) ?? listener.bodyDeadlineSeconds
            listener.idleTimeoutSeconds = try object.int("idleTimeoutSeconds", in: 1...86400) ?? listener.idleTimeoutSeconds
            listener.maximumConnections = try object.int("maxConnections", in: 1...1_000_000) ?? listener.maximumConnections
            listener.shutdownDeadlineSeconds =
                try object.int("shutdownDeadlineSeconds", in: 0...3600) ?? listener.shutdownDeadlineSeconds
            if let names = try object.stringArray("hostnames") {
                for (index, name) in names.enumerated()
                where name.isEmpty || name.contains(where: { $0 == "/" || $0 == " " || $0 == ":" && !name.hasPrefix("[") }) {
                    throw object.error(
                        "'\(name.prefix(60))' must be a host name or address without scheme, port or path", key: "hostnames", index: index)
                }
                listener.hostnames = names.map { $0.lowercased() }
            }
            listener.sasMaximumLifetimeSeconds =
                try object.int("sasMaximumLifetimeSeconds", in: 60...(10 * 366 * 86_400)) ?? listener.sasMaximumLifetimeSeconds
            if let proxies = try object.stringArray("trustedProxies") {
                for (index, text) in proxies.enumerated() {
                    do { listener.trustedProxies.append(try IPAddressRange(parsing: text)) } catch {
                        throw object.error("\(error)", key: "trustedProxies", index: index)
                    }
                }
            }
            if var tls = try object.object("tls") {
                listener.tls = ListenerTLS(
                    certificateChain: try tls.requiredSecret("certificateChain"), privateKey: try tls.requiredSecret("privateKey"),
                    port: try tls.int("port", in: 0...65535))
                try tls.finish(expected: ["certificateChain", "privateKey", "port"])
            }
            try object.finish(expected: [
                "host", "port", "maxBodyBytes", "headerTimeoutSeconds", "bodyTimeoutSeconds", "bodyDeadlineSeconds", "idleTimeoutSeconds",
                "maxConnections",
                "shutdownDeadlineSeconds", "tls", "sasMaximumLifetimeSeconds", "hostnames", "trustedProxies",
            ])
        }

        var limits = LimitsConfiguration()
        if var object = try reader.object("limits") {
            limits.maximumReservationsPerUser =
                try object.int("maxReservationsPerUser", in: 1...1_000_000) ?? limits.maximumReservationsPerUser
            limits.maximumSecurePayloadBytes =
                try object.int("maxSecurePayloadBytes", in: 1...(1 << 20)) ?? limits.maximumSecurePayloadBytes
            limits.maximumHubReservationsPerKey =
                try object.int("maxHubReservationsPerKey", in: 1...1_000_000) ?? limits.maximumHubReservationsPerKey
            limits.maximumRegistrationsPerUser =
                try object.int("maxRegistrationsPerUser", in: 1...1_000_000) ?? limits.maximumRegistrationsPerUser
            limits.hubReservationsPerSecond =
                try object.int("hubReservationsPerSecond", in: 1...100_000) ?? limits.hubReservationsPerSecond
            limits.hubReservationBurst = try object.int("hubReservationBurst", in: 1...1_000_000) ?? limits.hubReservationBurst
            limits.maximumScheduledPerSender =
                try object.int("maxScheduledPerSender", in: 1...1_000_000) ?? limits.maximumScheduledPerSender
            limits.hubReservationLifetimeSeconds =
                try object.int("hubReservationLifetimeSeconds", in: 60...604_800) ?? limits.hubReservationLifetimeSeconds
            limits.hubDeviceCreationsPerMinute =
                try object.int("hubDeviceCreationsPerMinute", in: 1...1_000_000) ?? limits.hubDeviceCreationsPerMinute
            limits.hubDeviceCreationBurst = try object.int("hubDeviceCreationBurst", in: 1...1_000_000) ?? limits.hubDeviceCreationBurst
            limits.maximumHubDevices = try object.int("maxHubDevices", in: 1...1_000_000_000) ?? limits.maximumHubDevices
            limits.maximumStoredPerUserPerDay =
                try object.int("maxStoredPerUserPerDay", in: 1...10_000_000) ?? limits.maximumStoredPerUserPerDay
            try object.finish(expected: [
                "maxReservationsPerUser", "maxSecurePayloadBytes", "maxHubReservationsPerKey", "maxRegistrationsPerUser",
                "maxScheduledPerSender", "hubReservationsPerSecond", "hubReservationBurst", "hubReservationLifetimeSeconds",
                "hubDeviceCreationsPerMinute", "hubDeviceCreationBurst", "maxHubDevices", "maxStoredPerUserPerDay",
            ])
        }

        var outbox = OutboxConfiguration()
        if var object = try reader.object("outbox") {
            outbox.enabled = try object.bool("enabled") ?? outbox.enabled
            outbox.leaseSeconds = try object.int("leaseSeconds", in: 1...3600) ?? outbox.leaseSeconds
            outbox.pageSize = try object.int("pageSize", in: 1...10000) ?? outbox.pageSize
            outbox.concurrentNotifications = try object.int("concurrentNotifications", in: 1...64) ?? outbox.concurrentNotifications
            outbox.retentionSeconds = try object.int("retentionSeconds", in: 60...(366 * 86400)) ?? outbox.retentionSeconds
            outbox.maximumScheduleAheadSeconds =
                try object.int("maxScheduleAheadSeconds", in: 60...(366 * 86400)) ?? outbox.maximumScheduleAheadSeconds
            outbox.scheduleSkewSeconds = try object.int("scheduleSkewSeconds", in: 0...3600) ?? outbox.scheduleSkewSeconds
            outbox.throttledRetries = try object.int("throttledRetries", in: 0...20) ?? outbox.throttledRetries
            outbox.throttledBackoffSeconds = try object.int("throttledBackoffSeconds", in: 1...86400) ?? outbox.throttledBackoffSeconds
            outbox.idempotencyWindowSeconds =
                try object.int("idempotencyWindowSeconds", in: 60...(30 * 86400)) ?? outbox.idempotencyWindowSeconds
            try object.finish(expected: [
                "enabled", "leaseSeconds", "pageSize", "concurrentNotifications", "retentionSeconds", "maxScheduleAheadSeconds",
                "scheduleSkewSeconds", "throttledRetries", "throttledBackoffSeconds", "idempotencyWindowSeconds",
            ])
        }

        var store = StoreConfiguration()
        if var object = try reader.object("store") {
            if var sqlite = try object.object("sqlite") {
                store.kind = .sqlite(path: try sqlite.requiredString("path"))
                try sqlite.finish(expected: ["path"])
            }
            if var postgres = try object.object("postgres") {
                if store.kind != StoreConfiguration().kind || object.members.contains(where: { $0.key == "sqlite" }) {
                    throw object.error("give one of \"sqlite\" or \"postgres\", not both", key: "postgres")
                }
                let text = try postgres.requiredString("url")
                let url: PostgresURL
                do { url = try PostgresURL(parsing: text) } catch { throw postgres.error(error.description, key: "url") }
                var settings = PostgresSettings(url: url, password: try postgres.secret("password"))
                settings.poolSize = try postgres.int("poolSize", in: 2...200) ?? settings.poolSize
                settings.timeoutSeconds = try postgres.int("timeoutSeconds", in: 1...600) ?? settings.timeoutSeconds
                settings.preparedStatements = try postgres.bool("preparedStatements") ?? settings.preparedStatements
                try postgres.finish(expected: ["url", "password", "poolSize", "timeoutSeconds", "preparedStatements"])
                store.kind = .postgres(settings)
            }
            try object.finish(expected: ["sqlite", "postgres"])
        }

        var auth = AuthConfiguration()
        if var object = try reader.object("auth") {
            auth = try decodeAuth(&object)
        }

        var console = ConsoleConfiguration()
        if var object = try reader.object("console") {
            console.enabled = try object.bool("enabled") ?? console.enabled
            if let control = try object.string("sandboxControl") {
                guard control.hasPrefix("http://") || control.hasPrefix("https://") else {
                    throw object.error("expected an http:// or https:// URL", key: "sandboxControl")
                }
                console.sandboxControl = control
            }
            try object.finish(expected: ["enabled", "sandboxControl"])
        }

        var metrics = MetricsConfiguration()
        if var object = try reader.object("metrics") {
            metrics.bearerToken = try object.secret("bearerToken")
            metrics.port = try object.int("port", in: 0...65535)
            metrics.host = try object.string("host") ?? metrics.host
            if metrics.port == nil, object.raw("host") != nil {
                throw object.error("host is the metrics listener's; give its port too", key: "host")
            }
            try object.finish(expected: ["bearerToken", "port", "host"])
        }

        var tracing = TracingConfiguration()
        if var object = try reader.object("tracing") {
            tracing = try decodeTracing(&object)
        }

        var webhooks = WebhooksConfiguration()
        if var object = try reader.object("webhooks") {
            webhooks = try decodeWebhooks(&object)
        }

        guard var appsReader = try reader.object("apps") else {
            throw reader.error("missing required key 'apps' (an object of apps by name, for example {\"default\": {…}})")
        }
        var apps: [AppConfiguration] = []
        for member in appsReader.members {
            let id: AppID
            do { id = try AppID(member.key) } catch {
                throw appsReader.error(error.description, key: member.key, at: member.keyOffset)
            }
            guard var app = try appsReader.object(member.key) else { continue }
            apps.append(try decodeApp(id: id, &app, webhooks: webhooks))
        }
        if apps.isEmpty { throw appsReader.error("configure at least one app, for example \"default\"") }

        try reader.finish(expected: [
            "listener", "store", "auth", "console", "limits", "outbox", "metrics", "tracing", "webhooks", "apps",
        ])
        var configuration = PushgateConfiguration(
            listener: listener, store: store, auth: auth, console: console, limits: limits, outbox: outbox, apps: apps)
        configuration.metrics = metrics
        configuration.tracing = tracing
        configuration.webhooks = webhooks
        return configuration
    }

    private static func decodeTracing(_ object: inout JSONObjectReader) throws(ConfigurationError) -> TracingConfiguration {
        var tracing = TracingConfiguration()
        tracing.enabled = try object.bool("enabled") ?? tracing.enabled
        if let endpoint = try object.string("endpoint") {
            guard endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://"), endpoint.count > 8 else {
                throw object.error(
                    "expected the collector's http:// or https:// base URL (spans go to <endpoint>/v1/traces)", key: "endpoint")
            }
            tracing.endpoint = endpoint
        }
        if let name = try object.string("protocol") {
            guard let exportProtocol = TracingConfiguration.ExportProtocol(rawValue: name) else {
                let known = TracingConfiguration.ExportProtocol.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
                throw object.error("'\(name.prefix(40))' is not an OTLP protocol Pushgate speaks; expected \(known)", key: "protocol")
            }
            tracing.exportProtocol = exportProtocol
        }
        if let name = try object.string("serviceName") {
            guard !name.trimmed().isEmpty else { throw object.error("must not be empty", key: "serviceName") }
            tracing.serviceName = name
        }
        tracing.pushRequestSampleRatio = try object.number("pushRequestSampleRatio", in: 0...1) ?? tracing.pushRequestSampleRatio
        tracing.exportIntervalMilliseconds =
            try object.int("exportIntervalMilliseconds", in: 10...600_000) ?? tracing.exportIntervalMilliseconds
        try object.finish(expected: [
            "enabled", "endpoint", "protocol", "serviceName", "pushRequestSampleRatio", "exportIntervalMilliseconds",
        ])
        return tracing
    }

    private static func decodeAuth(_ object: inout JSONObjectReader) throws(ConfigurationError) -> AuthConfiguration {
        var auth = AuthConfiguration()
        if let users = object.raw("users") {
            guard let elements = users.arrayElements else { throw object.error("expected an array of users", key: "users") }
            for (index, element) in elements.enumerated() {
                var user = try JSONObjectReader(element, path: "\(jsonPath(object.path, "users"))[\(index)]", source: object.source)
                let name = try user.requiredString("name")
                if name.contains(":") {
                    throw user.error("'\(name.prefix(60))' contains ':', where Basic authentication ends the user name", key: "name")
                }
                if name.hasPrefix("$") { throw user.error(Self.reservedUserName(name), key: "name") }
                let hash = try user.requiredString("passwordHash")
                do { _ = try PBKDF2PasswordHash(parsing: hash) } catch {
                    throw user.error("user '\(name.prefix(60))': \(error)", key: "passwordHash")
                }
                if auth.users.contains(where: { $0.name == name }) { throw user.error("user '\(name)' is configured twice", key: "name") }
                try user.finish(expected: ["name", "passwordHash"])
                auth.users.append(UserCredential(name: name, passwordHash: hash))
            }
        }
        auth.demoPasswordEqualsName = try object.bool("demoPasswordEqualsName") ?? false
        auth.admins = try object.stringArray("admins") ?? []
        // An admin who is no user would never log in; with the demo rule any name can.
        for (index, name) in auth.admins.enumerated()
        where name.isEmpty || name.hasPrefix("$") || !auth.demoPasswordEqualsName && !auth.users.contains(where: { $0.name == name }) {
            let users = auth.users.isEmpty ? "none" : auth.users.map(\.name).joined(separator: ", ")
            throw object.error(
                name.isEmpty
                    ? "an admin's name is empty"
                    : name.hasPrefix("$")
                        ? reservedUserName(name)
                        : "'\(name.prefix(60))' is not a configured user (auth.users: \(users.prefix(200))); only demoPasswordEqualsName takes any name",
                key: "admins", index: index)
        }
        try object.finish(expected: ["users", "admins", "demoPasswordEqualsName"])
        return auth
    }

    /// Names starting with `$` are the gateway's own owners and tags (`$hub`, `$InstallationId:{…}`):
    /// a user with one would collide with them, and no login takes one.
    private static func reservedUserName(_ name: String) -> String {
        "user '\(name.prefix(60))' starts with '$', which is reserved for the gateway's own owners and tags ($hub, $InstallationId:{…}); "
            + "choose a name without a leading '$'"
    }
}
