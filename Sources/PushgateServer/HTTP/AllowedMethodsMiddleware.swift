import Foundation
import HTTPTypes
import Hummingbird
import PushgateGateway

/// Answers a method that a known resource does not take with `405` and `Allow` (RFC 9110
/// section 15.5.6), in the API's `{"error","status"}` shape, and `OPTIONS` on it with `204` and
/// `Allow` (section 9.3.7); `HEAD` goes where `GET` goes (the router generates it), except where
/// the `GET` changes state (`x-pushgate-head: false`: reading a secure message marks it read).
/// Without it the router answers all of these with an empty 404, as if the resource did not exist.
/// A method the gateway does not know at all (``ContractResource/knownMethods``: `PROPFIND`,
/// `CONNECT` over HTTP/2) is `501` on every path (section 15.6.2), in NH's XML under a configured
/// hub; one the HTTP/1 parser refuses never gets here (``UnsupportedMethodHandler``).
///
/// The resources and their methods are the contract's (`openapi.json`, embedded), which
/// `OpenAPIContractTests` holds equal to the routes the sources register: the table is not written
/// a second time here. The hub's paths (`/{hub}/…`) are left to the hub's routes, which answer in
/// NH's XML and only under a configured hub.
struct AllowedMethodsMiddleware<Context: RequestContext>: RouterMiddleware {
    let resources: [ContractResource]
    /// Whether a path's first segment names a configured hub (its refusals are NH's XML).
    let isHub: @Sendable (Substring) -> Bool

    /// The contract's resources whose template `serves` (the gateway serves the console, the
    /// sandbox's routes and `/metrics` only as configured).
    init(serves: (String) -> Bool, isHub: @escaping @Sendable (Substring) -> Bool = { _ in false }) {
        resources = ContractResource.documented.filter { serves($0.template) }
        self.isHub = isHub
    }

    /// The resource a request's path names, if the contract documents it. Split as the router
    /// splits (empty segments dropped: `/api//me/` is `/api/me`).
    func resource(for path: String) -> ContractResource? {
        let parts = path.split(separator: "/")
        return resources.first { $0.matches(parts) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard ContractResource.knownMethods.contains(request.method) else {
            let refusal = ContractResource.unknownMethod(request.method.rawValue)
            return request.uri.path.split(separator: "/").first.map(isHub) == true
                ? HubHTTP.errorResponse(refusal) : BasicAuthenticationMiddleware.refusal(refusal, challenge: false)
        }
        // A route the router matched takes its method (HEAD aside: the router generates it for
        // every GET, and some GETs must not answer it).
        if context.endpointPath != nil, request.method != .head { return try await next(request, context) }
        guard let resource = resource(for: request.uri.path), !resource.methods.contains(request.method) || request.method == .options
        else { return try await next(request, context) }
        if request.method == .options {
            return Response(status: .noContent, headers: [.allow: resource.allow])
        }
        var response = BasicAuthenticationMiddleware.refusal(
            GatewayError(
                .methodNotAllowed,
                "\(request.method.rawValue.prefix(20)) is not allowed on \(resource.template); use \(resource.allow) (see /openapi.json)"),
            challenge: false)
        response.headers[.allow] = resource.allow
        return request.method == .head ? response.createHeadResponse() : response
    }
}

/// One path of the contract outside the hub's: its segments (nil: a parameter) and the methods it
/// takes.
struct ContractResource: Sendable {
    let template: String
    let segments: [String?]
    let methods: Set<HTTPRequest.Method>
    let allow: String

    /// How many segments are literal: the most specific template that matches wins
    /// (`…/devices/{id}/inbox` over `…/devices/{id}/{action}`), as the router's trie decides.
    var literals: Int { segments.count(where: { $0 != nil }) }

    func matches(_ path: [Substring]) -> Bool {
        guard path.count == segments.count else { return false }
        return zip(segments, path).allSatisfy { segment, part in segment.map { $0 == part } ?? true }
    }

    /// The methods resources take, in the order `Allow` names them.
    static let order: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]

    /// The methods the gateway knows: those some resource of the contract (the hub's included)
    /// takes, and the others it answers per resource (405): HTTP's `TRACE` and `QUERY`. Any
    /// other method, `CONNECT` included (the gateway is no proxy), is 501 whatever the path.
    static let knownMethods: Set<HTTPRequest.Method> = {
        let taken = contractPaths.values.flatMap { $0.keys.compactMap { HTTPRequest.Method($0.uppercased()) } }.filter(order.contains)
        return Set(taken + [.head, .options, .trace, HTTPRequest.Method("QUERY")!])
    }()

    /// The refusal of a method the gateway does not know (`method` as the client wrote it, or
    /// nil when the HTTP parser refused it unread).
    static func unknownMethod(_ method: String?) -> GatewayError {
        let served = order.filter(knownMethods.contains).map(\.rawValue).joined(separator: ", ")
        let named = method.map { "\($0.prefix(20)) is" } ?? "the request's method is"
        return GatewayError(.notImplemented, "\(named) not a method this server implements; it serves \(served) (see /openapi.json)")
    }

    /// A path item's entry: an operation (its `x-pushgate-head`, `true`/`false` or a number as
    /// JSON writes a flag), or anything else (`parameters`).
    private struct PathItemEntry: Decodable {
        var head: Bool?
        private enum Key: String, CodingKey { case head = "x-pushgate-head" }
        init(from decoder: any Decoder) throws {
            let operation = try? decoder.container(keyedBy: Key.self)
            head =
                (try? operation?.decodeIfPresent(Bool.self, forKey: .head))
                ?? (try? operation?.decodeIfPresent(Double.self, forKey: .head)).map { $0 != 0 }
        }
    }

    /// A path's item; an entry of `paths` that is not an object (an `x-` extension) has none.
    private struct PathItem: Decodable {
        var entries: [String: PathItemEntry]
        init(from decoder: any Decoder) throws {
            entries = (try? [String: PathItemEntry](from: decoder)) ?? [:]
        }
    }

    private struct Contract: Decodable {
        var paths: [String: PathItem]
    }

    /// The embedded contract's `paths`: each path's keys (its methods), read once per process.
    /// Decoded to only what is used: `JSONSerialization` built the whole 180 KB document as
    /// objects, twice, and left 5 MiB of the gateway's idle memory behind. The contract is built
    /// in: a gateway that cannot read it stops at once rather than refuse every method.
    private static let contractPaths: [String: [String: PathItemEntry]] = {
        do {
            return try JSONDecoder().decode(Contract.self, from: Data(PackageResources.openapi_json)).paths.mapValues(\.entries)
        } catch {
            preconditionFailure("the embedded openapi.json does not decode: \(error)")
        }
    }()

    /// Every such path of the embedded contract, most specific first: read once per process, for
    /// every router built (one per listener, and many in the tests).
    static let documented: [ContractResource] = {
        contractPaths.compactMap { template, item -> ContractResource? in
            guard !template.hasPrefix("/{hub}") else { return nil }
            var methods = Set(item.keys.compactMap { HTTPRequest.Method($0.uppercased()) }.filter { order.contains($0) })
            guard !methods.isEmpty else { return nil }
            if let get = item["get"], get.head != false { methods.insert(.head) }
            methods.insert(.options)
            let segments = template.split(separator: "/").map { part in part.hasPrefix("{") ? nil : String(part) }
            return ContractResource(
                template: template, segments: segments, methods: methods,
                allow: order.filter(methods.contains).map(\.rawValue).joined(separator: ", "))
        }
        .sorted { $0.literals > $1.literals || ($0.literals == $1.literals && $0.template < $1.template) }
    }()
}
