extension WebhooksConfiguration {
    /// Checks a receiver's URL against ``allowedHosts`` with the rules push endpoints follow
    /// (`HandlePolicy`'s: `https` only, a plain DNS name or an exactly allowed `host:port`, no user
    /// information, no fragment) and returns it in canonical form; an `http://host:port` entry
    /// admits exactly that host and port over plain HTTP. The reason when refused.
    public func checkReceiverURL(_ url: String) -> Result<String, WebhookURLRefusal> {
        let lowered = url.lowercased()
        if lowered.hasPrefix("http://") {
            let afterScheme = url.dropFirst("http://".count)
            let authority = afterScheme.prefix(while: { $0 != "/" && $0 != "?" }).lowercased()
            guard plainHTTPHosts.contains(authority) else {
                return .failure(
                    WebhookURLRefusal(
                        reason: "plain http:// is allowed only to a host:port that webhooks.allowedHosts names as http://\(authority)"))
            }
            // The same checks as for https, the one host:port allowed.
            switch check(url: "https://" + afterScheme, allowed: [authority]) {
            case .success(let canonical): return .success("http://" + canonical.dropFirst("https://".count))
            case .failure(let refusal): return .failure(refusal)
            }
        }
        return check(url: url, allowed: httpsHosts)
    }

    private func check(url: String, allowed: [String]) -> Result<String, WebhookURLRefusal> {
        do {
            return .success(try HandlePolicy.checkOutboundURL(url, allowed: allowed, subject: "the receiver URL"))
        } catch {
            return .failure(WebhookURLRefusal(reason: error.description))
        }
    }
}

/// Why a receiver's URL is refused (for a configuration error naming the key).
public struct WebhookURLRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}
