import HTTPTypes
import Hummingbird
import Tracing

/// A server span per request, named by method and route pattern (`POST /api/notifications`,
/// `GET /api/notifications/{id}/outcome`: never the path with its ids, nor the query), child of the
/// caller's span when the request carries a W3C `traceparent`.
///
/// The handler runs in the span's context, and so does a streamed body while it is written (a
/// streamed send delivers then): the outbox pages' spans are its children. The span ends once the
/// body is written. Attributes: `http.request.method`, `http.route`,
/// `http.response.status_code`; no header, query or error text (they may carry handles).
///
/// Hummingbird's `TracingMiddleware` uses the process-global tracer and records the raw path and
/// query; this one takes the gateway's own tracer, so that gateways in one process trace apart.
struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    let tracer: any Tracer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        tracer.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let route = context.endpointPath ?? "unmatched"
        let span = tracer.startSpan("\(request.method.rawValue) \(route)", context: parent, ofKind: .server)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            attributes["http.route"] = route
        }
        var response: Response
        do {
            response = try await ServiceContext.withValue(span.context) { try await next(request, context) }
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            Self.finish(span, status: status)
            span.end()
            throw error
        }
        Self.finish(span, status: response.status.code)
        let body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            do {
                try await ServiceContext.withValue(span.context) { try await body.write(writer) }
            } catch {
                span.end()
                throw error
            }
            span.end()
        }
        return response
    }

    private static func finish(_ span: any Span, status: Int) {
        span.attributes["http.response.status_code"] = status
        // Server spans: a 4xx is the client's doing, not a fault of the gateway.
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

/// Reads W3C trace context (`traceparent`, `tracestate`) from request headers.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { fields[$0] }
    }
}
