import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import PNSSandbox
import Testing

/// Watches an HTTP/2 client connection: completes `ready` on the server's SETTINGS and `goAway`
/// with the debug data of the first GOAWAY.
final class ConnectionFrameWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTP2Frame

    let ready: EventLoopPromise<Void>
    let goAway: EventLoopPromise<String>

    init(ready: EventLoopPromise<Void>, goAway: EventLoopPromise<String>) {
        self.ready = ready
        self.goAway = goAway
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data).payload {
        case .settings(.settings):
            ready.succeed(())
        case .goAway(_, _, let opaqueData):
            goAway.succeed(opaqueData.map { String(buffer: $0) } ?? "")
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        ready.fail(ChannelError.alreadyClosed)
        goAway.fail(ChannelError.alreadyClosed)
        context.fireChannelInactive()
    }
}

@Suite struct GoAwayTests {
    @Test func shutdownSaysGoAwayWithAJSONReasonOnOpenAPNsConnections() async throws {
        let fixture = try await SandboxFixture.start()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(fixture.files["ca"]!)
        tls.certificateVerification = .noHostnameVerification
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let loop = group.next()
        let ready = loop.makePromise(of: Void.self)
        let goAway = loop.makePromise(of: String.self)
        let port = try #require(URL(string: fixture.sandbox.endpoints.apns)?.port)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
                    try channel.pipeline.syncOperations.addHandler(ConnectionFrameWatcher(ready: ready, goAway: goAway))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        try await ready.futureResult.get()

        try await fixture.sandbox.shutdown()
        #expect(try await goAway.futureResult.get() == #"{"reason":"Shutdown"}"#)
        try? await channel.closeFuture.get()
        try await group.shutdownGracefully()
        try? FileManager.default.removeItem(atPath: fixture.directory)
    }
}
