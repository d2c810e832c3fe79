/// OpenTelemetry traces, exported over OTLP/HTTP to a collector: a span per HTTP request, per
/// outbox page, and per sampled push-service request. Off by default.
///
/// Spans carry routes, methods, statuses, outcomes, counts and notification ids, never device
/// handles, payloads, URLs with tokens or credentials.
///
/// ```json
/// "tracing": { "enabled": true, "endpoint": "http://otel-collector:4318", "pushRequestSampleRatio": 0.05 }
/// ```
public struct TracingConfiguration: Sendable, Hashable {
    /// How spans are encoded on their way to the collector.
    public enum ExportProtocol: String, Sendable, Hashable, CaseIterable {
        /// Binary protobuf (`application/x-protobuf`): what every collector takes. The default.
        case httpProtobuf = "http/protobuf"
        /// Protobuf's JSON mapping (`application/json`).
        case httpJSON = "http/json"
    }

    /// Whether spans are recorded and exported. Default off: the gateway then makes no span at all.
    public var enabled: Bool
    /// The collector's OTLP/HTTP base URL; spans are posted to `<endpoint>/v1/traces`. Default
    /// `http://127.0.0.1:4318` (a collector beside the gateway).
    public var endpoint: String
    /// Default `http/protobuf`.
    public var exportProtocol: ExportProtocol
    /// The `service.name` resource attribute. Default `pushgate`.
    public var serviceName: String
    /// The share of push-service requests that get a span of their own, besides the first request
    /// of every batch a provider sends, which always does (0 to 1; 0: none). Default 0.01.
    public var pushRequestSampleRatio: Double
    /// Finished spans are exported in batches at most this long after they end. Default 5000.
    public var exportIntervalMilliseconds: Int

    public init(
        enabled: Bool = false, endpoint: String = "http://127.0.0.1:4318", exportProtocol: ExportProtocol = .httpProtobuf,
        serviceName: String = "pushgate", pushRequestSampleRatio: Double = 0.01, exportIntervalMilliseconds: Int = 5000
    ) {
        self.enabled = enabled
        self.endpoint = endpoint
        self.exportProtocol = exportProtocol
        self.serviceName = serviceName
        self.pushRequestSampleRatio = pushRequestSampleRatio
        self.exportIntervalMilliseconds = exportIntervalMilliseconds
    }
}
