import Hummingbird
import Pushgate
import PushgateGateway

/// The tutorial API's APNs broadcast channels (`/api/channels`), for admins only: list (the
/// store's beside Apple's), create, show, delete. Each route parses, checks the caller, and calls
/// ``Channels``.
struct ChannelsAPI: Sendable {
    let gateway: Gateway
    let maximumBodyBytes: Int

    /// Adds the routes to the tutorial API's collection (behind its authentication).
    func add(to api: RouteCollection<GatewayContext>) {
        api.get("channels", use: list)
        api.post("channels", use: create)
        api.get("channels/:name", use: show)
        api.delete("channels/:name", use: delete)
    }

    /// The default storage policy of a create: 1, the most recent message stored (a device that
    /// comes online late gets the latest update).
    static let defaultStoragePolicy = 1

    /// `GET /api/channels`: the app's channels; those Apple lists that Pushgate did not create
    /// are marked `"managed": false`.
    @Sendable func list(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<[Channels.Channel]> {
        try Self.admin(context)
        _ = try QueryParameters(request.uri, accepting: [])
        return JSONAnswer(try await gateway.channels.list())
    }

    /// `POST /api/channels` `{"name": "scores", "storagePolicy": 1}`: 201 with the channel.
    @Sendable func create(_ request: Request, context: GatewayContext) async throws -> EditedResponse<JSONAnswer<Channels.Channel>> {
        try Self.admin(context)
        let (name, policy) = try Self.creation(try await GatewayHTTP.collectJSON(request, limit: maximumBodyBytes))
        return EditedResponse(status: .created, response: JSONAnswer(try await gateway.channels.create(name: name, storagePolicy: policy)))
    }

    /// `GET /api/channels/{name}`: the channel with Apple's answer for it.
    @Sendable func show(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<Channels.Channel> {
        try Self.admin(context)
        return JSONAnswer(try await gateway.channels.show(name: GatewayHTTP.decodedParameter(context, "name")))
    }

    /// `DELETE /api/channels/{name}`: deleted at Apple and here.
    @Sendable func delete(_ request: Request, context: GatewayContext) async throws -> JSONAnswer<Channels.Deletion> {
        try Self.admin(context)
        return JSONAnswer(try await gateway.channels.delete(name: GatewayHTTP.decodedParameter(context, "name")))
    }

    static func admin(_ context: GatewayContext) throws(GatewayError) {
        guard try context.authenticatedUser().isAdmin else { throw .forbidden("broadcast channels are managed by admins only") }
    }

    /// A create's body, read strictly: `name` (a string) and `storagePolicy` (0 or 1, default 1);
    /// any other member is refused by name.
    static func creation(_ body: [UInt8]) throws(GatewayError) -> (name: String, storagePolicy: Int) {
        let root: JSONValue
        do { root = try JSONParser.parse(body) } catch { throw .badRequest("body: \(error.description)") }
        guard let members = root.objectMembers else { throw .badRequest("body must be a JSON object with name and storagePolicy") }
        var name: String?
        var policy = defaultStoragePolicy
        for member in members {
            switch member.key {
            case "name":
                guard let text = member.value.stringValue else { throw .badRequest("\"name\" must be a string") }
                name = text
            case "storagePolicy":
                guard case .number(let text) = member.value.kind, let value = Int(text), value == 0 || value == 1 else {
                    throw .badRequest("\"storagePolicy\" must be 0 (no message stored) or 1 (the most recent message stored)")
                }
                policy = value
            default:
                throw .badRequest("unknown member \"\(member.key.prefix(40))\": a channel takes name and storagePolicy")
            }
        }
        guard let name else {
            throw .badRequest("\"name\" is required (1 to \(Channels.maximumNameLength) letters, digits, '-', '_', '.')")
        }
        return (name, policy)
    }
}
