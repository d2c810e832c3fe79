import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PushgateGateway

/// Who may read `/metrics`: anyone who reaches it, or only a caller with the bearer token
/// (`metrics.bearerToken`), compared in constant time.
public struct MetricsAccess: Sendable {
    let tokenDigest: SHA256.Digest?

    /// Anyone who reaches the listener.
    public static let open = MetricsAccess(tokenDigest: nil)

    init(tokenDigest: SHA256.Digest?) { self.tokenDigest = tokenDigest }

    /// Only `Authorization: Bearer <token>` (nil: anyone).
    public init(bearerToken: String?) {
        tokenDigest = bearerToken.map { SHA256.hash(data: Data($0.utf8)) }
    }

    /// Whether `request` may read the metrics.
    func permits(_ request: Request) -> Bool {
        guard let tokenDigest else { return true }
        guard let authorization = request.headers[.authorization], authorization.count > 7,
            authorization.prefix(7).lowercased() == "bearer "
        else { return false }
        let presented = authorization.dropFirst(7).trimmingCharacters(in: .whitespaces)
        // Digests compare in constant time; comparing digests hides the token's length too.
        return SHA256.hash(data: Data(presented.utf8)) == tokenDigest
    }
}

extension GatewayHTTP {
    /// `GET /metrics` on `router`, for those `access` permits; others get 401 with a Bearer challenge.
    static func addMetrics(to router: Router<GatewayContext>, metrics: GatewayMetrics, access: MetricsAccess) {
        router.get("metrics") { request, _ in
            guard access.permits(request) else {
                var response = BasicAuthenticationMiddleware.refusal(
                    GatewayError(.unauthorized, "metrics: Authorization: Bearer <metrics.bearerToken> is required"), challenge: false)
                response.headers[.wwwAuthenticate] = #"Bearer realm="pushgate-metrics""#
                return response
            }
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
        }
    }

    /// The router of the metrics listener (`metrics.port`): `/metrics` alone.
    public static func metricsRouter(metrics: GatewayMetrics, access: MetricsAccess) -> Router<GatewayContext> {
        let router = Router(context: GatewayContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: AllowedMethodsMiddleware { $0 == "/metrics" })
        addMetrics(to: router, metrics: metrics, access: access)
        return router
    }
}
