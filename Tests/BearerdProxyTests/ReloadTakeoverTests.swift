import BearerdLogging
import BearerdTestSupport
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// A reload hands a connection with nothing sent upstream yet to the new settings: a request
/// waiting for its upstream connection, a head still arriving, a body still coming all go out
/// under the new config, and the client sees no 503.
@Suite("A reload takes over what was not sent yet")
struct ReloadTakeoverTests {
    /// Connections that come only when the test says: the exchange waits in `connecting`.
    final class HeldConnector: UpstreamConnector, @unchecked Sendable {
        private(set) var promises: [EventLoopPromise<UpstreamConnection>] = []
        let loop: EmbeddedEventLoop

        init(loop: EmbeddedEventLoop) {
            self.loop = loop
        }

        func connect(for pool: UpstreamConnectionPool) -> EventLoopFuture<UpstreamConnection> {
            let promise = self.loop.makePromise(of: UpstreamConnection.self)
            self.promises.append(promise)
            return promise.futureResult
        }
    }

    static func handler(
        _ yaml: String,
        on loop: EmbeddedEventLoop,
        connector: any UpstreamConnector,
        accessLines: AccessLog? = nil,
        metrics: ProxyMetrics = ProxyMetrics()
    ) throws -> ProxyHandler {
        var settings = try HeaderRewriterTests.settings(yaml, url: "http://127.0.0.1:9")
        settings.accessLines = accessLines
        return ProxyHandler(
            settings: ProxySettings.Shared(settings),
            retryBudget: SharedBudget(limit: 1 << 20),
            viaTCP: false,
            pool: UpstreamConnectionPool(
                eventLoop: loop,
                settings: settings,
                budget: SharedBudget(limit: 8),
                connector: connector
            ),
            tokens: RecordingTokenProvider(token: "t"),
            metrics: metrics,
            logger: Logger(label: "test"),
            failures: ThrottledLogger(logger: Logger(label: "test"), eventLoop: loop)
        )
    }

    /// A client on a handler whose upstream connections are held; `reload` fires the reload
    /// that makes a handler of `newYAML`, whose upstream is `fresh`.
    struct Fixture {
        let client = EmbeddedChannel()
        let held: HeldConnector
        let fresh: EmbeddedUpstream
        let newYAML: String
        let accessLines: AccessLog?
        let metrics = ProxyMetrics()

        init(newYAML: String = "", accessLines: AccessLog? = nil) throws {
            self.held = HeldConnector(loop: self.client.embeddedEventLoop)
            self.fresh = EmbeddedUpstream(loop: self.client.embeddedEventLoop)
            self.newYAML = newYAML
            self.accessLines = accessLines
            try self.client.pipeline.syncOperations.addHandler(
                try ReloadTakeoverTests.handler(
                    "",
                    on: self.client.embeddedEventLoop,
                    connector: self.held,
                    accessLines: accessLines,
                    metrics: self.metrics
                )
            )
            try self.client.connect(to: try SocketAddress(unixDomainSocketPath: "/tmp/bearerd-embedded.sock")).wait()
        }

        func send(_ bytes: String) throws {
            try self.client.writeInbound(ByteBuffer(string: bytes))
            self.client.embeddedEventLoop.run()
        }

        func reload() throws {
            let successor = try ReloadTakeoverTests.handler(
                self.newYAML,
                on: self.client.embeddedEventLoop,
                connector: self.fresh,
                accessLines: self.accessLines,
                metrics: self.metrics
            )
            let bound = NIOLoopBound(successor, eventLoop: self.client.embeddedEventLoop)
            self.client.pipeline.fireUserInboundEventTriggered(
                ProxyRetireEvent(admitted: true, successor: { _, _, _ in bound.value })
            )
            self.client.embeddedEventLoop.run()
        }

        func received() throws -> String {
            try ProxyDeadlineTests.answer(self.client)
        }
    }

    @Test func aRequestWaitingForItsConnectionGoesToTheNewUpstream() throws {
        let proxy = try Fixture()
        try proxy.send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(proxy.held.promises.count == 1, "the request waits for its upstream connection")
        try proxy.reload()
        #expect(try proxy.received().isEmpty, "no 503 to send it again")
        let sent = try proxy.fresh.sent()
        #expect(sent.hasPrefix("GET /x HTTP/1.1\r\n") && sent.contains("authorization: Bearer t"), "\(sent)")
        try proxy.fresh.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        let answer = try proxy.received()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK") && answer.hasSuffix("ok"), "\(answer)")
        // The old connection comes late: nothing more happens to the client.
        proxy.held.promises[0].fail(ChannelError.connectTimeout(.seconds(1)))
        proxy.client.embeddedEventLoop.run()
        #expect(try proxy.received().isEmpty)
        #expect(proxy.client.isActive, "the kept-alive connection serves on under the new settings")
    }

