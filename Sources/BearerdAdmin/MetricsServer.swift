import BearerdLogging
import BearerdSockets
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// `metrics.listen`: `/metrics` (Prometheus), `/health` and `/ready` on a loopback TCP address,
/// for a scraper that cannot use the admin socket. Nothing else is served there: no token, no
/// login, no status.
package struct MetricsServer: Service {
    private let host: String
    private let port: Int
    private let api: AdminAPI
    private let group: any EventLoopGroup
    private let logger: Logger

    package init(host: String, port: Int, api: AdminAPI, group: any EventLoopGroup, logger: Logger) {
        self.host = host
        self.port = port
        self.api = api
        self.group = group
        self.logger = logger
    }

    /// Open connections at most. Past it, an idle connection of the local user holding the most
    /// goes, never one whose request is being answered (``MetricsConnections``): a user flooding
    /// the listener closes its own connections, not the scraper's.
    static let maxConnections = 16
    /// A connection with no bytes coming for this long is closed…
    static let idleTimeout = TimeAmount.seconds(10)
    /// …and every connection after this long, so that a drip-feeding client cannot keep one.
    static let lifetime = TimeAmount.seconds(60)

    package func run() async throws {
        let server: AdminHTTP.Accepted
        let table = NIOLockedValueBox(MetricsConnections(limit: Self.maxConnections))
        let open = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])
        // Any local process can open connections at any rate: refusals are logged once, then summarised.
        let failures = ThrottledLogger(logger: self.logger, eventLoop: self.group.next())
        defer { failures.flush() }
        do {
            server = try await ServerBootstrap(group: self.group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: self.host, port: self.port) { channel in
                    // Who opened it: the owner of the client's socket, one netlink request.
                    Caller.ofTCP(channel).flatMapThrowing { caller in
                        let id = ObjectIdentifier(channel)
                        let evicted = table.withLockedValue { table -> (any Channel)? in
                            open.withLockedValue { $0[id] = channel }
                            guard let victim = table.accepted(id, uid: caller?.uid) else { return nil }
                            table.closed(victim)
                            return open.withLockedValue { $0.removeValue(forKey: victim) }
                        }
                        if let evicted {
                            failures.warning(
                                kind: "metrics_connection_limit",
                                "metrics.listen: connection limit reached; closed an idle connection of the user holding the most",
                                metadata: ["limit": "\(Self.maxConnections)"],
                                now: channel.eventLoop.now
                            )
                            evicted.close(promise: nil)
                        }
                        channel.closeFuture.whenComplete { _ in
                            table.withLockedValue { $0.closed(id) }
                            open.withLockedValue { _ = $0.removeValue(forKey: id) }
                        }
                        let lifetime = channel.eventLoop.scheduleTask(in: Self.lifetime) { channel.close(promise: nil) }
                        channel.closeFuture.whenComplete { _ in lifetime.cancel() }
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout))
                        try sync.addHandler(CloseOnIdle())
                        let prepared = try AdminHTTP.prepare(channel)
                        try sync.addHandler(MetricsRequestMark(table: table, id: id))
                        return prepared
                    }
                }
        } catch {
            throw SocketSetupError.bind(
                error,
                key: "metrics.listen",
                address: self.host.contains(":") ? "[\(self.host)]:\(self.port)" : "\(self.host):\(self.port)"
            )
        }
        self.logger.notice(
            "metrics listening",
            metadata: ["address": "\(server.channel.localAddress?.bearerdDescription ?? "\(self.host):\(self.port)")"]
        )
        await AdminHTTP(api: self.api, exposure: .observability, hostGuard: HostGuard(allowedHosts: []))
            .serve(server)
    }
}

/// Closes a connection when ``IdleStateHandler`` says no bytes came in time.
final class CloseOnIdle: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}

extension MetricsServer: CustomStringConvertible {
    /// What service-lifecycle logs.
    package var description: String { "MetricsServer(\(self.host):\(self.port))" }
}
