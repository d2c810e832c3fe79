import Hummingbird
import PushgateGateway

/// Counts every request and its duration.
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        metrics.requestStarted()
        let started = ContinuousClock.now
        let route = context.endpointPath ?? "unmatched"
        do {
            let response = try await next(request, context)
            metrics.requestFinished(
                route: context.endpointPath ?? route, method: request.method.rawValue, status: response.status.code,
                duration: ContinuousClock.now - started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            metrics.requestFinished(route: route, method: request.method.rawValue, status: status, duration: ContinuousClock.now - started)
            throw error
        }
    }
}
