import Foundation
import Pushgate
import PushgateConfig
import PushgateGateway
import Synchronization

/// The hubs one instance serves: each configured app's gateway and its shared access rules with
/// their keys (read from their secrets at start, and again at a reload).
public final class HubDirectory: Sendable {
    /// A hub's shared access rules by name, keys resolved.
    public typealias Rules = [String: (rights: Set<AccessRight>, key: String)]

    /// One hub.
    public struct Hub: Sendable {
        public let gateway: Gateway
        /// Rules by name, keys resolved.
        let rules: Rules
        public var id: AppID { gateway.appID }
        public var ruleNames: [String] { rules.keys.sorted() }
        public func rights(of rule: String) -> Set<AccessRight>? { rules[rule]?.rights }
    }

    private let state: Mutex<[AppID: Hub]>
    /// Every hub by id, with its rules as they are now.
    public var hubs: [AppID: Hub] { state.withLock { $0 } }
    /// Hub ids in configuration order.
    public let order: [AppID]
    let cache = SignatureCache()
    let clock: any PushgateClock
    /// How far ahead a token's `se` may lie, in seconds.
    let maximumLifetime: Int64
    /// The names requests must come in by (`listener.hostnames`); empty: any.
    let hostnames: Set<String>

    public init(
        gateways: [Gateway], secrets: SecretResolver, clock: any PushgateClock = SystemClock(),
        maximumLifetimeSeconds: Int = ListenerConfiguration().sasMaximumLifetimeSeconds, hostnames: [String] = []
    ) throws {
        var hubs: [AppID: Hub] = [:]
        for gateway in gateways {
            // /{hub}/… shares the path space with the gateway's own routes.
            if ["api", "console", "metrics", "healthz", "openapi.json"].contains(gateway.appID.rawValue) {
                throw GatewayError(
                    .misconfigured,
                    "apps.\(gateway.appID): '\(gateway.appID)' is one of the gateway's own paths; name the app (hub) otherwise")
            }
            hubs[gateway.appID] = Hub(gateway: gateway, rules: try Self.rules(of: gateway.app, secrets: secrets))
        }
        self.state = Mutex(hubs)
        self.order = gateways.map(\.appID)
        self.clock = clock
        self.maximumLifetime = Int64(maximumLifetimeSeconds)
        self.hostnames = Set(hostnames)
    }

    /// An app's shared access rules with their keys read from their secrets, naming what is wrong.
    public static func rules(of app: LoadedApp, secrets: SecretResolver) throws(GatewayError) -> Rules {
        var rules: Rules = [:]
        for rule in app.configuration.accessRules {
            let key: String
            do { key = try secrets.resolve(rule.key).trimmingCharacters(in: .whitespacesAndNewlines) } catch {
                throw GatewayError(.misconfigured, "apps.\(app.id).accessRules.\(rule.name).key: \(error.description)")
            }
            guard !key.isEmpty else {
                throw GatewayError(.misconfigured, "apps.\(app.id).accessRules.\(rule.name).key is empty")
            }
            rules[rule.name] = (rule.rights, key)
        }
        return rules
    }

    /// Replaces the hubs' rules (a reload): tokens verified before are checked again.
    public func replace(rules: [AppID: Rules]) {
        state.withLock { hubs in
            for (id, hubRules) in rules { if let hub = hubs[id] { hubs[id] = Hub(gateway: hub.gateway, rules: hubRules) } }
        }
        cache.removeAll()
    }

    public func hub(named name: String) -> Hub? {
        guard let id = try? AppID(name) else { return nil }
        return hubs[id]
    }

    /// Checks a request's `Authorization` for `hub`: the rule it was signed with and its rights.
    /// `host` is the request's `Host`, `path` its path.
    public func authorize(_ header: String?, hub: Hub, host: String, path: String) -> Result<HubGrant, SASError> {
        if !hostnames.isEmpty {
            // The host part of `Host`, without its port (an IPv6 literal keeps its brackets).
            let name = SharedAccessSignature.normalize(host)
            guard hostnames.contains(name) else { return .failure(.unknownHost(String(name.prefix(100)))) }
        }
        return Self.verify(
            header, rules: hub.rules, hub: hub.id, host: host, path: path, now: Int64(clock.now.secondsSinceEpoch),
            maximumLifetime: maximumLifetime, cache: cache)
    }

    /// The check itself: rule, expiry, resource, then the signature — unless this very header was
    /// verified before and has not expired, when `cache` spares the HMAC.
    public static func verify(
        _ header: String?, rules: [String: (rights: Set<AccessRight>, key: String)], hub: AppID, host: String, path: String, now: Int64,
        maximumLifetime: Int64 = Int64(ListenerConfiguration().sasMaximumLifetimeSeconds), cache: SignatureCache
    ) -> Result<HubGrant, SASError> {
        guard let header, !header.isEmpty else { return .failure(.missing) }
        if let known = cache.entry(header, hub: hub) {
            // Verified before: the same checks, without the parse and the HMAC.
            guard let rule = rules[known.keyName] else { return .failure(.unknownRule(known.keyName)) }
            guard known.expiry > now else { return .failure(.expired(known.expiry)) }
            guard SharedAccessSignature.covers(resource: known.resource, host: host, path: path) else {
                return .failure(.wrongResource(known.resource))
            }
            return .success(HubGrant(hub: hub, rule: known.keyName, rights: rule.rights))
        }
        let token: SharedAccessSignature
        switch SharedAccessSignature.parse(header) {
        case .success(let parsed): token = parsed
        case .failure(let error): return .failure(error)
        }
        guard let rule = rules[token.keyName] else { return .failure(.unknownRule(token.keyName)) }
        guard token.expiry > now else { return .failure(.expired(token.expiry)) }
        guard token.expiry - now <= maximumLifetime else { return .failure(.tooLong(expiry: token.expiry, maximum: maximumLifetime)) }
        guard let resource = token.normalizedResource, SharedAccessSignature.covers(resource: resource, host: host, path: path) else {
            return .failure(.wrongResource(SharedAccessSignature.percentDecoded(token.encodedResource) ?? token.encodedResource))
        }
        let expected = SharedAccessSignature.sign(encodedResource: token.encodedResource, expiry: token.expiry, key: rule.key)
        guard SharedAccessSignature.constantTimeEquals(expected, token.signature) else { return .failure(.badSignature) }
        cache.insert(header, hub: hub, entry: .init(expiry: token.expiry, keyName: token.keyName, resource: resource))
        return .success(HubGrant(hub: hub, rule: token.keyName, rights: rule.rights))
    }

    /// The connection string of `rule` on `hub`: `Endpoint=sb://host:port/;SharedAccessKeyName=…;SharedAccessKey=…`.
    public func connectionString(hub: AppID, rule: String, endpointHost: String) -> String? {
        guard let key = hubs[hub]?.rules[rule]?.key else { return nil }
        return "Endpoint=sb://\(endpointHost)/;SharedAccessKeyName=\(rule);SharedAccessKey=\(key)"
    }
}

/// What a verified token allows on one hub.
public struct HubGrant: Sendable, Hashable {
    public var hub: AppID
    public var rule: String
    public var rights: Set<AccessRight>

    /// Manage includes every right.
    public func allows(_ right: AccessRight) -> Bool { rights.contains(right) || rights.contains(.manage) }
}
