import BearerdAuth
import BearerdConfig
import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix

/// The bound listening sockets of a running proxy, and their graceful shutdown.
public final class ProxyListeners: Sendable {
    /// The addresses actually bound (a port 0 in the config shows its real port here).
    public let addresses: [SocketAddress]
    private let channels: [any Channel]
    private let quiesce: ServerQuiescingHelper
    private let pools: [UpstreamConnectionPool]
    private let unixPaths: [String]
    private let group: any EventLoopGroup
    private let logger: Logger

    private init(
        addresses: [SocketAddress],
        channels: [any Channel],
        quiesce: ServerQuiescingHelper,
        pools: [UpstreamConnectionPool],
        unixPaths: [String],
        group: any EventLoopGroup,
        logger: Logger
    ) {
        self.addresses = addresses
        self.channels = channels
        self.quiesce = quiesce
        self.pools = pools
        self.unixPaths = unixPaths
        self.group = group
        self.logger = logger
    }

    /// Binds every address in `listen` and starts serving.
    /// - Throws: ``ProxySetupError`` or the bind error; whatever was bound is closed again.
    public static func bind(
        listen: [ListenAddress],
        socketMode: UInt32,
        socketGroup: UInt32?,
        settings: ProxySettings,
        tokens: any TokenProvider,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws -> ProxyListeners {
        let quiesce = ServerQuiescingHelper(group: group)
        var poolsByLoop: [ObjectIdentifier: UpstreamConnectionPool] = [:]
        for loop in group.makeIterator() {
            poolsByLoop[ObjectIdentifier(loop)] = UpstreamConnectionPool(eventLoop: loop, settings: settings)
        }
        let pools = poolsByLoop
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = settings.maxHeaderSize
        limits.maxHeaderListSize = settings.maxHeaderSize
        let decoderLimits = limits
        // HeaderRewriter and ProxyFailure set the framing headers of every response themselves.
        var encoder = HTTPResponseEncoder.Configuration()
        encoder.automaticallySetFramingHeaders = false
        let encoderConfiguration = encoder

        func bootstrap(tcp: Bool) -> ServerBootstrap {
            var bootstrap = ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 1024)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            quiesce.makeServerChannelHandler(channel: channel)
                        )
                    }
                }
                .childChannelOption(.maxMessagesPerRead, value: 8)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        guard let pool = pools[ObjectIdentifier(channel.eventLoop)] else {
                            throw ProxySetupError("no upstream pool for this event loop")
                        }
                        let sync = channel.pipeline.syncOperations
                        try sync.configureHTTPServerPipeline(
                            withPipeliningAssistance: false,
                            withServerUpgrade: nil,
                            withErrorHandling: false,
                            withOutboundHeaderValidation: false,
                            withEncoderConfiguration: encoderConfiguration,
                            withDecoderLimitConfiguration: decoderLimits
                        )
                        try sync.addHandler(
                            ProxyHandler(settings: settings, pool: pool, tokens: tokens, logger: logger)
                        )
                    }
                }
            if tcp {
                bootstrap = bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            }
            return bootstrap
        }

        var channels: [any Channel] = []
        var unixPaths: [String] = []
        do {
            for address in listen {
                switch address {
                case .tcp(let host, let port):
                    channels.append(try await bootstrap(tcp: true).bind(host: host, port: port).get())
                case .unix(let path):
                    try UnixSocketFile.checkReplaceable(path)
                    let temporary = UnixSocketFile.temporaryPath(for: path)
                    let channel = try await bootstrap(tcp: false)
                        .bind(unixDomainSocketPath: temporary, cleanupExistingSocketFile: true).get()
                    channels.append(channel)
                    try UnixSocketFile.publish(temporary: temporary, final: path, mode: socketMode, group: socketGroup)
                    unixPaths.append(path)
                }
            }
        } catch {
            for channel in channels { try? await channel.close() }
            for path in unixPaths { UnixSocketFile.remove(path) }
            throw error
        }
        let addresses = zip(listen, channels).map { address, channel -> SocketAddress in
            if case .unix(let path) = address, let socket = try? SocketAddress(unixDomainSocketPath: path) {
                return socket
            }
            return channel.localAddress!
        }
        return ProxyListeners(
            addresses: addresses,
            channels: channels,
            quiesce: quiesce,
            pools: Array(pools.values),
            unixPaths: unixPaths,
            group: group,
            logger: logger
        )
    }

    /// Stops accepting, lets in-flight requests finish for up to `grace`, then returns; the
    /// connections still open are closed when the event loop group shuts down.
    /// - Returns: whether every connection finished within `grace`.
    @discardableResult
    public func shutdown(grace: Duration) async -> Bool {
        for path in self.unixPaths { UnixSocketFile.remove(path) }
        for pool in self.pools { pool.eventLoop.execute { pool.close() } }
        let loop = self.group.next()
        let drained = loop.makePromise(of: Void.self)
        self.quiesce.initiateShutdown(promise: drained)
        let outcome = loop.makePromise(of: Bool.self)
        let timer = loop.scheduleTask(in: TimeAmount(grace)) { outcome.succeed(false) }
        drained.futureResult.hop(to: loop).whenComplete { _ in
            timer.cancel()
            outcome.succeed(true)
        }
        let finished = (try? await outcome.futureResult.get()) ?? false
        if !finished {
            self.logger.warning(
                "requests still in flight after shutdown_grace; closing their connections",
                metadata: ["shutdown_grace": "\(grace)"]
            )
        }
        return finished
    }
}