    /// Taken over, a request is still one request: one access line, written by the handler
    /// that answered it.
    @Test func aRequestTakenOverHasOneAccessLine() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/access.log"
        let log = try AccessLog(.file(path), interval: 60)
        let proxy = try Fixture(accessLines: log)
        try proxy.send("GET /logged HTTP/1.1\r\nHost: a\r\n\r\n")
        try proxy.reload()
        try proxy.fresh.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 OK"))
        log.stop()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains("/logged") == true, "\(lines)")
    }

    /// A graceful shutdown made the exchange the connection's last: a reload then does not
    /// hand the connection to settings that would keep it open.
    @Test func aConnectionAShutdownIsClosingIsNotTakenOver() throws {
        let proxy = try Fixture()
        try proxy.send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        proxy.client.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        try proxy.reload()
        #expect(proxy.fresh.channels.isEmpty)
        let answer = try proxy.received()
        #expect(answer.hasPrefix("HTTP/1.1 503") && answer.contains("reloaded"), "\(answer)")
    }

    /// A request that went upstream once (sent again after a 401, or replayed on a fresh
    /// connection) is not "unsent" while it waits to go again.
    @Test func aRequestSentOnceIsNotTakenOverWhileItWaitsToGoAgain() throws {
        var machine = ExchangeStateMachineExchangeTests.sent()
        #expect(!machine.isUnsent)
        let now = ExchangeStateMachineExchangeTests.t0
        _ = machine.headArrived(
            try ExchangeStateMachineExchangeTests.head(401),
            token: ExchangeStateMachineExchangeTests.refused,
            bodyKept: true,
            asksForNewNonce: false,
            framing: .length,
            now: now
        )
        _ = machine.providerDecided(
            ExchangeStateMachineExchangeTests.fresh,
            keptBody: ByteBuffer(string: "payload"),
            now: now
        )
        let connecting = machine.connecting()
        #expect(connecting)
        let taken = machine.takeUnsent()
        #expect(!machine.isUnsent && taken == nil && machine.isLive)
        var first = ExchangeStateMachine(
            .init(closes: false, hasBody: false, isUpgrade: false),
            timeouts: ExchangeStateMachineExchangeTests.timeouts
        )
        #expect(first.isUnsent)
        let parts = first.takeUnsent()
        #expect(parts?.isEmpty == true && !first.isLive)
    }

    @Test func theNewListsDecideARequestNotSentYet() throws {
        let proxy = try Fixture(newYAML: "proxy:\n  deny_paths: [\"/x\"]\n")
        try proxy.send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        try proxy.reload()
        let answer = try proxy.received()
        #expect(answer.hasPrefix("HTTP/1.1 403"), "\(answer)")
        #expect(proxy.fresh.channels.isEmpty, "nothing went to the new upstream")
    }

    @Test func aHeadStillArrivingIsParsedUnderTheNewSettings() throws {
        let proxy = try Fixture()
        try proxy.send("GET /y HTTP/1.1\r\nHo")
        try proxy.reload()
        try proxy.send("st: a\r\n\r\n")
        #expect(try proxy.fresh.sent().hasPrefix("GET /y HTTP/1.1\r\n"))
        #expect(proxy.held.promises.isEmpty)
        #expect(try proxy.received().isEmpty)
    }

    @Test func aBodyStillComingGoesWholeToTheNewUpstream() throws {
        let proxy = try Fixture()
        try proxy.send("POST /z HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nhello")
        #expect(proxy.held.promises.count == 1)
        try proxy.reload()
        try proxy.send("world")
        let sent = try proxy.fresh.sent()
        #expect(sent.hasPrefix("POST /z HTTP/1.1\r\n") && sent.hasSuffix("\r\n\r\nhelloworld"), "\(sent)")
        #expect(try proxy.received().isEmpty)
    }

    /// What was sent upstream under the old settings is not taken over: it ends there, and its
    /// connection closes after it.
    @Test func aRequestAlreadySentEndsUnderTheOldSettings() throws {
        let proxy = try EmbeddedProxy("")
        try proxy.send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try proxy.upstream.sent().hasPrefix("GET /x"))
        let unused = EmbeddedUpstream(loop: proxy.loop)
        let successor = NIOLoopBound(try Self.handler("", on: proxy.loop, connector: unused), eventLoop: proxy.loop)
        proxy.client.pipeline.fireUserInboundEventTriggered(
            ProxyRetireEvent(admitted: true, successor: { _, _, _ in successor.value })
        )
        proxy.loop.run()
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        let answer = try proxy.received()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK") && answer.lowercased().contains("connection: close"), "\(answer)")
        #expect(unused.channels.isEmpty)
    }
}
