import NIOCore
import NIOHPACK
import NIOHTTP2
import Pushgate

/// Serves one HTTP/2 stream: collects HEADERS and DATA into a request, asks the responder, and
/// answers with END_STREAM on the last frame that carries content — HEADERS alone for an empty
/// body, else HEADERS then one DATA frame — as APNs does. (NIO's
/// `HTTP2FramePayloadToHTTP1ServerCodec` always adds a separate empty `DATA(END_STREAM)` frame,
/// and gives no access to the connection for GOAWAY faults.)
final class HTTP2StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let responder: any SandboxHTTPResponder
    private let maximumBodyBytes: Int
    private var headers: HPACKHeaders?
    private var body: [UInt8] = []
    private var tooLarge = false
    private var answered = false
    private let connection: UInt64
    private let clientCertificate: [UInt8]?

    init(responder: any SandboxHTTPResponder, maximumBodyBytes: Int, connection: UInt64, clientCertificate: [UInt8]? = nil) {
        self.responder = responder
        self.maximumBodyBytes = maximumBodyBytes
        self.connection = connection
        self.clientCertificate = clientCertificate
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if headers == nil {
                headers = frame.headers
            }
            if frame.endStream { requestComplete(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data {
                if body.count + buffer.readableBytes > maximumBodyBytes {
                    tooLarge = true
                } else {
                    body.append(contentsOf: buffer.readableBytesView)
                }
            }
            if frame.endStream { requestComplete(context: context) }
        default:
            break
        }
    }

    private func requestComplete(context: ChannelHandlerContext) {
        guard !answered, let headers else { return }
        answered = true
        var method = ""
        var path = ""
        var fields: [HTTPHeader] = []
        for (name, value, _) in headers {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case ":authority": fields.append(HTTPHeader(name: "host", value: value))
            case ":scheme": break
            default: fields.append(HTTPHeader(name: name, value: value))
            }
        }
        var request = SandboxHTTPRequest(method: method, target: path, headers: fields, body: tooLarge ? [] : body, version: .http2)
        request.connection = connection
        request.bodyTooLarge = tooLarge
        request.clientCertificate = clientCertificate
        responder.answer(request, on: context.eventLoop) { response in
            self.write(response, context: context)
        }
    }

    private func write(_ response: SandboxHTTPResponse, context: ChannelHandlerContext) {
        guard let connection = context.channel.parent else { return }
        switch response.action {
        case .drop:
            connection.close(promise: nil)
            return
        case .goAway(let reason):
            // Refuse this stream without processing it, as a server going away does: GOAWAY names
            // the stream before this one as the last processed, so the client retries this request
            // on a new connection. Then close.
            let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .rootStream
            let lastProcessed = streamID == .rootStream ? HTTP2StreamID.rootStream : HTTP2StreamID(max(0, Int32(Int(streamID)) - 2))
            var buffer = connection.allocator.buffer(capacity: reason.utf8.count)
            buffer.writeString(reason)
            let frame = HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: lastProcessed, errorCode: .noError, opaqueData: buffer))
            connection.writeAndFlush(frame).whenComplete { _ in connection.close(promise: nil) }
            return
        case .keep:
            break
        }
        var fields = HPACKHeaders([(":status", String(response.status))])
        for header in response.headers { fields.add(name: header.name.lowercased(), value: header.value) }
        fields.add(name: "content-length", value: String(response.body.count))
        let hasBody = !response.body.isEmpty
        context.write(wrapOutboundOut(.headers(.init(headers: fields, endStream: !hasBody))), promise: nil)
        if hasBody {
            let buffer = context.channel.allocator.buffer(bytes: response.body)
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        }
        context.flush()
    }
}
