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

    /// Open connections at most. A new one past it closes the oldest, so that one local user
    /// holding every slot cannot keep the scraper out: it would have to open connections faster
    /// than a scrape takes (a request and its answer, about a millisecond).
    static let maxConnections = 16
    /// A connection with no bytes coming for this long is closed…
    static let idleTimeout = TimeAmount.seconds(10)
    /// …and every connection after this long, so that a drip-feeding client cannot keep one.
    static let lifetime = TimeAmount.seconds(60)

    package func run() async throws {
        let server: AdminHTTP.Accepted
        let open = NIOLockedValueBox<[(id: ObjectIdentifier, channel: any Channel)]>([])
        // Any local process can open connections at any rate: refusals are logged once, then summarised.
        let failures = ThrottledLogger(logger: self.logger, eventLoop: self.group.next())
        defer { failures.flush() }
        do {
            server = try await ServerBootstrap(group: self.group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: self.host, port: self.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let id = ObjectIdentifier(channel)
                        let evicted = open.withLockedValue { open -> (any Channel)? in
                            open.append((id, channel))
                            return open.count > Self.maxConnections ? open.removeFirst().channel : nil
                        }
                        if let evicted {
                            failures.warning(
                                kind: "metrics_connection_limit",
                                "metrics.listen: connection limit reached; closed the oldest connection",
                                metadata: ["limit": "\(Self.maxConnections)"],
                                now: channel.eventLoop.now
                            )
                            evicted.close(promise: nil)
                        }
                        channel.closeFuture.whenComplete { _ in
                            open.withLockedValue { open in open.removeAll { $0.id == id } }
                        }
                        let lifetime = channel.eventLoop.scheduleTask(in: Self.lifetime) { channel.close(promise: nil) }
                        channel.closeFuture.whenComplete { _ in lifetime.cancel() }
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout))
                        try sync.addHandler(CloseOnIdle())
                        return try AdminHTTP.prepare(channel)
                    }
                }
        } catch {
            throw SocketSetupError("metrics.listen: cannot listen on \(self.host):\(self.port): \(error)")
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
private final class CloseOnIdle: ChannelInboundHandler {
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
