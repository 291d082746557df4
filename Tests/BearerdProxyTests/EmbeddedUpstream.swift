import BearerdLogging
import BearerdTestSupport
import Logging
import NIOCore
import NIOEmbedded

@testable import BearerdProxy

/// Upstream connections that are `EmbeddedChannel`s on the client's `EmbeddedEventLoop`, so a
/// whole exchange (client, handler, pool, upstream) runs on one manual clock: a test writes the
/// upstream's answer by hand and moves time to the millisecond.
final class EmbeddedUpstream: UpstreamConnector, @unchecked Sendable {
    /// Every connection the pool opened, in order (touched on the loop's thread only).
    private(set) var channels: [EmbeddedChannel] = []
    let loop: EmbeddedEventLoop

    init(loop: EmbeddedEventLoop) {
        self.loop = loop
    }

    func connect(for pool: UpstreamConnectionPool) -> EventLoopFuture<UpstreamConnection> {
        let connection = UpstreamConnection()
        let channel = EmbeddedChannel(handler: connection, loop: self.loop)
        connection.pool = pool
        self.channels.append(channel)
        do {
            try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        } catch {
            return self.loop.makeFailedFuture(error)
        }
        return self.loop.assumeIsolated().makeSucceededFuture(connection)
    }

    /// What the latest connection was sent, as text.
    func sent() throws -> String {
        guard let channel = self.channels.last else { return "" }
        return try ProxyDeadlineTests.answer(channel)
    }

    /// The upstream answers `bytes` on the latest connection.
    func answer(_ bytes: String) throws {
        try self.channels.last?.writeInbound(ByteBuffer(string: bytes))
        self.loop.run()
    }
}

/// A client connection on an `EmbeddedChannel` whose handler forwards to ``EmbeddedUpstream``.
struct EmbeddedProxy {
    let client: EmbeddedChannel
    let upstream: EmbeddedUpstream

    /// A unix-socket client (no shared key, no Host check) of a handler on `yaml`; its access
    /// lines go to `accessLines` when given, and its logger logs at `logLevel`.
    /// `upstreamYAML`: more lines of the `upstream` section.
    init(
        _ yaml: String,
        upstreamYAML: String = "",
        accessLines: AccessLog? = nil,
        logLevel: Logger.Level = .info
    ) throws {
        let client = EmbeddedChannel()
        let upstream = EmbeddedUpstream(loop: client.embeddedEventLoop)
        var settings = try HeaderRewriterTests.settings(yaml, url: "http://127.0.0.1:9", upstream: upstreamYAML)
        settings.accessLines = accessLines
        var logger = Logger(label: "test")
        logger.logLevel = logLevel
        let handler = ProxyHandler(
            settings: ProxySettings.Shared(settings),
            retryBudget: SharedBudget(limit: 1 << 20),
            viaTCP: false,
            pool: UpstreamConnectionPool(
                eventLoop: client.eventLoop,
                settings: settings,
                budget: SharedBudget(limit: 8),
                connector: upstream
            ),
            tokens: RecordingTokenProvider(token: "t"),
            metrics: ProxyMetrics(),
            logger: logger,
            failures: ThrottledLogger(logger: Logger(label: "test"), eventLoop: client.eventLoop)
        )
        try client.pipeline.syncOperations.addHandler(handler)
        try client.connect(to: try SocketAddress(unixDomainSocketPath: "/tmp/bearerd-embedded.sock")).wait()
        self.client = client
        self.upstream = upstream
    }

    var loop: EmbeddedEventLoop { self.client.embeddedEventLoop }

    /// The client sends `bytes`; whatever the handler queued for the end of the turn runs.
    func send(_ bytes: String) throws {
        try self.client.writeInbound(ByteBuffer(string: bytes))
        self.loop.run()
    }

    /// Moves the clock by `milliseconds`, running whatever falls due.
    func wait(milliseconds: Int64) {
        self.loop.advanceTime(by: .milliseconds(milliseconds))
    }

    /// What the client received so far, as text.
    func received() throws -> String {
        try ProxyDeadlineTests.answer(self.client)
    }
}
