import Hummingbird
import NIOCore
import Pushgate

extension GatewayHTTP {
    /// `GET /healthz`: 200, or 503 with `Retry-After` while the database is unavailable, so that a
    /// load balancer sends no traffic here. The answer is the health monitor's last finding
    /// (``HealthMonitor``): the database is probed at most once per interval however often this
    /// is called, and never here without a database (`health` nil: the in-memory store).
    package static func addHealth(to router: Router<GatewayContext>, health: HealthMonitor?) {
        router.get("healthz") { _, _ in
            if let problem = await health?.status() {
                return Response(
                    status: .serviceUnavailable, headers: [.contentType: "text/plain", .retryAfter: "1"],
                    body: .init(byteBuffer: ByteBuffer(string: "database unavailable: \(problem)\n")))
            }
            return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
    }
}
