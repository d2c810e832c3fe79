import Foundation
import Pushgate
import PushgateCurl
import PushgateTesting
import Testing

/// `/metrics`: open by default, behind a bearer token when one is configured, and off the
/// gateway's listener when it has a listener of its own.
@Suite struct MetricsAccessTests {
    @Test func aBearerTokenProtectsTheMetrics() async throws {
        try await GatewayFixture.inProcess(adjust: { $0.metrics.bearerToken = .inline("m3trics-token") }) { fixture in
            let anonymous = try await fixture.call("GET", "/metrics", user: nil)
            #expect(anonymous.status == 401, "\(anonymous.bodyText)")
            #expect(anonymous.header("WWW-Authenticate") == #"Bearer realm="pushgate-metrics""#)
            #expect(anonymous.bodyText.contains("Bearer") && !anonymous.bodyText.contains("m3trics-token"))
            // A user's Basic credentials are not the token, nor is a wrong or prefixed one.
            #expect(try await fixture.call("GET", "/metrics", user: "alice").status == 401)
            for wrong in ["Bearer m3trics-toke", "Bearer m3trics-token2", "Basic m3trics-token", "m3trics-token"] {
                #expect(try await fixture.call("GET", "/metrics", user: nil, headers: [("Authorization", wrong)]).status == 401, "\(wrong)")
            }
            let allowed = try await fixture.call("GET", "/metrics", user: nil, headers: [("Authorization", "Bearer m3trics-token")])
            #expect(allowed.status == 200 && allowed.bodyText.contains("pushgate_http_requests_total"), "\(allowed.bodyText.prefix(200))")
            let lower = try await fixture.call("GET", "/metrics", user: nil, headers: [("Authorization", "bearer m3trics-token")])
            #expect(lower.status == 200)
        }
    }

    @Test func withAListenerOfItsOwnTheMetricsAreNotOnTheGateways() async throws {
        try await GatewayFixture.inProcess(adjust: { $0.metrics.port = 0 }) { fixture in
            let metrics = try await fixture.call("GET", "/metrics", user: nil)
            #expect(metrics.status == 404)
            let health = try await fixture.call("GET", "/healthz", user: nil)
            #expect(health.status == 200)
        }
    }

    @Test func theConfigurationNamesWhatIsWrong() throws {
        func load(_ metrics: String) throws(ConfigurationError) -> PushgateConfiguration {
            try PushgateConfiguration(
                json: Array(#"{"metrics": \#(metrics), "apps": {"default": {"templates": {"notify": {"apns": {"file": "a.json"}}}}}}"#.utf8)
            )
        }
        let token = try load(#"{"bearerToken": {"env": "METRICS_TOKEN"}}"#)
        #expect(token.metrics.bearerToken == .environment("METRICS_TOKEN") && token.metrics.port == nil)
        let own = try load(#"{"port": 9464}"#)
        #expect(own.metrics.port == 9464 && own.metrics.host == "127.0.0.1")
        #expect(throws: ConfigurationError.self) { try load(#"{"host": "0.0.0.0"}"#) }
        #expect(throws: ConfigurationError.self) { try load(#"{"port": 70000}"#) }
        #expect(throws: ConfigurationError.self) { try load(#"{"token": "x"}"#) }
    }
}
