import Pushgate
import Testing

/// `tracing` in `config.json`: off unless enabled, read as strictly as every other section.
@Suite struct TracingConfigurationTests {
    static func configuration(tracing: String) -> String {
        #"{"tracing": "# + tracing + #", "apps": {"default": {"templates": {"notify": {"apns": {"body": "{\"aps\":{}}"}}}}}}"#
    }

    func decode(_ text: String) throws -> PushgateConfiguration {
        try PushgateConfiguration(json: Array(text.utf8), file: "config.json")
    }

    func expectError(_ tracing: String, path: String, contains message: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        #expect(
            sourceLocation: sourceLocation, performing: { try decode(Self.configuration(tracing: tracing)) },
            throws: { error in
                let error = error as! ConfigurationError
                return error.path == path && error.reason.contains(message)
            })
    }

    @Test func tracingIsOffUnlessConfigured() throws {
        let configuration = try decode(#"{"apps": {"default": {"templates": {"notify": {"apns": {"body": "{}"}}}}}}"#)
        #expect(configuration.tracing == TracingConfiguration())
        #expect(!configuration.tracing.enabled)
        #expect(configuration.tracing.endpoint == "http://127.0.0.1:4318")
        #expect(configuration.tracing.exportProtocol == .httpProtobuf)
        #expect(configuration.tracing.serviceName == "pushgate")
        #expect(configuration.tracing.pushRequestSampleRatio == 0.01)
        #expect(configuration.tracing.exportIntervalMilliseconds == 5000)
        #expect(try decode(Self.configuration(tracing: "{}")).tracing == TracingConfiguration())
    }

    @Test func everySettingIsRead() throws {
        let tracing = try decode(
            Self.configuration(
                tracing: #"""
                    {"enabled": true, "endpoint": "https://collector.internal:4318/", "protocol": "http/json",
                     "serviceName": "pushgate-eu", "pushRequestSampleRatio": 0.25, "exportIntervalMilliseconds": 1000}
                    """#)
        ).tracing
        #expect(
            tracing
                == TracingConfiguration(
                    enabled: true, endpoint: "https://collector.internal:4318/", exportProtocol: .httpJSON, serviceName: "pushgate-eu",
                    pushRequestSampleRatio: 0.25, exportIntervalMilliseconds: 1000))
        #expect(try decode(Self.configuration(tracing: #"{"pushRequestSampleRatio": 1}"#)).tracing.pushRequestSampleRatio == 1)
    }

    @Test func unknownKeysAndWrongValuesAreRefusedNamingTheKey() {
        expectError(#"{"enabeld": true}"#, path: "$.tracing.enabeld", contains: "unknown key 'enabeld'")
        expectError(#"{"enabeld": true}"#, path: "$.tracing.enabeld", contains: "did you mean 'enabled'?")
        expectError(#"{"headers": {}}"#, path: "$.tracing.headers", contains: "expected one of: enabled, endpoint, protocol")
        expectError(#"{"protocol": "grpc"}"#, path: "$.tracing.protocol", contains: #"expected "http/protobuf" or "http/json""#)
        expectError(#"{"endpoint": "collector:4318"}"#, path: "$.tracing.endpoint", contains: "http:// or https://")
        expectError(#"{"pushRequestSampleRatio": 1.5}"#, path: "$.tracing.pushRequestSampleRatio", contains: "out of range 0.0…1.0")
        expectError(#"{"pushRequestSampleRatio": "all"}"#, path: "$.tracing.pushRequestSampleRatio", contains: "expected a number")
        expectError(#"{"exportIntervalMilliseconds": 0}"#, path: "$.tracing.exportIntervalMilliseconds", contains: "out of range")
        expectError(#"{"serviceName": " "}"#, path: "$.tracing.serviceName", contains: "must not be empty")
        expectError(#"true"#, path: "$.tracing", contains: "expected an object")
    }
}
