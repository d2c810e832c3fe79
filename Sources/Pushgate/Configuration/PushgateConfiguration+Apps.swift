/// The apps' part of `config.json`: each app's services, templates, handle rules and keys.
extension PushgateConfiguration {
    static func decodeApp(
        id: AppID, _ app: inout JSONObjectReader, webhooks: WebhooksConfiguration = WebhooksConfiguration()
    ) throws(ConfigurationError) -> AppConfiguration {
        var configuration = AppConfiguration(id: id)
        if var handles = try app.object("handles") {
            for key in ["wnsChannelHosts", "webPushHosts", "unifiedPushHosts"] {
                guard let hosts = try handles.stringArray(key) else { continue }
                // Each entry is checked here: one that matches nothing must not pass for allowed.
                for (index, host) in hosts.enumerated() {
                    if let problem = HandlePolicy.wnsChannelHostProblem(host) {
                        let element = handles.members.first(where: { $0.key == key })?.value.arrayElements?[index]
                        throw handles.error(
                            "entry \(index): \(problem) (entries: *.domain, host, or host:port for an IP address or a port other than 443)",
                            key: key, at: element?.offset)
                    }
                }
                switch key {
                case "wnsChannelHosts": configuration.handles.wnsChannelHosts = hosts
                case "webPushHosts": configuration.handles.webPushHosts = hosts
                default: configuration.handles.unifiedPushHosts = hosts
                }
            }
            try handles.finish(expected: ["wnsChannelHosts", "webPushHosts", "unifiedPushHosts"])
        }
        if var services = try app.object("services") {
            configuration.services = try decodeServices(&services)
        }
        guard var templates = try app.object("templates") else {
            throw app.error("missing required key 'templates' (template sets by purpose, at least \"notify\")")
        }
        for member in templates.members {
            guard var set = try templates.object(member.key) else { continue }
            configuration.templates[member.key] = try decodeTemplateSet(&set)
        }
        if configuration.templates["notify"] == nil {
            throw templates.error("missing the \"notify\" template set (the templates the notifications API sends)")
        }
        if var rules = try app.object("accessRules") {
            for member in rules.members {
                guard SharedAccessRule.isValidName(member.key) else {
                    throw rules.error(
                        "rule name '\(member.key.prefix(60))' must be 1 to 256 letters, digits, '-', '.' or '_'", key: member.key)
                }
                guard var rule = try rules.object(member.key) else { continue }
                let key = try rule.requiredSecret("key")
                guard let names = try rule.stringArray("rights"), !names.isEmpty else {
                    throw rule.error("missing required key 'rights' (a non-empty array of \"Listen\", \"Send\", \"Manage\")")
                }
                var rights = Set<AccessRight>()
                for name in names {
                    guard let right = AccessRight.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
                        throw rule.error("unknown right '\(name.prefix(40))'; expected Listen, Send or Manage", key: "rights")
                    }
                    rights.insert(right)
                }
                try rule.finish(expected: ["key", "rights"])
                configuration.accessRules.append(SharedAccessRule(name: member.key, key: key, rights: rights))
            }
        }
        if var object = try app.object("webhooks") {
            configuration.webhooks = try decodeAppWebhooks(&object, gateway: webhooks)
        }
        try app.finish(expected: ["handles", "services", "templates", "accessRules", "webhooks"])
        return configuration
    }

    private static func decodeServices(_ services: inout JSONObjectReader) throws(ConfigurationError) -> ServicesConfiguration {
        var result = ServicesConfiguration()
        if var apns = try services.object("apns") {
            let endpoint = try apns.string("endpoint") ?? APNSConfiguration.productionEndpoint
            try checkEndpoint(endpoint, key: "endpoint", in: apns)
            let topic = try apns.requiredString("topic")
            let token = try apns.object("token")
            let certificate = try apns.object("certificate")
            let authentication: APNSConfiguration.Authentication
            switch (token, certificate) {
            case (var token?, nil):
                let keyID = try token.requiredString("keyId")
                let teamID = try token.requiredString("teamId")
                for (key, value) in [("keyId", keyID), ("teamId", teamID)]
                where value.count != 10 || !value.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) {
                    throw token.error("'\(value)' must be 10 upper-case letters or digits, as Apple issues it", key: key)
                }
                authentication = .token(keyID: keyID, teamID: teamID, privateKey: try token.requiredSecret("privateKey"))
                try token.finish(expected: ["keyId", "teamId", "privateKey"])
            case (nil, var certificate?):
                authentication = .certificate(
                    certificate: try certificate.requiredSecret("certificate"), privateKey: try certificate.requiredSecret("privateKey"))
                try certificate.finish(expected: ["certificate", "privateKey"])
            case (nil, nil):
                throw apns.error("configure exactly one of \"token\" (a .p8 key) or \"certificate\"")
            case (_?, _?):
                throw apns.error("configure only one of \"token\" or \"certificate\", not both")
            }
            let caFile = try apns.string("caFile")
            var configuration = APNSConfiguration(endpoint: endpoint, topic: topic, authentication: authentication, caFile: caFile)
            if let channels = try apns.string("channelsEndpoint") {
                try checkEndpoint(channels, key: "channelsEndpoint", in: apns)
                configuration.channelsEndpoint = channels
            }
            if let broadcast = try apns.string("broadcastEndpoint") {
                try checkEndpoint(broadcast, key: "broadcastEndpoint", in: apns)
                configuration.broadcastEndpoint = broadcast
            }
            if let maximum = try apns.int("maxChannels", in: 1...1_000_000) { configuration.maximumChannels = maximum }
            try apns.finish(expected: [
                "endpoint", "topic", "token", "certificate", "caFile", "channelsEndpoint", "broadcastEndpoint", "maxChannels",
            ])
            result.apns = configuration
        }
        if var fcm = try services.object("fcm") {
            let endpoint = try fcm.string("endpoint") ?? FCMConfiguration.productionEndpoint
            try checkEndpoint(endpoint, key: "endpoint", in: fcm)
            let account = try fcm.requiredSecret("serviceAccount")
            let caFile = try fcm.string("caFile")
            try fcm.finish(expected: ["endpoint", "serviceAccount", "caFile"])
            result.fcm = FCMConfiguration(endpoint: endpoint, serviceAccount: account, caFile: caFile)
        }
        if var gcm = try services.object("gcm") {
            let deliveryText = try gcm.string("delivery")
            var delivery: GCMConfiguration.Delivery = result.fcm == nil ? .legacy : .fcmV1
            if let deliveryText {
                guard let chosen = GCMConfiguration.Delivery(rawValue: deliveryText) else {
                    throw gcm.error("'\(deliveryText.prefix(40))' must be \"fcmV1\" or \"legacy\"", key: "delivery")
                }
                delivery = chosen
            }
            if delivery == .fcmV1, result.fcm == nil {
                throw gcm.error("\"fcmV1\" delivers through services.fcm's service account: configure services.fcm", key: "delivery")
            }
            let endpoint = try gcm.string("endpoint") ?? GCMConfiguration.productionEndpoint
            try checkEndpoint(endpoint, key: "endpoint", in: gcm)
            let key = delivery == .legacy ? try gcm.requiredSecret("serverKey") : try gcm.secret("serverKey")
            let caFile = try gcm.string("caFile")
            try gcm.finish(expected: ["delivery", "endpoint", "serverKey", "caFile"])
            result.gcm = GCMConfiguration(endpoint: endpoint, serverKey: key, caFile: caFile, delivery: delivery)
        }
        if var wns = try services.object("wns") {
            // Entra ID (a tenant) or the classic package credentials.
            let tenantID = try wns.string("tenantId")
            if let tenantID {
                guard (1...256).contains(tenantID.count),
                    tenantID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
                else {
                    throw wns.error(
                        "'\(tenantID.prefix(40))' must be the Entra ID tenant: its id (a GUID) or a domain name", key: "tenantId")
                }
            }
            let tokenEndpoint =
                try wns.string("tokenEndpoint")
                ?? (tenantID.map { WNSConfiguration.entraTokenEndpoint(tenantID: $0) } ?? WNSConfiguration.productionTokenEndpoint)
            try checkEndpoint(tokenEndpoint, key: "tokenEndpoint", in: wns)
            let clientID = try wns.requiredString("clientId")
            let secret = try wns.requiredSecret("clientSecret")
            let scope = try wns.string("scope") ?? (tenantID == nil ? WNSConfiguration.classicScope : WNSConfiguration.entraScope)
            if tenantID != nil, scope != WNSConfiguration.entraScope {
                throw wns.error("an Entra ID application asks for \(WNSConfiguration.entraScope), not '\(scope.prefix(60))'", key: "scope")
            }
            let caFile = try wns.string("caFile")
            try wns.finish(expected: ["tokenEndpoint", "tenantId", "clientId", "clientSecret", "scope", "caFile"])
            result.wns = WNSConfiguration(
                tokenEndpoint: tokenEndpoint, clientID: clientID, clientSecret: secret, scope: scope, caFile: caFile, tenantID: tenantID)
        }
        if var browser = try services.object("browser") {
            let (subject, publicKey, privateKey) = try decodeVAPID(&browser)
            let caFile = try browser.string("caFile")
            try browser.finish(expected: ["subject", "vapidPublicKey", "vapidPrivateKey", "caFile"])
            result.browser = WebPushConfiguration(subject: subject, vapidPublicKey: publicKey, vapidPrivateKey: privateKey, caFile: caFile)
        }
        if var unifiedPush = try services.object("unifiedpush") {
            var configuration = UnifiedPushConfiguration()
            let keys = ["subject", "vapidPublicKey", "vapidPrivateKey"]
            let given = keys.filter { key in unifiedPush.members.contains { $0.key == key } }
            if !given.isEmpty {
                guard given.count == keys.count else {
                    throw unifiedPush.error("give all of subject, vapidPublicKey and vapidPrivateKey, or none (messages unsigned)")
                }
                let (subject, publicKey, privateKey) = try decodeVAPID(&unifiedPush)
                configuration.vapid = WebPushConfiguration(subject: subject, vapidPublicKey: publicKey, vapidPrivateKey: privateKey)
            }
            configuration.caFile = try unifiedPush.string("caFile")
            configuration.discoveryTimeoutSeconds =
                try unifiedPush.number("discoveryTimeoutSeconds", in: 0.1...30) ?? configuration.discoveryTimeoutSeconds
            configuration.discoveryCacheSeconds =
                try unifiedPush.int("discoveryCacheSeconds", in: 1...604_800) ?? configuration.discoveryCacheSeconds
            configuration.discoveryFailureCacheSeconds =
                try unifiedPush.int("discoveryFailureCacheSeconds", in: 0...3600) ?? configuration.discoveryFailureCacheSeconds
            configuration.sendTimeoutSeconds =
                try unifiedPush.number("sendTimeoutSeconds", in: 1...60) ?? configuration.sendTimeoutSeconds
            if let text = try unifiedPush.string("noActiveSubscriber") {
                guard let choice = UnifiedPushConfiguration.NoActiveSubscriber(rawValue: text) else {
                    throw unifiedPush.error("'\(text.prefix(40))' must be keep or prune", key: "noActiveSubscriber")
                }
                configuration.noActiveSubscriber = choice
            }
            try unifiedPush.finish(
                expected: keys + [
                    "caFile", "discoveryTimeoutSeconds", "discoveryCacheSeconds", "discoveryFailureCacheSeconds", "noActiveSubscriber",
                    "sendTimeoutSeconds",
                ])
            result.unifiedpush = configuration
        }
        if var hms = try services.object("hms") {
            let endpoint = try hms.string("endpoint") ?? HMSConfiguration.productionEndpoint
            try checkEndpoint(endpoint, key: "endpoint", in: hms)
            let tokenEndpoint = try hms.string("tokenEndpoint") ?? HMSConfiguration.productionTokenEndpoint
            try checkEndpoint(tokenEndpoint, key: "tokenEndpoint", in: hms)
            let appID = try hms.requiredString("appId")
            guard !appID.isEmpty, appID.utf8.count <= 64, appID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw hms.error("'\(appID.prefix(40))' must be the AppGallery Connect app id (letters and digits)", key: "appId")
            }
            let secret = try hms.requiredSecret("appSecret")
            let perRequest = try hms.int("maxTokensPerRequest", in: 1...1000) ?? 1000
            let caFile = try hms.string("caFile")
            try hms.finish(expected: ["endpoint", "tokenEndpoint", "appId", "appSecret", "maxTokensPerRequest", "caFile"])
            result.hms = HMSConfiguration(
                endpoint: endpoint, tokenEndpoint: tokenEndpoint, appID: appID, appSecret: secret, maximumTokensPerRequest: perRequest,
                caFile: caFile)
        }
        try services.finish(expected: Platform.allCases.map(\.rawValue))
        return result
    }

    /// A VAPID key pair and contact (`subject`, `vapidPublicKey`, `vapidPrivateKey`), as
    /// `services.browser` and `services.unifiedpush` give them; the public key in canonical base64url.
    private static func decodeVAPID(_ reader: inout JSONObjectReader) throws(ConfigurationError) -> (String, String, SecretSource) {
        let subject = try reader.requiredString("subject")
        let lowered = subject.lowercased()
        guard (lowered.hasPrefix("mailto:") && subject.count > "mailto:".count) || (lowered.hasPrefix("https://") && subject.count > 8)
        else {
            throw reader.error("'\(subject.prefix(40))' must be a mailto: or https: contact (RFC 8292's sub)", key: "subject")
        }
        let publicKey = try reader.requiredString("vapidPublicKey")
        guard let point = Base64URL.decode(publicKey), point.count == WebPushLimits.publicKeyBytes, point.first == 0x04 else {
            throw reader.error(
                "must be the application server key: an uncompressed P-256 public key (65 bytes, starting 0x04) in base64url; `pushgate vapid generate` makes a pair",
                key: "vapidPublicKey")
        }
        return (subject, Base64URL.encode(point), try reader.requiredSecret("vapidPrivateKey"))
    }

    private static func checkEndpoint(_ url: String, key: String, in reader: JSONObjectReader) throws(ConfigurationError) {
        let lowered = url.lowercased()
        guard lowered.hasPrefix("https://"), lowered.count > "https://".count, !url.contains(" ") else {
            throw reader.error("'\(url)' must be an https:// URL (push services are reached over TLS only)", key: key)
        }
    }

    private static func decodeTemplateSet(_ set: inout JSONObjectReader) throws(ConfigurationError) -> TemplateSetConfiguration {
        var result = TemplateSetConfiguration()
        for platform in Platform.allCases {
            guard var template = try set.object(platform.rawValue) else { continue }
            let file = try template.string("file")
            let body = try template.string("body")
            let source: TemplateConfiguration.Source
            switch (file, body) {
            case (let file?, nil): source = .file(file)
            case (nil, let body?): source = .inline(body)
            case (nil, nil): throw template.error("give the template as \"file\" (a path in templates/) or inline as \"body\"")
            case (_?, _?): throw template.error("give only one of \"file\" or \"body\"")
            }
            var format: Template.Format?
            if let text = try template.string("format") {
                guard let parsed = Template.Format(rawValue: text) else {
                    throw template.error("'\(text)' is not a template format (json, xml, raw)", key: "format")
                }
                format = parsed
            }
            var headers: [HTTPHeader] = []
            if let headersObject = try template.object("headers") {
                for member in headersObject.members {
                    guard let value = member.value.stringValue else {
                        throw headersObject.error("header values are strings, found \(member.value.typeDescription)", key: member.key)
                    }
                    headers.append(HTTPHeader(name: member.key, value: value))
                }
            }
            try template.finish(expected: ["file", "body", "format", "headers"])
            result.templates[platform] = TemplateConfiguration(source: source, format: format, headers: headers, path: template.path)
        }
        try set.finish(expected: Platform.allCases.map(\.rawValue))
        return result
    }
}
