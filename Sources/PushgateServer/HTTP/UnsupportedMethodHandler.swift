import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import PushgateGateway

/// Per HTTP/1 connection, after decoding: answers what the router never sees, or cannot answer
/// whole, as a complete refusal in the API's `{"error","status"}` shape, with `Content-Length`
/// and `Connection: close`, then ends the connection.
///
/// - A request line the HTTP parser refuses: an unknown method token (`FOO`) is `501` (RFC 9110
///   section 15.6.2: a method the server does not recognise); any other malformed request is
///   `400` naming the parser's complaint. Without this, Hummingbird answers an empty `400`.
/// - `CONNECT`: `501`, the gateway being no proxy. NIO's encoder frames every answer to `CONNECT`
///   as a tunnel's (no body, no length), which leaves a client of a refusal waiting for the end
///   of a body that never comes; this answer is written beneath the encoder, as bytes.
///
/// A refusal that comes while earlier (pipelined) requests are still being answered waits for
/// their answers; nothing after it is read. Output is then closed, and the connection closed
/// after ``linger`` (a client still sending would otherwise get a reset instead of the answer).
/// Over HTTP/2 the router answers `CONNECT` and unknown methods (``AllowedMethodsMiddleware``).
///
/// Runs on its channel's event loop only (NIO's handler contract), hence `@unchecked Sendable`
/// for the timer closure, which is scheduled on that same loop.
final class UnsupportedMethodHandler: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How long a refused connection stays open for reading after its answer.
    static let linger = TimeAmount.seconds(2)

    /// Requests passed on whose answers have not ended.
    private var unanswered = 0
    /// The refusal to write once `unanswered` is 0; set, nothing more is read.
    private var refusal: ByteBuffer?
    private var refused = false
    private var closing: Scheduled<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusal == nil, !refused else { return }
        if case .head(let head) = unwrapInboundIn(data) {
            if head.method == .connect, Self.encoderContext(context) != nil {
                refuse(context, ContractResource.unknownMethod(head.method.rawValue))
                return
            }
            unanswered += 1
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Past a refusal nothing is read: the decoder's complaints about the rest go nowhere.
        guard refusal == nil, !refused else { return }
        guard let error = error as? HTTPParserError, Self.encoderContext(context) != nil else {
            context.fireErrorCaught(error)
            return
        }
        refuse(context, Self.refusal(for: error))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        unanswered = max(0, unanswered - 1)
        context.write(data, promise: promise)
        if unanswered == 0, refusal != nil { send(context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing?.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { closing?.cancel() }

    /// The answer to a request the parser refused.
    static func refusal(for error: HTTPParserError) -> GatewayError {
        switch error {
        case .invalidMethod: ContractResource.unknownMethod(nil)
        default: GatewayError(.invalid, "the request is not well-formed HTTP/1.1: \(error.debugDescription)")
        }
    }

    /// `error` as a whole HTTP/1.1 answer that closes the connection.
    static func answer(_ error: GatewayError) -> ByteBuffer {
        let body = (try? GatewayHTTP.encoder.encode(ErrorBody(error: error.message, status: error.code))) ?? Data()
        let status = HTTPResponseStatus(statusCode: error.code)
        var buffer = ByteBuffer()
        buffer.writeString(
            "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json; charset=utf-8\r\n"
                + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n")
        buffer.writeBytes(body)
        return buffer
    }

    private func refuse(_ context: ChannelHandlerContext, _ error: GatewayError) {
        refusal = Self.answer(error)
        if unanswered == 0 { send(context) }
    }

    /// Writes the refusal beneath the HTTP encoder, then closes output and, after the linger,
    /// the connection.
    private func send(_ context: ChannelHandlerContext) {
        guard let refusal, let encoder = Self.encoderContext(context) else { return }
        self.refusal = nil
        refused = true
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        encoder.writeAndFlush(NIOAny(refusal), promise: written)
        written.futureResult.whenComplete { _ in channel.close(mode: .output, promise: nil) }
        closing = context.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
    }

    /// The HTTP/1 response encoder's context: its writes go to the connection as bytes. None on
    /// an HTTP/2 stream.
    private static func encoderContext(_ context: ChannelHandlerContext) -> ChannelHandlerContext? {
        try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
    }
}
