import NIOCore
import NIOTLS

/// A per-connection budget for the HTTP/2 frames that carry no request: `WINDOW_UPDATE`,
/// `PING`, `SETTINGS`, `PRIORITY`, `RST_STREAM`, `GOAWAY`, unknown types and empty `DATA`.
///
/// swift-nio-http2 already answers floods of resets, `SETTINGS`, `PING` and `CONTINUATION` with
/// `GOAWAY`; a flood of connection-level `WINDOW_UPDATE(+1)` it processes one by one, forever (a
/// probe kept two cores busy with four connections). The budget is a token bucket: it starts at
/// ``Configuration/burst``, refills ``Configuration/perSecond`` a second and
/// ``Configuration/perRequest`` for every `HEADERS` frame (a busy client's flow control grows with
/// its requests), and a connection that overdraws it gets `GOAWAY(ENHANCE_YOUR_CALM)` and is closed.
///
/// A value: bytes and the time in, a verdict out (the handler below does the I/O).
package struct HTTP2FrameMeter: Sendable {
    package struct Configuration: Sendable, Hashable {
        var burst = 1_000.0
        var perSecond = 200.0
        var perRequest = 10.0

        package init(burst: Double = 1_000.0, perSecond: Double = 200.0, perRequest: Double = 10.0) {
            self.burst = burst
            self.perSecond = perSecond
            self.perRequest = perRequest
        }
    }

    package enum Verdict: Equatable {
        case proceed
        /// Over budget: answer GOAWAY with this last stream id, then close.
        case goAway(lastStreamID: UInt32)
    }

    let configuration: Configuration
    /// The client connection preface (`PRI * HTTP/2.0…`) still to pass over.
    private var prefaceLeft = 24
    /// The frame header being read (9 bytes), and the payload bytes still to pass over.
    private var header: [UInt8] = []
    private var payloadLeft = 0
    private var tokens: Double
    private var refilledAt: NIODeadline
    /// The highest stream a request (HEADERS) arrived on.
    private(set) var lastStreamID: UInt32 = 0
    private(set) var overdrawn = false

    package init(configuration: Configuration = .init(), now: NIODeadline) {
        self.configuration = configuration
        tokens = configuration.burst
        refilledAt = now
        header.reserveCapacity(9)
    }

    /// Reads `bytes` (the connection's decrypted input, in order) at `now`.
    package mutating func read(_ bytes: ByteBufferView, now: NIODeadline) -> Verdict {
        guard !overdrawn else { return .goAway(lastStreamID: lastStreamID) }
        let elapsed = Double((now - refilledAt).nanoseconds) / 1e9
        if elapsed > 0 {
            tokens = min(configuration.burst, tokens + elapsed * configuration.perSecond)
            refilledAt = now
        }
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if prefaceLeft > 0 {
                let step = min(prefaceLeft, bytes.endIndex - index)
                prefaceLeft -= step
                index += step
            } else if payloadLeft > 0 {
                let step = min(payloadLeft, bytes.endIndex - index)
                payloadLeft -= step
                index += step
            } else {
                header.append(bytes[index])
                index += 1
                if header.count == 9 {
                    frameStarted()
                    header.removeAll(keepingCapacity: true)
                    if tokens < 0 {
                        overdrawn = true
                        return .goAway(lastStreamID: lastStreamID)
                    }
                }
            }
        }
        return .proceed
    }

    private mutating func frameStarted() {
        let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        let type = header[3]
        let stream = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7FFF_FFFF
        payloadLeft = length
        switch type {
        case 0x1:  // HEADERS: a request (or its trailers)
            lastStreamID = max(lastStreamID, stream)
            tokens = min(configuration.burst, tokens + configuration.perRequest)
        case 0x9:  // CONTINUATION: swift-nio-http2 bounds header blocks itself
            break
        case 0x0 where length > 0:  // DATA with a body: bounded by flow control and the body limits
            break
        default:
            tokens -= 1
        }
    }

    /// The `GOAWAY` frame: ENHANCE_YOUR_CALM (0xb), `lastStreamID`, no debug data.
    package static func goAwayFrame(lastStreamID: UInt32) -> [UInt8] {
        let id = lastStreamID & 0x7FFF_FFFF
        return [0, 0, 8, 0x7, 0, 0, 0, 0, 0]
            + [UInt8(id >> 24), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF)] + [0, 0, 0, 0xB]
    }
}

/// Meters an HTTPS connection's HTTP/2 frames (``HTTP2FrameMeter``) between TLS and the HTTP/2
/// handler; steps aside when ALPN chose anything but HTTP/2.
///
/// Invariant (why `@unchecked Sendable`): used only on its channel's event loop, as every
/// channel handler is.
final class HTTP2FrameBudget: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let configuration: HTTP2FrameMeter.Configuration
    private var meter: HTTP2FrameMeter?
    private var closing = false

    init(configuration: HTTP2FrameMeter.Configuration = .init()) { self.configuration = configuration }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
            guard negotiated == "h2" else {
                context.fireUserInboundEventTriggered(event)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                return
            }
            meter = HTTP2FrameMeter(configuration: configuration, now: .now())
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        if meter != nil, case .goAway(let last) = meter!.read(unwrapInboundIn(data).readableBytesView, now: .now()) {
            // Written below the HTTP/2 handler, between its (whole) frames; then the connection ends.
            closing = true
            var frame = context.channel.allocator.buffer(capacity: 17)
            frame.writeBytes(HTTP2FrameMeter.goAwayFrame(lastStreamID: last))
            context.writeAndFlush(NIOAny(frame), promise: nil)
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }
}
