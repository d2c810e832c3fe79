import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Pushgate
import Synchronization

/// One listening socket of the sandbox: TLS (or plain, for the control API), then HTTP/2 and/or
/// HTTP/1.1 chosen by ALPN, then every request handed to a ``SandboxHTTPResponder``.
final class SandboxListener: Sendable {
    enum Protocols: Sendable {
        /// HTTP/2 only (ALPN `h2`; anything else is closed) — APNs.
        case http2Only
        /// HTTP/2 or HTTP/1.1 by ALPN — FCM.
        case http2AndHTTP1
        /// HTTP/1.1 only — WNS and the control API.
        case http1Only
    }

    struct Settings: Sendable {
        var protocols: Protocols
        var tls: NIOSSLContext?
        /// `SETTINGS_MAX_CONCURRENT_STREAMS` advertised on HTTP/2 connections.
        var maximumConcurrentStreams: Int = 1000
        /// Largest request body kept, in bytes; the services answer larger ones as oversize.
        var maximumBodyBytes: Int = 1 << 20
        /// Ask for a client certificate in the TLS handshake (APNs certificate authentication).
        /// Any certificate is accepted there; the service judges it (`BadCertificate`).
        var requestClientCertificates = false
    }

    let channel: any Channel
    let port: Int
    private let connections: ConnectionRegistry

    private init(channel: any Channel, connections: ConnectionRegistry) {
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
        self.connections = connections
    }

    static func bind(
        host: String, port: Int, settings: Settings, responder: any SandboxHTTPResponder, group: any EventLoopGroup, logger: Logger
    ) async throws -> SandboxListener {
        let connections = ConnectionRegistry()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                connections.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, settings: settings, responder: responder, connections: connections, logger: logger)
                }
            }
            .bind(host: host, port: port)
            .get()
        return SandboxListener(channel: channel, connections: connections)
    }

    private static func configure(
        _ channel: any Channel, settings: Settings, responder: any SandboxHTTPResponder, connections: ConnectionRegistry, logger: Logger
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        guard let tls = settings.tls else {
            try configureHTTP1(channel, settings: settings, responder: responder)
            return
        }
        if settings.requestClientCertificates {
            // The handshake takes whatever certificate is offered (or none); APNs answers a bad
            // one per request with 403 BadCertificate rather than failing the handshake.
            try pipeline.addHandler(
                NIOSSLServerHandler(context: tls, customVerificationCallback: { _, promise in promise.succeed(.certificateVerified) }))
        } else {
            try pipeline.addHandler(NIOSSLServerHandler(context: tls))
        }
        try pipeline.addHandler(
            ApplicationProtocolNegotiationHandler { result, channel in
                switch (result, settings.protocols) {
                // APNs: a client offering no ALPN at all (aioapns' default context, Pushy) gets
                // HTTP/2 with prior knowledge, as Apple serves it.
                case (.negotiated("h2"), .http2Only), (.negotiated("h2"), .http2AndHTTP1), (.fallback, .http2Only):
                    connections.markHTTP2(channel)
                    return channel.eventLoop.makeCompletedFuture {
                        let certificate =
                            settings.requestClientCertificates
                            ? try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self).peerCertificate?.toDERBytes()
                            : nil
                        try configureHTTP2(channel, settings: settings, responder: responder, clientCertificate: certificate ?? nil)
                        try channel.pipeline.syncOperations.addHandler(ConnectionErrorLogger(logger: logger))
                    }
                case (.negotiated("http/1.1"), .http2AndHTTP1), (.fallback, .http2AndHTTP1), (.negotiated("http/1.1"), .http1Only),
                    (.fallback, .http1Only):
                    return channel.eventLoop.makeCompletedFuture {
                        try configureHTTP1(channel, settings: settings, responder: responder)
                    }
                default:
                    logger.debug("closing connection: ALPN \(result) is not acceptable here")
                    return channel.close()
                }
            })
    }

    private static func configureHTTP1(_ channel: any Channel, settings: Settings, responder: any SandboxHTTPResponder) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
        try pipeline.addHandler(RequestHandler(responder: responder, version: .http1, maximumBodyBytes: settings.maximumBodyBytes))
    }

    /// Numbers the HTTP/2 connections, so that services can tell them apart (APNs scopes its
    /// provider-token refresh rule to a connection).
    private static let connectionCounter = Atomic<UInt64>(0)

    private static func configureHTTP2(
        _ channel: any Channel, settings: Settings, responder: any SandboxHTTPResponder, clientCertificate: [UInt8]?
    ) throws {
        let connection = connectionCounter.add(1, ordering: .relaxed).newValue
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: settings.maximumConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16384),
            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
        ]
        connectionConfiguration.targetWindowSize = 16 << 20
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        streamConfiguration.targetWindowSize = 1 << 20
        // libcurl 7.88 (Debian 12) sends RST_STREAM(STREAM_CLOSED) after every completed stream,
        // although the stream is already closed on both sides. swift-nio-http2's rapid-reset
        // protection (CVE-2023-44487) allows 200 resets per 30 s and then answers
        // GOAWAY(ENHANCE_YOUR_CALM), which fails every transfer in flight with curl error 16 ("Error
        // in the HTTP2 framing layer") — the failure a spike saw. A reset of a closed stream costs a
        // server nothing (RFC 9113 §5.1), so the sandbox tolerates one per stream; the other DoS
        // limits keep their defaults. Pushgate itself builds against libcurl 8 (bookworm-backports),
        // which sends no such resets; the tolerance keeps the sandbox usable from older clients.
        streamConfiguration.streamResetFrameRateLimit.maximumCount = 1_000_000
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server,
            connectionConfiguration: connectionConfiguration,
            streamConfiguration: streamConfiguration
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(
                    HTTP2StreamHandler(
                        responder: responder, maximumBodyBytes: settings.maximumBodyBytes, connection: connection,
                        clientCertificate: clientCertificate))
            }
        }
    }

    /// Sends GOAWAY with `reason` (JSON debug data, as APNs does) on every HTTP/2 connection, closes
    /// every connection, then closes the listening socket.
    func shutdown(goAwayReason: String?) async {
        await connections.closeAll(goAwayReason: goAwayReason)
        try? await channel.close()
    }
}

