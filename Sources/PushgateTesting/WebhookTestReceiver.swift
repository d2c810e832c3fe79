import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import PNSSandbox
import PushgateWebhooks
import Synchronization

/// An event as the test receiver took it from a verified POST.
public struct ReceivedWebhookEvent: Sendable, Hashable, CustomStringConvertible {
    public var sequence: Int64
    public var id: String
    public var type: String
    public var created: Int64
    public var notification: String?
    /// `data`'s members as JSON text (`"\"alice\""`, `"[\"a\"]"`), strings unquoted.
    public var data: [String: String]

    public var description: String { "#\(sequence) \(type) \(id) \(data.sorted { $0.key < $1.key })" }
}

/// An outcome webhook receiver for the tests: takes `POST /hooks` on 127.0.0.1 (a free port),
/// checks `Pushgate-Signature` with its secret and a tolerance as a real receiver would, and keeps
/// every event of the POSTs it accepted. It can be told to answer 500 to the next POSTs.
///
/// With `https` (the gateway's way to every receiver) it speaks TLS with a certificate for
/// 127.0.0.1 from a CA of its own: configure `webhooks.caFile` as ``caFile`` and admit it with
/// ``allowListEntry`` (`127.0.0.1:<port>`, the exact entry a loopback address needs). Without,
/// plain HTTP through an `http://127.0.0.1:<port>` entry (in-process tests of the poster).
///
/// ```swift
/// let receiver = try await WebhookTestReceiver.start(secret: "whsec_test", https: true)
/// // webhooks.allowedHosts [receiver.allowListEntry], caFile receiver.caFile; a receiver with url receiver.url …
/// let events = try await eventually { receiver.events } until: { $0.contains { $0.type == "registration.pruned" } }
/// await receiver.stop()
/// ```
public final class WebhookTestReceiver: Sendable {
    /// The URL to configure as the receiver's `url`.
    public let url: String
    /// The allow-list entry that admits it (`127.0.0.1:<port>`, or `http://127.0.0.1:<port>` without TLS).
    public let allowListEntry: String
    /// The CA file a client trusts to reach it over TLS (nil without).
    public let caFile: String?
    private let state: State
    private let server: LoopbackServer

    final class State: Sendable {
        let secret: [UInt8]
        let tolerance: Int64
        let events = Mutex<[ReceivedWebhookEvent]>([])
        /// POSTs refused: a bad or missing signature, a body that is no batch of events.
        let refusals = Mutex<[String]>([])
        /// How many POSTs were answered, and with what.
        let answers = Mutex<[Int]>([])
        /// POSTs still to be answered 500.
        let failing = Mutex<Int>(0)
        let retryAfter = Mutex<String?>(nil)

        init(secret: [UInt8], tolerance: Int64) {
            self.secret = secret
            self.tolerance = tolerance
        }
    }

    private init(url: String, allowListEntry: String, caFile: String?, state: State, server: LoopbackServer) {
        self.url = url
        self.allowListEntry = allowListEntry
        self.caFile = caFile
        self.state = state
        self.server = server
    }

    /// Every event accepted, in the order they came (repeats of a re-posted event included).
    public var events: [ReceivedWebhookEvent] { state.events.withLock { $0 } }
    /// Why POSTs were refused (a receiver's 400s).
    public var refused: [String] { state.refusals.withLock { $0 } }
    /// The status of every POST answered, in order.
    public var answers: [Int] { state.answers.withLock { $0 } }

    /// Answers 500 (with `retryAfter`, when given) to the next `count` POSTs.
    public func fail(next count: Int, retryAfter: String? = nil) {
        state.failing.withLock { $0 = count }
        state.retryAfter.withLock { $0 = retryAfter }
    }

    public static func start(secret: String, tolerance: Int64 = 300, https: Bool = false) async throws -> WebhookTestReceiver {
        let state = State(secret: Array(secret.utf8), tolerance: tolerance)
        let router = Router()
        router.post("hooks") { request, _ -> Response in
            let body = Array((try await request.body.collect(upTo: 16 << 20)).readableBytesView)
            let status = Self.answer(request: request, body: body, state: state)
            state.answers.withLock { $0.append(status) }
            var headers: HTTPFields = [:]
            if status == 500, let retryAfter = state.retryAfter.withLock({ $0 }) { headers[HTTPField.Name("Retry-After")!] = retryAfter }
            return Response(status: .init(code: status), headers: headers)
        }
        guard https else {
            let server = try await LoopbackServer.start(router, label: "pushgate.webhook-receiver")
            return WebhookTestReceiver(
                url: "http://127.0.0.1:\(server.port)/hooks", allowListEntry: "http://127.0.0.1:\(server.port)", caFile: nil, state: state,
                server: server)
        }
        let identity = try LoopbackTLSIdentity()
        let caFile = NSTemporaryDirectory() + "pushgate-webhook-ca-\(UUID().uuidString).pem"
        try Data(identity.caCertificatePEM.utf8).write(to: URL(fileURLWithPath: caFile))
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(identity.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)))
        let server = try await LoopbackServer.start(
            router, label: "pushgate.webhook-receiver", server: try .tls(.http1(), tlsConfiguration: tls))
        return WebhookTestReceiver(
            url: "https://127.0.0.1:\(server.port)/hooks", allowListEntry: "127.0.0.1:\(server.port)", caFile: caFile, state: state,
            server: server)
    }

    /// What a POST gets: 500 while told to fail, 400 for a bad signature or body, else 200 (its events kept).
    static func answer(request: Request, body: [UInt8], state: State) -> Int {
        let failing = state.failing.withLock { count -> Bool in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
        if failing { return 500 }
        guard let header = request.headers[HTTPField.Name("Pushgate-Signature")!] else {
            state.refusals.withLock { $0.append("no Pushgate-Signature") }
            return 400
        }
        let now = Int64(Date().timeIntervalSince1970)
        let verification = WebhookSignature.verify(header: header, body: body, secret: state.secret, now: now, tolerance: state.tolerance)
        guard verification == .valid else {
            state.refusals.withLock { $0.append("signature \(verification): \(header)") }
            return 400
        }
        guard let root = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let list = root["events"] as? [[String: Any]]
        else {
            state.refusals.withLock { $0.append("not {\"events\": [...]}: \(String(decoding: body.prefix(200), as: UTF8.self))") }
            return 400
        }
        var events: [ReceivedWebhookEvent] = []
        for event in list {
            guard let sequence = (event["sequence"] as? NSNumber)?.int64Value, let id = event["id"] as? String,
                let type = event["type"] as? String, let created = (event["created"] as? NSNumber)?.int64Value,
                let data = event["data"] as? [String: Any]
            else {
                state.refusals.withLock { $0.append("an event without sequence, id, type, created or data: \(event)") }
                return 400
            }
            var fields: [String: String] = [:]
            for (key, value) in data {
                if let text = value as? String {
                    fields[key] = text
                } else if let json = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]) {
                    fields[key] = String(decoding: json, as: UTF8.self)
                }
            }
            events.append(
                ReceivedWebhookEvent(
                    sequence: sequence, id: id, type: type, created: created, notification: event["notification"] as? String, data: fields))
        }
        state.events.withLock { $0 += events }
        return 200
    }

    public func stop() async {
        await server.stop()
        if let caFile { try? FileManager.default.removeItem(atPath: caFile) }
    }
}
