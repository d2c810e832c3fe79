import Foundation
import PNSSandbox
import Pushgate
import PushgateCurl
import PushgateTesting
import Testing

/// OpenTelemetry traces, exported over OTLP/HTTP (JSON) to a receiver on loopback: the chain from
/// the caller's `traceparent` to the push-service request, and what the spans may not carry.
@Suite struct TracingTests {
    /// A gateway in process exporting every push-service request's span within 50 ms.
    static func tracing(to receiver: OTLPTraceReceiver) -> @Sendable (inout PushgateConfiguration) -> Void {
        let endpoint = receiver.endpoint
        return {
            $0.tracing = TracingConfiguration(
                enabled: true, endpoint: endpoint, exportProtocol: .httpJSON, pushRequestSampleRatio: 1, exportIntervalMilliseconds: 50)
        }
    }

    static func randomHex(bytes: Int) -> String { (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    func notificationID(_ response: CurlResponse) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try #require(object?["notificationId"] as? String, "\(response.bodyText)")
    }

    @Test func aSendIsTracedFromTheCallersSpanThroughItsOutboxPageToThePushServiceRequest() async throws {
        try await OTLPTraceReceiver.with { receiver in
            try await GatewayFixture.inProcess(adjust: Self.tracing(to: receiver)) { fixture in
                let device = await fixture.sandbox.createDevice(.apns)
                _ = try await fixture.register(device, user: "alice")
                // APNs is unavailable once: the request is retried, and its span counts the retry.
                await fixture.sandbox.state.addFault(
                    SandboxFault(
                        service: .apns, handle: device.handle,
                        action: .respond(status: 503, reason: "ServiceUnavailable", retryAfterSeconds: nil)))
                let (traceID, callerSpanID) = (Self.randomHex(bytes: 16), Self.randomHex(bytes: 8))
                let message = "tracing-payload-\(Self.randomHex(bytes: 4))"
                let sent = try await fixture.call(
                    "POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: "\"\(message)\"",
                    headers: [("traceparent", "00-\(traceID)-\(callerSpanID)-01")])
                #expect(sent.status == 200, "\(sent.bodyText)")
                let notification = try notificationID(sent)
                #expect(await fixture.sandbox.state.inbox(deviceID: device.id).count == 1)

                let spans = try await eventually {
                    receiver.spans.filter { $0.traceID == traceID }
                } until: { spans in
                    // Every span of the trace: the request's ends last (once its body is written).
                    ["push.request", "outbox.page", "POST /api/notifications"].allSatisfy { name in spans.contains { $0.name == name } }
                }
                let trace = spans.map(\.description).joined(separator: "\n")
                #expect(receiver.refused.isEmpty, "\(receiver.refused)")

                // The request's span: the caller's child, named by its route.
                let request = try #require(spans.first { $0.kind == 2 && $0.parentSpanID == callerSpanID }, "\(trace)")
                #expect(request.name == "POST /api/notifications")
                #expect(request.attributes["http.request.method"] == "POST")
                #expect(request.attributes["http.route"] == "/api/notifications")
                #expect(request.attributes["http.response.status_code"] == "200")

                // The page's span: the request's child.
                let page = try #require(spans.first { $0.name == "outbox.page" }, "\(trace)")
                #expect(page.parentSpanID == request.spanID, "\(trace)")
                #expect(page.attributes["pushgate.notification.id"] == notification)
                #expect(page.attributes["pushgate.outbox.page.number"] != nil)
                #expect(page.attributes["pushgate.outbox.page.targets"] == "1")
                #expect(page.attributes["pushgate.outbox.page.succeeded"] == "1")
                #expect(page.attributes["pushgate.outbox.page.failed"] == "0")
                #expect(page.attributes["pushgate.outbox.page.outcomes"] == "Success=1")

                // The push-service request's span: the page's child, a client span.
                let push = try #require(spans.first { $0.name == "push.request" }, "\(trace)")
                #expect(push.parentSpanID == page.spanID, "\(trace)")
                #expect(push.kind == 3)
                #expect(push.attributes["pushgate.push.service"] == "apns")
                #expect(push.attributes["http.response.status_code"] == "200")
                #expect(push.attributes["pushgate.push.outcome"] == "Success")
                #expect(push.attributes["pushgate.push.retries"] == "1")

                // No handle, payload or credential in any span of the gateway's.
                for span in receiver.spans {
                    for (key, value) in span.attributes {
                        #expect(!value.contains(device.handle) && !value.contains(message), "\(key) of \(span.name)")
                        #expect(!value.lowercased().contains("bearer") && !value.contains("Basic "), "\(key) of \(span.name)")
                    }
                }
            }
        }
    }

    @Test func aStreamedSendIsTracedUnderItsRequestAndABackgroundSendUnderARootOfItsOwn() async throws {
        try await OTLPTraceReceiver.with { receiver in
            try await GatewayFixture.inProcess(adjust: Self.tracing(to: receiver)) { fixture in
                let device = await fixture.sandbox.createDevice(.fcm)
                _ = try await fixture.register(device, user: "alice")

                // Streamed: delivered while the body is written, still under the request's span.
                let streamedTrace = Self.randomHex(bytes: 16)
                let streamed = try await fixture.call(
                    "POST", "/api/notifications?pns=fcm&to_tag=alice", user: "bob", body: #""streamed""#, accept: "application/x-ndjson",
                    headers: [("traceparent", "00-\(streamedTrace)-\(Self.randomHex(bytes: 8))-01")])
                #expect(streamed.status == 200, "\(streamed.bodyText)")
                let spans = try await eventually {
                    receiver.spans.filter { $0.traceID == streamedTrace }
                } until: { spans in
                    ["push.request", "outbox.page", "POST /api/notifications"].allSatisfy { name in spans.contains { $0.name == name } }
                }
                let request = try #require(spans.first { $0.kind == 2 }, "\(spans)")
                let page = try #require(spans.first { $0.name == "outbox.page" }, "\(spans)")
                #expect(page.parentSpanID == request.spanID, "\(spans)")
                #expect(spans.first { $0.name == "push.request" }?.parentSpanID == page.spanID, "\(spans)")
                #expect(spans.first { $0.name == "push.request" }?.attributes["pushgate.push.service"] == "fcm")

                // Asynchronous: the request ends at 202; the delivery service drives the notification
                // later, in a trace of its own rooted at `outbox.deliver`.
                let backgroundTrace = Self.randomHex(bytes: 16)
                let accepted = try await fixture.call(
                    "POST", "/api/notifications?pns=fcm&to_tag=alice&async=true", user: "bob", body: #""later""#,
                    headers: [("traceparent", "00-\(backgroundTrace)-\(Self.randomHex(bytes: 8))-01")])
                #expect(accepted.status == 202, "\(accepted.bodyText)")
                let notification = try notificationID(accepted)
                let all = try await eventually {
                    receiver.spans
                } until: { spans in
                    spans.contains { $0.name == "outbox.page" && $0.attributes["pushgate.notification.id"] == notification }
                        && spans.contains { $0.name == "outbox.deliver" && $0.attributes["pushgate.notification.id"] == notification }
                        && spans.contains { $0.traceID == backgroundTrace && $0.kind == 2 }
                }
                let backgroundPage = try #require(
                    all.first { $0.name == "outbox.page" && $0.attributes["pushgate.notification.id"] == notification }, "\(all)")
                let root = try #require(all.first { $0.spanID == backgroundPage.parentSpanID }, "\(all)")
                #expect(root.name == "outbox.deliver" && root.parentSpanID == nil)
                #expect(backgroundPage.traceID != backgroundTrace)
                #expect(
                    all.contains { $0.traceID == backgroundTrace && $0.kind == 2 && $0.attributes["http.response.status_code"] == "202" })
            }
        }
    }
}
