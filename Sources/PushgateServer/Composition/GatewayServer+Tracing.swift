import Foundation
import Logging
import OTel
import Pushgate
import PushgateDispatch
import PushgateGateway
import ServiceLifecycle

extension GatewayServer {
    /// The gateway's tracing as `tracing` in `config.json` says: ``PushgateTracing/off``, or an
    /// OpenTelemetry tracer exporting over OTLP/HTTP (protobuf or JSON; no gRPC) with the service
    /// that runs its batch processor and exporter. That service goes first in the group, so that it
    /// stops last and exports the spans of everything that stopped before it.
    ///
    /// The tracer is this gateway's own, never bootstrapped process-wide: several gateways in one
    /// process (the tests) trace apart, and those with tracing off make no span at all. swift-otel
    /// applies the standard `OTEL_*` environment variables over this configuration (for example
    /// `OTEL_EXPORTER_OTLP_HEADERS` for a collector's credentials). `OTEL_SDK_DISABLED=true` (the
    /// OpenTelemetry specification's switch) turns tracing off whatever the file says, with a notice.
    package static func makeTracing(
        _ configuration: TracingConfiguration, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> (PushgateTracing, (any Service)?) {
        guard configuration.enabled else { return (.off, nil) }
        if environment["OTEL_SDK_DISABLED"]?.trimmingCharacters(in: .whitespaces).lowercased() == "true" {
            logger.notice("tracing is enabled in the configuration but OTEL_SDK_DISABLED=true: no spans are made or exported")
            return (.off, nil)
        }
        var otel = OTel.Configuration.default
        otel.serviceName = configuration.serviceName
        otel.diagnosticLogger = .custom(logger)
        var base = Substring(configuration.endpoint)
        while base.hasSuffix("/") { base = base.dropLast() }
        otel.traces.otlpExporter.endpoint = base + "/v1/traces"
        otel.traces.otlpExporter.`protocol` =
            switch configuration.exportProtocol {
            case .httpProtobuf: .httpProtobuf
            case .httpJSON: .httpJSON
            }
        otel.traces.batchSpanProcessor.scheduleDelay = .milliseconds(configuration.exportIntervalMilliseconds)
        do {
            let backend = try OTel.makeTracingBackend(configuration: otel)
            logger.info(
                "exporting traces",
                metadata: ["endpoint": "\(otel.traces.otlpExporter.endpoint)", "protocol": "\(configuration.exportProtocol.rawValue)"])
            return (PushgateTracing(tracer: backend.factory, pushRequestSampleRatio: configuration.pushRequestSampleRatio), backend.service)
        } catch {
            throw GatewayError(.misconfigured, "tracing: cannot start the OTLP exporter: \(error)")
        }
    }
}
