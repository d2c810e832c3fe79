import Pushgate
import Testing

@Suite struct WebhookConfigurationTests {
    func load(_ webhooks: String, receivers: String) throws(ConfigurationError) -> PushgateConfiguration {
        try PushgateConfiguration(
            json: Array(
                """
                {"webhooks": \(webhooks),
                 "apps": {"default": {"templates": {"notify": {"apns": {"body": "{}"}}},
                                      "webhooks": {"receivers": \(receivers)}}}}
                """.utf8))
    }

    @Test func receiversAreReadWithTheirSecretsEventsAndSampling() throws {
        let configuration = try load(
            #"{"allowedHosts": ["hooks.example.com", "http://127.0.0.1:8080"], "retryForSeconds": 600, "batchMaxEvents": 50}"#,
            receivers: """
                [{"name": "backend", "url": "https://Hooks.example.com/pushgate", "secret": {"env": "NEW"}, "previousSecret": {"env": "OLD"},
                  "events": ["registration.pruned", "delivery.failed"], "deliveryFailedSampleRate": 0.25},
                 {"name": "local", "url": "http://127.0.0.1:8080/hooks", "secret": {"value": "s"}, "events": ["notification.completed"], "fullHandles": true}]
                """)
        let receivers = configuration.apps[0].webhooks
        #expect(receivers.map(\.name) == ["backend", "local"])
        #expect(receivers[0].url == "https://hooks.example.com/pushgate")
        #expect(receivers[0].secrets == [.environment("NEW"), .environment("OLD")])
        #expect(receivers[0].events == [.registrationPruned, .deliveryFailed])
        #expect(receivers[0].deliveryFailedSampleRate == 0.25)
        #expect(receivers[1].url == "http://127.0.0.1:8080/hooks")
        #expect(receivers[1].fullHandles)
        #expect(configuration.webhooks.retryForSeconds == 600)
        #expect(configuration.webhooks.batchMaximumEvents == 50)
    }

    @Test(arguments: [
        (
            #"{"allowedHosts": ["hooks.example.com"]}"#,
            #"[{"name": "a", "url": "https://evil.example.net/", "secret": {"value": "s"}, "events": ["ping"]}]"#,
            "$.apps.default.webhooks.receivers[0].url"
        ),
        (
            #"{"allowedHosts": ["*.example.com"]}"#,
            #"[{"name": "a", "url": "https://127.0.0.1:8443/", "secret": {"value": "s"}, "events": ["ping"]}]"#,
            "$.apps.default.webhooks.receivers[0].url"
        ),
        (
            #"{"allowedHosts": ["127.0.0.1:8080"]}"#,
            #"[{"name": "a", "url": "http://127.0.0.1:8080/", "secret": {"value": "s"}, "events": ["ping"]}]"#,
            "$.apps.default.webhooks.receivers[0].url"
        ),
        (
            #"{"allowedHosts": ["hooks.example.com"]}"#, #"[{"name": "a", "url": "https://hooks.example.com/", "events": ["ping"]}]"#,
            "$.apps.default.webhooks.receivers[0]"
        ),
        (
            #"{"allowedHosts": ["hooks.example.com"]}"#,
            #"[{"name": "a", "url": "https://hooks.example.com/", "secret": {"value": "s"}, "events": ["delivery.done"]}]"#,
            "$.apps.default.webhooks.receivers[0].events[0]"
        ),
        (#"{"allowedHosts": ["http://*.example.com"]}"#, "[]", "$.webhooks.allowedHosts[0]"),
        (#"{"retryFor": 5}"#, "[]", "$.webhooks.retryFor"),
    ])
    func aBadSettingIsRefusedNamingItsKey(webhooks: String, receivers: String, path: String) {
        #expect {
            _ = try load(webhooks, receivers: receivers)
        } throws: { error in
            (error as? ConfigurationError)?.path == path
        }
    }

    @Test func samplingIsDecidedByTheKeyAndFollowsTheRate() {
        let keys = (0..<10_000).map { "n/\($0)" }
        let kept = keys.filter { WebhookSubscriptions.sampled($0, rate: 0.1) }
        #expect((800...1200).contains(kept.count))
        #expect(kept == keys.filter { WebhookSubscriptions.sampled($0, rate: 0.1) })
        #expect(keys.allSatisfy { WebhookSubscriptions.sampled($0, rate: 1) })
        #expect(!keys.contains { WebhookSubscriptions.sampled($0, rate: 0) })
    }
}
