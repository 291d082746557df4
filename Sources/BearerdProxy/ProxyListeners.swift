import BearerdAuth
import BearerdConfig
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix

/// The bound listening sockets of a running proxy, and their graceful shutdown.
public final class ProxyListeners: Sendable {
    /// The addresses actually bound (a port 0 in the config shows its real port here).
    public let addresses: [SocketAddress]
    private let channels: [any Channel]
    /// One per listener (a helper tracks a single server channel). Released at the end of
    /// ``shutdown(grace:)``, while the event loops still run: a helper's deinit completes a promise
    /// on its loop.
    private let quiescers: NIOLockedValueBox<[ServerQuiescingHelper]>
    private let pools: [UpstreamConnectionPool]
    private let unixPaths: [String]
    private let group: any EventLoopGroup
    private let logger: Logger

    private init(
        addresses: [SocketAddress],
        channels: [any Channel],
        quiescers: [ServerQuiescingHelper],
        pools: [UpstreamConnectionPool],
        unixPaths: [String],
        group: any EventLoopGroup,
        logger: Logger
    ) {
        self.addresses = addresses
        self.channels = channels
        self.quiescers = NIOLockedValueBox(quiescers)
        self.pools = pools
        self.unixPaths = unixPaths
        self.group = group
        self.logger = logger
    }

    /// Binds every address in `listen` — or, under socket activation, serves the listening
    /// sockets systemd `passed` instead — and starts serving.
    /// - Throws: ``ProxySetupError`` or the bind error; whatever was bound is closed again.
    public static func bind(
        listen: [ListenAddress],
        passed: [Int32] = [],
        socketMode: UInt32,
        socketGroup: UInt32?,
        settings: ProxySettings,
        tokens: any TokenProvider,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws -> ProxyListeners {
        var poolsByLoop: [ObjectIdentifier: UpstreamConnectionPool] = [:]
        for loop in group.makeIterator() {
            poolsByLoop[ObjectIdentifier(loop)] = UpstreamConnectionPool(eventLoop: loop, settings: settings)
        }
        let pools = poolsByLoop
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = settings.maxHeaderSize
        limits.maxHeaderListSize = settings.maxHeaderSize
        let decoderLimits = limits

        func bootstrap(tcp: Bool, quiesce: ServerQuiescingHelper) -> ServerBootstrap {
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
                        // Requests are parsed by NIO's llhttp decoder; responses go out as bytes that
                        // HeaderRewriter, WireFormat and ProxyFailure write (no response encoder).
                        try sync.addHandler(
                            ByteToMessageHandler(
                                HTTPRequestDecoder(
                                    leftOverBytesStrategy: .dropBytes,
                                    informationalResponseStrategy: .drop,
                                    limitConfiguration: decoderLimits
                                )
                            )
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
        var quiescers: [ServerQuiescingHelper] = []
        var unixPaths: [String] = []
        var addresses: [SocketAddress] = []
        do {
            for descriptor in passed {
                let quiesce = ServerQuiescingHelper(group: group)
                quiescers.append(quiesce)
                let tcp = Self.isInternet(descriptor)
                let channel = try await bootstrap(tcp: tcp, quiesce: quiesce).withBoundSocket(descriptor).get()
                channels.append(channel)
                addresses.append(channel.localAddress!)
            }
            for address in passed.isEmpty ? listen : [] {
                switch address {
                case .tcp(let host, let port):
                    let quiesce = ServerQuiescingHelper(group: group)
                    quiescers.append(quiesce)
                    let channel = try await bootstrap(tcp: true, quiesce: quiesce).bind(host: host, port: port).get()
                    channels.append(channel)
                    addresses.append(channel.localAddress!)
                case .unix(let path):
                    try UnixSocketFile.checkReplaceable(path)
                    let temporary = UnixSocketFile.temporaryPath(for: path)
                    let quiesce = ServerQuiescingHelper(group: group)
                    quiescers.append(quiesce)
                    let channel = try await bootstrap(tcp: false, quiesce: quiesce)
                        .bind(unixDomainSocketPath: temporary, cleanupExistingSocketFile: true).get()
                    channels.append(channel)
                    try UnixSocketFile.publish(temporary: temporary, final: path, mode: socketMode, group: socketGroup)
                    unixPaths.append(path)
                    addresses.append(try SocketAddress(unixDomainSocketPath: path))
                }
            }
        } catch {
            for channel in channels { try? await channel.close() }
            for path in unixPaths { UnixSocketFile.remove(path) }
            throw error
        }
        return ProxyListeners(
            addresses: addresses,
            channels: channels,
            quiescers: quiescers,
            pools: Array(pools.values),
            unixPaths: unixPaths,
            group: group,
            logger: logger
        )
    }

    /// Whether a passed socket is TCP (rather than a unix socket).
    private static func isInternet(_ descriptor: Int32) -> Bool {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) == 0 }
        }
        return ok && (Int32(address.ss_family) == AF_INET || Int32(address.ss_family) == AF_INET6)
    }

    /// Stops accepting, lets in-flight requests finish for up to `grace`, then returns; the
    /// connections still open are closed when the event loop group shuts down.
    /// - Returns: whether every connection finished within `grace`.
    @discardableResult
    public func shutdown(grace: Duration) async -> Bool {
        for path in self.unixPaths { UnixSocketFile.remove(path) }
        for pool in self.pools { pool.eventLoop.execute { pool.close() } }
        let loop = self.group.next()
        let quiescers = self.quiescers.withLockedValue { $0 }
        let each = quiescers.map { quiesce in
            let promise = loop.makePromise(of: Void.self)
            quiesce.initiateShutdown(promise: promise)
            return promise.futureResult
        }
        let drained = EventLoopFuture.andAllComplete(each, on: loop)
        let outcome = loop.makePromise(of: Bool.self)
        let timer = loop.scheduleTask(in: TimeAmount(grace)) { outcome.succeed(false) }
        drained.whenComplete { _ in
            timer.cancel()
            outcome.succeed(true)
        }
        let finished = (try? await outcome.futureResult.get()) ?? false
        self.quiescers.withLockedValue { $0.removeAll() }
        if !finished {
            self.logger.warning(
                "requests still in flight after shutdown_grace; closing their connections",
                metadata: ["shutdown_grace": "\(grace)"]
            )
        }
        return finished
    }
}