/// The open connections of a listener, so that shutdown can say GOAWAY and close them.
final class ConnectionRegistry: Sendable {
    private struct Entry {
        var channel: any Channel
        var isHTTP2: Bool
    }

    private let entries = NIOLockedValueBox<[ObjectIdentifier: Entry]>([:])

    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        entries.withLockedValue { $0[id] = Entry(channel: channel, isHTTP2: false) }
        channel.closeFuture.whenComplete { _ in
            self.entries.withLockedValue { _ = $0.removeValue(forKey: id) }
        }
    }

    func markHTTP2(_ channel: any Channel) {
        entries.withLockedValue { $0[ObjectIdentifier(channel)]?.isHTTP2 = true }
    }

    func closeAll(goAwayReason: String?) async {
        let all = entries.withLockedValue { Array($0.values) }
        for entry in all {
            if entry.isHTTP2, let reason = goAwayReason {
                try? await GoAway.send(on: entry.channel, reason: reason, lastStreamID: .maxID)
            }
            try? await entry.channel.close()
        }
    }
}

enum GoAway {
    /// Writes a GOAWAY frame whose debug data is `reason` on an HTTP/2 connection channel.
    static func send(
        on connection: any Channel, reason: String, lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode = .noError
    )
        async throws
    {
        var buffer = connection.allocator.buffer(capacity: reason.utf8.count)
        buffer.writeString(reason)
        let frame = HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: errorCode, opaqueData: buffer))
        try await connection.writeAndFlush(frame)
    }
}
