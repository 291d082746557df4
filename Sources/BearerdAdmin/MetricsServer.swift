import BearerdProxy
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// `metrics.listen`: `/metrics` (Prometheus), `/health` and `/ready` on a loopback TCP address,
/// for a scraper that cannot use the admin socket. Nothing else is served there: no token, no
/// login, no status.
public struct MetricsServer: Service {
    private let host: String
    private let port: Int
    private let api: AdminAPI
    private let group: any EventLoopGroup
    private let logger: Logger

    public init(host: String, port: Int, api: AdminAPI, group: any EventLoopGroup, logger: Logger) {
        self.host = host
        self.port = port
        self.api = api
        self.group = group
        self.logger = logger
    }

    public func run() async throws {
        let server: NIOAsyncChannel<AdminHTTP.Connection?, Never>
        do {
            server = try await ServerBootstrap(group: self.group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: self.host, port: self.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        return try AdminHTTP.Connection(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ProxySetupError("metrics.listen: cannot listen on \(self.host):\(self.port): \(error)")
        }
        self.logger.notice(
            "metrics listening",
            metadata: ["address": "\(server.channel.localAddress?.bearerdDescription ?? "\(self.host):\(self.port)")"]
        )
        await AdminHTTP(api: self.api, exposure: .observability).serve(server)
    }
}
