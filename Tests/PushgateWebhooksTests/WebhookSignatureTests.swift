import Pushgate
import PushgateWebhooks
import Testing

@Suite struct WebhookSignatureTests {
    static let body = Array(#"{"events":[{"sequence":1,"id":"evt_1","type":"ping","created":1795939200,"data":{}}]}"#.utf8)

    /// Computed independently:
    /// `python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_current", b"1795939200." + body, hashlib.sha256).hexdigest())'`
    /// with `body` the bytes above (and `whsec_previous` for the second).
    @Test func theSignatureIsHMACSHA256OfTheTimestampADotAndTheRawBody() {
        #expect(
            WebhookSignature.header(timestamp: 1_795_939_200, body: Self.body, secrets: [Array("whsec_current".utf8)])
                == "t=1795939200,v1=481f103d93607650851e981bd2be3b119278d680a66d922a4271c0ea680a2311")
    }

    @Test func duringRotationBothSecretsSignAndEitherVerifies() {
        let header = WebhookSignature.header(
            timestamp: 1_795_939_200, body: Self.body, secrets: [Array("whsec_current".utf8), Array("whsec_previous".utf8)])
        #expect(
            header
                == "t=1795939200,v1=481f103d93607650851e981bd2be3b119278d680a66d922a4271c0ea680a2311,"
                + "v1=aa3def3d0a61d77a44c86769002a3010b0a28974bc62e5ac3dec90c33b7e40f6")
        for secret in ["whsec_current", "whsec_previous"] {
            #expect(
                WebhookSignature.verify(header: header, body: Self.body, secret: Array(secret.utf8), now: 1_795_939_260, tolerance: 300)
                    == .valid)
        }
    }

    @Test func aReceiverRefusesAnotherSecretAChangedBodyAnOldTimestampOrNoSignature() {
        let header = WebhookSignature.header(timestamp: 1_795_939_200, body: Self.body, secrets: [Array("whsec_current".utf8)])
        let secret = Array("whsec_current".utf8)
        #expect(
            WebhookSignature.verify(header: header, body: Self.body, secret: Array("other".utf8), now: 1_795_939_200, tolerance: 300)
                == .mismatch)
        #expect(
            WebhookSignature.verify(header: header, body: Self.body + [0x20], secret: secret, now: 1_795_939_200, tolerance: 300)
                == .mismatch)
        #expect(
            WebhookSignature.verify(header: header, body: Self.body, secret: secret, now: 1_795_939_501, tolerance: 300)
                == .outsideTolerance)
        #expect(
            WebhookSignature.verify(header: "t=1795939200", body: Self.body, secret: secret, now: 1_795_939_200, tolerance: 300)
                == .malformed)
    }
}

@Suite struct WebhookRetryTests {
    let start = Timestamp(secondsSinceEpoch: 1_800_000_000)

    @Test func failuresBackOffDoublingThenParkOnceTheRetryTimeHasPassed() {
        let retry = WebhookRetry(retryForSeconds: 60, initialBackoffSeconds: 1, maximumBackoffSeconds: 16)
        #expect(retry.next(attempts: 0, firstFailedAt: nil, now: start, retryAfter: nil) == start.adding(seconds: 1))
        #expect(retry.next(attempts: 3, firstFailedAt: start, now: start.adding(seconds: 7), retryAfter: nil) == start.adding(seconds: 15))
        #expect(
            retry.next(attempts: 10, firstFailedAt: start, now: start.adding(seconds: 30), retryAfter: nil) == start.adding(seconds: 46))
        // The last try at the deadline, then parked.
        #expect(
            retry.next(attempts: 10, firstFailedAt: start, now: start.adding(seconds: 50), retryAfter: nil) == start.adding(seconds: 60))
        #expect(retry.next(attempts: 11, firstFailedAt: start, now: start.adding(seconds: 60), retryAfter: nil) == nil)
    }

    @Test func retryAfterIsHonouredWhenLaterThanTheBackoffAndParksWhenPastTheRetryTime() {
        let retry = WebhookRetry(retryForSeconds: 60)
        #expect(retry.next(attempts: 0, firstFailedAt: nil, now: start, retryAfter: 20) == start.adding(seconds: 20))
        #expect(retry.next(attempts: 5, firstFailedAt: start, now: start.adding(seconds: 1), retryAfter: 0) == start.adding(seconds: 33))
        #expect(retry.next(attempts: 1, firstFailedAt: start, now: start.adding(seconds: 10), retryAfter: 120) == nil)
        #expect(WebhookAnswer.retryAfter(" 7 ") == 7)
        #expect(WebhookAnswer.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
    }
}

@Suite struct WebhookBatchTests {
    func delivery(_ sequence: Int64, _ body: String) -> WebhookDelivery {
        WebhookDelivery(
            row: StoredOutboxRow(sequence: sequence, notificationID: "n", page: 1, row: OutboxRecordRow(kind: "webhook:r", body: body)))
    }

    @Test func aBatchIsAnEventsArrayEachEventWithItsSequenceFirst() {
        let batch = WebhookBatch([delivery(7, #"{"id":"evt_a","type":"ping"}"#), delivery(9, #"{"id":"evt_b","type":"ping"}"#)])
        #expect(
            String(decoding: batch.body, as: UTF8.self)
                == #"{"events":[{"sequence":7,"id":"evt_a","type":"ping"},{"sequence":9,"id":"evt_b","type":"ping"}]}"#)
        #expect(batch.sequences == [7, 9])
    }

    @Test func claimsAreSplitByBytesInOrderAndALargeEventGoesAlone() {
        let small = String(repeating: "x", count: 100)
        let large = String(repeating: "y", count: 900)
        let deliveries = [
            delivery(1, "{\"s\":\"\(small)\"}"), delivery(2, "{\"s\":\"\(small)\"}"), delivery(3, "{\"s\":\"\(large)\"}"),
            delivery(4, "{\"s\":\"\(small)\"}"),
        ]
        let batches = WebhookBatch.split(deliveries, maximumBytes: 400)
        #expect(batches.map(\.sequences) == [[1, 2], [3], [4]])
        #expect(batches.allSatisfy { $0.deliveries.count > 1 ? $0.body.count <= 400 : true })
    }
}

@Suite struct WebhookEventTests {
    /// An event too long for an outbox row (a service's long reason, many long tags) is shortened,
    /// not refused: a refused row would fail the outcome's record and send the page again.
    @Test func anEventIsShortenedToFitARowInsteadOfFailingItsRecord() throws {
        let tags = try (0..<60).map { try Tag("tag-\($0)-" + String(repeating: "x", count: 110)) }
        let registration = try Registration(
            id: try RegistrationID("r1"), handle: DeviceHandle(uncheckedPlatform: .apns, value: "ab12"), tags: tags, owner: "alice")
        let event = WebhookEvent.registrationPruned(
            registration, outcome: .expiredChannel, reason: String(repeating: "é", count: 9000), notificationID: "n",
            now: Timestamp(secondsSinceEpoch: 1_795_939_200))
        let body = event.body(fullHandles: false)
        #expect(body.utf8.count <= OutboxRecordRow.maximumBodyBytes)
        let parsed = try JSONParser.parse(Array(body.utf8))
        #expect(parsed["data"]?["truncated"]?.kind == .bool(true))
        #expect(parsed["data"]?["tags"]?.arrayElements?.count == 10)
        #expect(parsed["data"]?["reason"]?.stringValue?.hasSuffix("…") == true)
        #expect(parsed["id"]?.stringValue == event.id)
        #expect(parsed["data"]?["registration"]?.stringValue == "r1")
    }
}
