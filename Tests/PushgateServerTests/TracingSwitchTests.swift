import Foundation
import Logging
import Pushgate
import PushgateServer
import Testing

/// What decides whether the gateway traces: the configuration's `tracing.enabled`, and over it the
/// OpenTelemetry specification's `OTEL_SDK_DISABLED`.
@Suite struct TracingSwitchTests {
    static let enabled = TracingConfiguration(
        enabled: true, endpoint: "http://127.0.0.1:4318", exportProtocol: .httpJSON, pushRequestSampleRatio: 1,
        exportIntervalMilliseconds: 50)

    /// swift-otel reads the process's own environment too: with OTEL_SDK_DISABLED set there, it
    /// refuses to make a backend whatever the dictionary passed here says.
    static let processDisablesIt = ProcessInfo.processInfo.environment["OTEL_SDK_DISABLED"] != nil

    @Test(.disabled(if: processDisablesIt, "OTEL_SDK_DISABLED is set in this process"))
    func tracingOnInTheFileMakesATracerAndItsExportService() throws {
        let (tracing, service) = try GatewayServer.makeTracing(Self.enabled, logger: Logger(label: "test"), environment: [:])
        #expect(tracing.isEnabled && service != nil)
    }

    @Test(arguments: ["true", "TRUE", " true "])
    func otelSDKDisabledTurnsItOffInsteadOfRefusingToStart(value: String) throws {
        let (tracing, service) = try GatewayServer.makeTracing(
            Self.enabled, logger: Logger(label: "test"), environment: ["OTEL_SDK_DISABLED": value])
        #expect(!tracing.isEnabled && service == nil)
    }

    @Test(.disabled(if: processDisablesIt, "OTEL_SDK_DISABLED is set in this process"), arguments: ["false", "1", ""])
    func anythingButTrueLeavesItOn(value: String) throws {
        let (tracing, _) = try GatewayServer.makeTracing(
            Self.enabled, logger: Logger(label: "test"), environment: ["OTEL_SDK_DISABLED": value])
        #expect(tracing.isEnabled)
    }

    @Test func tracingOffInTheFileMakesNothing() throws {
        var off = Self.enabled
        off.enabled = false
        let (tracing, service) = try GatewayServer.makeTracing(off, logger: Logger(label: "test"), environment: [:])
        #expect(!tracing.isEnabled && service == nil)
    }
}
