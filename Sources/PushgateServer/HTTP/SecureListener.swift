import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import NIOTLS
import Pushgate
import PushgateConfig
import PushgateGateway

/// HTTPS for the listener (`listener.tls`): the certificate chain and key read as secrets, TLS 1.2
/// or later, HTTP/2 or HTTP/1.1 by ALPN. Notification Hubs clients derive `https://host:port/`
/// from a connection string's `sb://host:port/`, so the hub API needs it.
///
/// The slow-client limits hold on it as on plain HTTP: a TLS handshake not done within the
/// header timeout closes the connection; then ``ConnectionGuard`` watches each HTTP/1.1
/// connection, or each HTTP/2 stream (counted against the same connection limit), and an HTTP/2
/// connection with no open stream for the idle timeout is closed. ``HTTP2FrameBudget`` answers a
/// flood of frames that carry no request with `GOAWAY`.
enum SecureListener {
    /// The server's TLS configuration from `tls`; errors name the field.
    static func tlsConfiguration(_ tls: ListenerTLS, secrets: SecretResolver) throws -> TLSConfiguration {
        let chainPEM: String
        let keyPEM: String
        do { chainPEM = try secrets.resolve(tls.certificateChain) } catch {
            throw GatewayError(.misconfigured, "listener.tls.certificateChain: \(error)")
        }
        do { keyPEM = try secrets.resolve(tls.privateKey) } catch {
            throw GatewayError(.misconfigured, "listener.tls.privateKey: \(error)")
        }
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMBytes(Array(chainPEM.utf8)) } catch {
            throw GatewayError(.misconfigured, "listener.tls.certificateChain: not a PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else { throw GatewayError(.misconfigured, "listener.tls.certificateChain: no certificate in the PEM text") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem) } catch {
            throw GatewayError(.misconfigured, "listener.tls.privateKey: not a PEM private key (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        // Fails here, at start, when the key does not match the certificate.
        do { _ = try NIOSSLContext(configuration: configuration) } catch {
            throw GatewayError(
                .misconfigured, "listener.tls: the private key does not fit the certificate chain, or either is unusable (\(error))")
        }
        return configuration
    }

    /// The HTTPS server: ALPN picks HTTP/2 or HTTP/1.1; every connection must finish its TLS
    /// handshake within `limits.headerTimeout`.
    static func server(
        tls: TLSConfiguration, registry: ConnectionRegistry, idleTimeout: TimeAmount
    ) -> HTTPServerBuilder {
        let limits = registry.limits
        let configuration = HTTP2UpgradeChannel.Configuration(
            idleTimeout: .nanoseconds(idleTimeout.nanoseconds), gracefulCloseTimeout: .seconds(5),
            streamConfiguration: .init(
                additionalChannelHandlers: [ConnectionGuard(registry: registry), UnsupportedMethodHandler()], idleTimeout: idleTimeout))
        return HTTPServerBuilder { responder in
            HandshakeLimitedChannel(
                base: try HTTP2UpgradeChannel(tlsConfiguration: tls, configuration: configuration, responder: responder),
                handshakeTimeout: limits.headerTimeout)
        }
    }
}

/// ``HTTP2UpgradeChannel`` with a deadline on the TLS handshake (a client that connects and says
/// nothing, or stalls mid-handshake, is closed).
struct HandshakeLimitedChannel: HTTPChannelHandler {
    typealias Value = HTTP2UpgradeChannel.Value
    let base: HTTP2UpgradeChannel
    let handshakeTimeout: TimeAmount

    var responder: Responder { base.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let value = base.setup(channel: channel, logger: logger)
        do {
            // The TLS handler is in place now; the deadline watches the events it raises.
            let tls = try channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
            try channel.pipeline.syncOperations.addHandler(HandshakeDeadline(timeout: handshakeTimeout), position: .after(tls))
            try channel.pipeline.syncOperations.addHandler(HTTP2FrameBudget(), position: .after(tls))
        } catch {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
        return value
    }

    func handle(value: Value, logger: Logger) async { await base.handle(value: value, logger: logger) }
}

/// Closes the connection unless the TLS handshake completes within `timeout`, then steps aside.
package final class HandshakeDeadline: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    package typealias InboundIn = NIOAny
    let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    package init(timeout: TimeAmount) { self.timeout = timeout }

    package func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            deadline?.cancel()
            deadline = nil
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }
}
