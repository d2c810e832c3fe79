import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A span as an OTLP/HTTP JSON export carried it, with its ids as lower-case hex whatever the
/// exporter's encoding (the OTLP spec's hex, or protobuf JSON's base64).
public struct ReceivedSpan: Sendable, Hashable, CustomStringConvertible {
    public var traceID: String
    public var spanID: String
    /// nil for a root span.
    public var parentSpanID: String?
    public var name: String
    /// OTLP's span kind: 1 internal, 2 server, 3 client.
    public var kind: Int
    /// Every attribute's value as text (`intValue`, `boolValue`, `doubleValue` and arrays too).
    public var attributes: [String: String]

    public var description: String {
        "\(name) [\(spanID) ← \(parentSpanID ?? "root") in \(traceID)] \(attributes.sorted { $0.key < $1.key })"
    }
}

/// A tiny OpenTelemetry collector for the tests: takes `POST /v1/traces` in OTLP/HTTP's JSON
/// encoding on 127.0.0.1 (a free port) and keeps every span it is sent.
///
/// ```swift
/// try await OTLPTraceReceiver.with { receiver in
///     // configure tracing.endpoint = receiver.endpoint, protocol http/json, and send …
///     let spans = try await eventually { receiver.spans } until: { $0.contains { $0.name == "outbox.page" } }
/// }
/// ```
public final class OTLPTraceReceiver: Sendable {
    /// The base URL to configure as `tracing.endpoint`.
    public let endpoint: String
    private let store: Store
    private let server: LoopbackServer

    /// What the receiver was sent, shared with its route.
    final class Store: Sendable {
        let spans = Mutex<[ReceivedSpan]>([])
        /// Export requests that were not JSON, or not OTLP: a test's expectations name them.
        let refusals = Mutex<[String]>([])
    }

    private init(endpoint: String, store: Store, server: LoopbackServer) {
        self.endpoint = endpoint
        self.store = store
        self.server = server
    }

    public var spans: [ReceivedSpan] { store.spans.withLock { $0 } }
    public var refused: [String] { store.refusals.withLock { $0 } }

    public static func start() async throws -> OTLPTraceReceiver {
        let store = Store()
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 << 20)
            let type = request.headers[.contentType] ?? ""
            guard type.hasPrefix("application/json") else {
                store.refusals.withLock { $0.append("Content-Type \(type)") }
                return Response(status: .unsupportedMediaType)
            }
            do {
                let spans = try Self.spans(inExport: Data(body.readableBytesView))
                store.spans.withLock { $0 += spans }
            } catch {
                store.refusals.withLock { $0.append("\(error)") }
                return Response(status: .badRequest)
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
        let server = try await LoopbackServer.start(router, label: "pushgate.otlp-receiver")
        return OTLPTraceReceiver(endpoint: "http://127.0.0.1:\(server.port)", store: store, server: server)
    }

    /// Runs `body` with a receiver, stopped afterwards.
    public static func with(_ body: (OTLPTraceReceiver) async throws -> Void) async throws {
        let receiver = try await start()
        do { try await body(receiver) } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    public func stop() async { await server.stop() }

    struct ReceiverError: Error, CustomStringConvertible {
        var description: String
    }

    /// The spans of an `ExportTraceServiceRequest` in JSON.
    static func spans(inExport data: Data) throws -> [ReceivedSpan] {
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ReceiverError(description: "the export is not a JSON object")
        }
        var spans: [ReceivedSpan] = []
        for resource in root["resourceSpans"] as? [[String: Any]] ?? [] {
            for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    guard let traceID = (span["traceId"] as? String).flatMap({ hex($0, bytes: 16) }),
                        let spanID = (span["spanId"] as? String).flatMap({ hex($0, bytes: 8) })
                    else { throw ReceiverError(description: "a span without a valid traceId or spanId: \(span)") }
                    let parent = (span["parentSpanId"] as? String).flatMap { $0.isEmpty ? nil : hex($0, bytes: 8) }
                    var attributes: [String: String] = [:]
                    for attribute in span["attributes"] as? [[String: Any]] ?? [] {
                        guard let key = attribute["key"] as? String else { continue }
                        attributes[key] = text(attribute["value"] as? [String: Any] ?? [:])
                    }
                    spans.append(
                        ReceivedSpan(
                            traceID: traceID, spanID: spanID, parentSpanID: parent, name: span["name"] as? String ?? "",
                            kind: (span["kind"] as? NSNumber)?.intValue ?? 0, attributes: attributes))
                }
            }
        }
        return spans
    }

    /// An OTLP `AnyValue` as text.
    static func text(_ value: [String: Any]) -> String {
        if let text = value["stringValue"] as? String { return text }
        if let number = value["intValue"] { return "\(number)" }
        if let number = value["doubleValue"] { return "\(number)" }
        if let flag = value["boolValue"] as? Bool { return flag ? "true" : "false" }
        if let array = value["arrayValue"] as? [String: Any] {
            return (array["values"] as? [[String: Any]] ?? []).map(text).joined(separator: ",")
        }
        return ""
    }

    /// An id of `bytes` bytes as lower-case hex: given in hex (the OTLP spec), or in base64
    /// (protobuf's JSON mapping of `bytes`).
    static func hex(_ text: String, bytes: Int) -> String? {
        if text.count == bytes * 2, text.allSatisfy(\.isHexDigit) { return text.lowercased() }
        guard let data = Data(base64Encoded: text), data.count == bytes else { return nil }
        return data.map { String(format: "%02x", $0) }.joined()
    }
}
