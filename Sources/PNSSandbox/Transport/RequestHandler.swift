import NIOCore
import NIOHTTP1
import Pushgate

/// Collects one request (head, body, end), asks the responder, writes the answer, on HTTP/1.1
/// connections. (HTTP/2 streams are served by ``HTTP2StreamHandler``.)
final class RequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: any SandboxHTTPResponder
    private let version: SandboxHTTPRequest.Version
    private let maximumBodyBytes: Int
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(responder: any SandboxHTTPResponder, version: SandboxHTTPRequest.Version, maximumBodyBytes: Int) {
        self.responder = responder
        self.version = version
        self.maximumBodyBytes = maximumBodyBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
            tooLarge = false
        case .body(let buffer):
            if body.count + buffer.readableBytes > maximumBodyBytes {
                tooLarge = true
            } else {
                body.append(contentsOf: buffer.readableBytesView)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            var request = SandboxHTTPRequest(
                method: head.method.rawValue, target: head.uri,
                headers: head.headers.map { HTTPHeader(name: $0.name, value: $0.value) }, body: tooLarge ? [] : body, version: version)
            request.bodyTooLarge = tooLarge
            responder.answer(request, on: context.eventLoop) { response in
                self.write(response, head: head, context: context)
            }
        }
    }

    private func write(_ response: SandboxHTTPResponse, head: HTTPRequestHead, context: ChannelHandlerContext) {
        if response.action == .drop {
            // A dropped connection: no answer, the whole connection goes away.
            (context.channel.parent ?? context.channel).close(promise: nil)
            return
        }
        var headers = HTTPHeaders(response.headers.map { ($0.name, $0.value) })
        headers.replaceOrAdd(name: "content-length", value: String(response.body.count))
        if version == .http1, !head.isKeepAlive || response.action != .keep {
            headers.replaceOrAdd(name: "connection", value: "close")
        }
        let responseHead = HTTPResponseHead(
            version: head.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        if !response.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        switch (response.action, version) {
        case (.keep, .http1) where !head.isKeepAlive, (.goAway, .http1):
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }
}
