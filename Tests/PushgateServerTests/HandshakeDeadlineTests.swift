import NIOCore
import NIOEmbedded
import NIOTLS
import PushgateServer
import Testing

/// The TLS handshake deadline under a clock the test moves: a connection that never finishes its
/// handshake is closed at the deadline, not before; one that finishes keeps going, and the
/// handler steps out of the pipeline.
@Suite struct HandshakeDeadlineTests {
    private func channel(timeout: TimeAmount) throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(HandshakeDeadline(timeout: timeout))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return (channel, loop)
    }

    @Test func aSilentConnectionIsClosedAtTheDeadlineAndNotBefore() throws {
        let (channel, loop) = try channel(timeout: .seconds(2))
        loop.advanceTime(by: .milliseconds(1_999))
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func aFinishedHandshakeKeepsTheConnectionAndTheHandlerStepsAside() throws {
        let (channel, loop) = try channel(timeout: .seconds(2))
        loop.advanceTime(by: .seconds(1))
        channel.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: "h2"))
        loop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: HandshakeDeadline.self) }
        _ = try channel.finish()
    }

    @Test func otherEventsDoNotStopTheDeadline() throws {
        let (channel, loop) = try channel(timeout: .seconds(2))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        loop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }
}
