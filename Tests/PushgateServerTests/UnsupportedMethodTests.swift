import Foundation
import Pushgate
import PushgateLocal
import PushgateTesting
import Testing

/// Methods the gateway does not serve, sent over a raw socket as a client would: each gets a
/// whole answer in the API's error shape (RFC 9110: 501 for a method the server does not know,
/// 405 for one a resource does not take), and a refusal that ends the connection says so and
/// closes it, so that no client is left waiting.
@Suite struct UnsupportedMethodTests {
    /// One HTTP/1.1 answer read off the wire.
    struct Answer: CustomStringConvertible {
        var statusLine: String
        var status: Int
        var headers: [String: String]
        var body: String
        /// Whether `Content-Length` was there and counted the body that followed.
        var framed: Bool

        var description: String { "\(status) \(headers) \(body.prefix(300))" }

        func json() -> [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
    }

    /// The answers in `text`, in order, each framed by its `Content-Length`.
    static func answers(_ text: String) -> [Answer] {
        var rest = Substring(text)
        var answers: [Answer] = []
        while let end = rest.range(of: "\r\n\r\n") {
            let lines = rest[..<end.lowerBound].split(separator: "\r\n")
            guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
                let status = Int(statusLine.dropFirst(9).prefix(3))
            else { break }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let after = rest[end.upperBound...]
            let length = headers["content-length"].flatMap { Int($0) }
            let bytes = Array(after.utf8)
            let count = min(length ?? bytes.count, bytes.count)
            answers.append(
                Answer(
                    statusLine: String(statusLine), status: status, headers: headers,
                    body: String(decoding: bytes[..<count], as: UTF8.self),
                    framed: length.map { $0 <= bytes.count } ?? false))
            rest = Substring(String(decoding: bytes[count...], as: UTF8.self))
        }
        return answers
    }

    /// Sends `request` on a new connection and reads until the gateway closes it (10 s at most).
    static func exchange(_ port: Int, _ request: String) async -> (answers: [Answer], closed: Bool) {
        let (text, closed) = await RawConnection.onThread { () -> (String, Bool) in
            guard let connection = try? RawConnection(port: port) else { return ("", false) }
            connection.send(request)
            let answer = connection.readUntilClosed(timeout: 10)
            return (answer.text, answer.closed)
        }
        return (answers(text), closed)
    }

    static func running(_ body: (LocalGateway) async throws -> Void) async throws {
        let local = try await LocalGateway.start()
        do { try await body(local) } catch {
            await local.stop()
            throw error
        }
        await local.stop()
    }

    /// A whole JSON refusal that closes the connection.
    static func expectRefusal(_ exchange: (answers: [Answer], closed: Bool), _ status: Int, _ name: String) {
        #expect(exchange.closed, "\(name): the connection was left open")
        guard let answer = exchange.answers.last else {
            Issue.record("\(name): no answer")
            return
        }
        #expect(answer.status == status, "\(name): \(answer)")
        #expect(answer.statusLine == "HTTP/1.1 \(status) \(status == 501 ? "Not Implemented" : "Bad Request")", "\(name): \(answer)")
        #expect(answer.framed, "\(name): no Content-Length, or a body shorter than it: \(answer)")
        #expect(answer.headers["connection"] == "close", "\(name): \(answer)")
        #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true, "\(name): \(answer)")
        let body = answer.json()
        #expect(body?["status"] as? Int == status && (body?["error"] as? String)?.isEmpty == false, "\(name): \(answer)")
    }

    @Test func aMethodTheParserDoesNotKnowIs501InTheAPIsShapeAndTheConnectionCloses() async throws {
        try await Self.running { local in
            let port = local.port
            let foo = await Self.exchange(port, "FOO / HTTP/1.1\r\nHost: pushgate\r\n\r\n")
            Self.expectRefusal(foo, 501, "FOO /")
            #expect((foo.answers.last?.json()?["error"] as? String)?.contains("GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS") == true)
            // With a body, and on a route that exists.
            let withBody = await Self.exchange(port, "FOO /api/me HTTP/1.1\r\nHost: pushgate\r\nContent-Length: 5\r\n\r\nhello")
            Self.expectRefusal(withBody, 501, "FOO /api/me")
            let health = try await local.call("GET", "/healthz", user: nil)
            #expect(health.status == 200)
        }
    }

    @Test func connectIsAnsweredWholeAndTheConnectionCloses() async throws {
        try await Self.running { local in
            let connect = await Self.exchange(local.port, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
            Self.expectRefusal(connect, 501, "CONNECT")
            #expect((connect.answers.last?.json()?["error"] as? String)?.hasPrefix("CONNECT is not a method") == true, "\(connect)")
        }
    }

    @Test func aRefusalAfterPipelinedRequestsComesAfterTheirAnswers() async throws {
        try await Self.running { local in
            let pipelined = await Self.exchange(
                local.port,
                "GET /healthz HTTP/1.1\r\nHost: pushgate\r\n\r\nGET /healthz HTTP/1.1\r\nHost: pushgate\r\n\r\nFOO / HTTP/1.1\r\nHost: pushgate\r\n\r\n"
            )
            #expect(pipelined.answers.map(\.status) == [200, 200, 501], "\(pipelined.answers)")
            #expect(pipelined.answers.first?.body == "ok\n")
            Self.expectRefusal(pipelined, 501, "pipelined FOO")
        }
    }

    @Test func aMalformedRequestIs400InTheAPIsShape() async throws {
        try await Self.running { local in
            let malformed = await Self.exchange(local.port, "GET /healthz HTTP/1.1\r\nHost: pushgate\r\nNo colon here\r\n\r\n")
            Self.expectRefusal(malformed, 400, "a header line without a colon")
        }
    }

    /// Methods the HTTP parser reads but the gateway serves nowhere reach the router: 501 on any
    /// path, in NH's XML under a hub; a method HTTP defines for every resource is still 405 with
    /// `Allow` where the resource does not take it. These keep the connection.
    @Test func methodsTheGatewayDoesNotKnowAre501InEachAPIsShape() async throws {
        try await Self.running { local in
            for path in ["/api/me", "/nowhere"] {
                let propfind = try await local.call("PROPFIND", path, user: nil)
                #expect(propfind.status == 501, "PROPFIND \(path): \(propfind.bodyText)")
                let body = try JSONSerialization.jsonObject(with: Data(propfind.body)) as? [String: Any]
                #expect(body?["status"] as? Int == 501 && (body?["error"] as? String)?.hasPrefix("PROPFIND is not") == true)
            }
            let hub = try await local.call("PROPFIND", "/default/messages", user: nil)
            #expect(hub.status == 501 && hub.bodyText.contains("<Code>501</Code>"), "\(hub.bodyText)")
            #expect(hub.header("TrackingId") != nil)
            let trace = try await local.call("TRACE", "/api/me", user: nil)
            #expect(trace.status == 405 && trace.header("Allow") == "GET, HEAD, OPTIONS", "\(trace.bodyText)")
        }
    }
}
