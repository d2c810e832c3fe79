import NIOCore
import Pushgate

/// A complete HTTP request as the sandbox's services see it, whatever the transport (HTTP/1.1, or
/// one HTTP/2 stream).
struct SandboxHTTPRequest: Sendable {
    enum Version: Sendable { case http1, http2 }

    var method: String
    /// The request target: path and query (`/3/device/abc?x=1`).
    var target: String
    /// Header fields in order. HTTP/2 names arrive lower-case; HTTP/1.1 names as sent.
    var headers: [HTTPHeader]
    var body: [UInt8]
    var version: Version
    /// The HTTP/2 connection the request came on (numbered from 1 per process); 0 for HTTP/1.1.
    var connection: UInt64 = 0
    /// The body was over the listener's limit (1 MiB) and was not kept: the service answers as it
    /// does for an oversize payload.
    var bodyTooLarge = false
    /// The client certificate presented in the TLS handshake (DER), on listeners that ask for one.
    var clientCertificate: [UInt8]?

    /// The path without the query.
    var path: String { String(target.prefix(while: { $0 != "?" })) }

    /// The query parameters (percent-decoded); later duplicates win.
    var query: [String: String] {
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        return FormEncoding.decode(String(target[target.index(after: mark)...]))
    }

    /// Every value of header `name` (case-insensitive).
    func values(_ name: String) -> [String] {
        headers.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// The first value of header `name` (case-insensitive). Allocates nothing: services call it
    /// about ten times per request.
    func header(_ name: String) -> String? { headers.first(where: { Self.sameName($0.name, name) })?.value }

    /// ASCII case-insensitive equality of header names, without lower-cased copies.
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        return zip(a.utf8, b.utf8).allSatisfy { x, y in
            x == y || (x ^ y == 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
        }
    }

    /// Whether `name` starts with `prefix` (ASCII, case-insensitive; `prefix` given lower-case).
    static func name(_ name: String, hasLowercasePrefix prefix: String) -> Bool {
        guard name.utf8.count >= prefix.utf8.count else { return false }
        return zip(name.utf8, prefix.utf8).allSatisfy { x, y in (x >= 0x41 && x <= 0x5a ? x | 0x20 : x) == y }
    }
}

/// What a service answers, and what to do with the connection.
struct SandboxHTTPResponse: Sendable {
    enum ConnectionAction: Sendable, Equatable {
        /// Keep the connection.
        case keep
        /// Close the connection without answering (a dropped connection).
        case drop
        /// HTTP/2: refuse the request with GOAWAY (this JSON as debug data, the previous stream as the
        /// last processed) and close; the client retries on a new connection. HTTP/1.1: answer and
        /// close the connection.
        case goAway(String)
    }

    var status: Int
    var headers: [HTTPHeader]
    var body: [UInt8]
    var action: ConnectionAction = .keep

    init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], action: ConnectionAction = .keep) {
        self.status = status
        self.headers = headers
        self.body = body
        self.action = action
    }

    /// A JSON answer.
    static func json(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> SandboxHTTPResponse {
        SandboxHTTPResponse(
            status: status, headers: [HTTPHeader(name: "content-type", value: "application/json; charset=utf-8")] + headers,
            body: Array(text.utf8))
    }

    /// A plain-text answer.
    static func text(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> SandboxHTTPResponse {
        SandboxHTTPResponse(
            status: status, headers: [HTTPHeader(name: "content-type", value: "text/plain; charset=utf-8")] + headers,
            body: Array(text.utf8))
    }

    static let dropConnection = SandboxHTTPResponse(status: 0, action: .drop)

    /// This answer with `bytes` spaces after its body (``SandboxFault/Action/padBody(bytes:)``).
    func padded(_ bytes: Int) -> SandboxHTTPResponse {
        guard bytes > 0, action != .drop else { return self }
        var padded = self
        padded.body.append(contentsOf: repeatElement(UInt8(ascii: " "), count: bytes))
        return padded
    }
}

/// Something that answers sandbox HTTP requests.
protocol SandboxHTTPResponder: Sendable {
    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse
}

extension SandboxHTTPResponder {
    /// Answers `request` on a task and hands the response to `write` on `eventLoop` (the channel
    /// handlers' bridge from the event loop into async code and back).
    func answer(_ request: SandboxHTTPRequest, on eventLoop: any EventLoop, then write: @escaping (SandboxHTTPResponse) -> Void) {
        let promise = eventLoop.makePromise(of: SandboxHTTPResponse.self)
        // An unstructured task (NIO's bridge): it ends when `respond` does, which every responder
        // does on its own (a fault's delay included).
        promise.completeWithTask { await self.respond(to: request) }
        promise.futureResult.assumeIsolated().whenSuccess(write)
    }
}
