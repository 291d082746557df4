import NIOCore
import NIOPosix
import NIOSSL

/// Opens a new connection to the upstream for a pool, on the pool's event loop. bearerd's is
/// ``TCPUpstreamConnector``; the tests that run whole exchanges on a manual clock give the pool
/// one that makes `EmbeddedChannel`s on the same `EmbeddedEventLoop`.
protocol UpstreamConnector: Sendable {
    func connect(for pool: UpstreamConnectionPool) -> EventLoopFuture<UpstreamConnection>
}

/// TCP to `upstream.url`'s host and port, with TLS for https (its context taken up afresh when
/// the client certificate files changed), and ``UpstreamConnection`` as the only handler.
struct TCPUpstreamConnector: UpstreamConnector {
    let settings: ProxySettings

    func connect(for pool: UpstreamConnectionPool) -> EventLoopFuture<UpstreamConnection> {
        let settings = self.settings
        let target = settings.upstream.target
        let sniName: String? = settings.upstream.serverName ?? (target.hostIsIPAddress ? nil : target.host)
        let tlsContext = settings.tls?.context(now: pool.eventLoop.now)
        let bootstrap = ClientBootstrap(group: pool.eventLoop)
            .connectTimeout(TimeAmount(settings.upstream.connectTimeout))
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    if let tls = tlsContext {
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: sniName))
                    }
                    // No HTTP codec handlers: HeaderRewriter writes each request head as bytes (every
                    // header in it was parsed by RequestParser from the client's request or is our own; the
                    // token is checked to be RFC 6750 b64token), and UpstreamConnection parses responses.
                    try sync.addHandler(UpstreamConnection())
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        // An address needs no resolver: NIO's getaddrinfo queries run on their own threads and may
        // still answer (its AAAA query, after the A one connected) once the loops have stopped.
        let connected =
            if let address = try? SocketAddress(ipAddress: target.host, port: target.port) {
                bootstrap.connect(to: address)
            } else {
                bootstrap.connect(host: target.host, port: target.port)
            }
        return connected.flatMapThrowing { [weak pool] channel in
            let connection = try channel.pipeline.syncOperations.handler(type: UpstreamConnection.self)
            connection.pool = pool
            return connection
        }
    }
}
