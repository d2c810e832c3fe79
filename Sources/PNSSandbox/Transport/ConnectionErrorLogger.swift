import Logging
import NIOCore

/// Logs errors that reach the end of a connection's pipeline (for HTTP/2, the error behind a
/// GOAWAY the sandbox sends), then passes them on.
final class ConnectionErrorLogger: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any

    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("connection error", metadata: ["error": "\(error)", "remote": "\(context.remoteAddress?.description ?? "?")"])
        context.fireErrorCaught(error)
    }
}
