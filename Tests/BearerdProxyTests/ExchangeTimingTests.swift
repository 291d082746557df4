import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// Whole exchanges, client to upstream, on a manual clock (``EmbeddedProxy``): the body and
/// idle deadlines in steps of milliseconds, with no sleep and no socket.
@Suite("Exchanges on a manual clock")
struct ExchangeTimingTests {
    static let slow = """
        proxy:
          header_timeout: 300ms
          body_timeout: 300ms
          client_idle_timeout: 2s
        """

    /// The body's progress is checked once per `body_timeout`, not timed per read: a pause is
    /// answered within one to two of them (``ExchangeDeadlinesTests`` has the rule exactly).
    @Test func aBodyThatStopsGets408WithinTwoBodyTimeoutsAndTheUpstreamNeverSeesItsEnd() throws {
        let proxy = try EmbeddedProxy(Self.slow)
        try proxy.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        let sent = try proxy.upstream.sent()
        #expect(sent.hasPrefix("POST /x HTTP/1.1\r\n") && sent.hasSuffix("\r\n\r\nabc"), "\(sent)")
        var elapsed = 0
        var answer = ""
        while answer.isEmpty && elapsed < 1000 {
            proxy.wait(milliseconds: 10)
            elapsed += 10
            answer = try proxy.received()
        }
        #expect((300...600).contains(elapsed), "answered after \(elapsed) ms")
        #expect(answer.hasPrefix("HTTP/1.1 408 "), "\(answer.prefix(200))")
        #expect(answer.contains("proxy.body_timeout (300ms)"))
        #expect(try proxy.upstream.sent().isEmpty, "no more of the body went upstream")
        #expect(proxy.upstream.channels.first?.isActive == false, "the upstream connection was closed")
    }

    @Test func aBodyThatKeepsComingIsNotCutOff() throws {
        let proxy = try EmbeddedProxy(Self.slow)
        try proxy.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n")
        // 2.5 s in all, a byte every 250 ms: longer than body_timeout, never a pause as long.
        for _ in 0..<10 {
            proxy.wait(milliseconds: 250)
            try proxy.send("z")
        }
        #expect(try proxy.upstream.sent().hasSuffix("\r\n\r\nzzzzzzzzzz"))
        #expect(try proxy.received().isEmpty)
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\ngot 10")
        let answer = try proxy.received()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.hasSuffix("got 10"), "\(answer)")
    }

    @Test func aKeptAliveConnectionIdlesForTheIdleTimeoutNotTheHeaderTimeout() throws {
        let proxy = try EmbeddedProxy(Self.slow)
        try proxy.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try proxy.upstream.sent().hasPrefix("GET /a HTTP/1.1\r\n"))
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 "))
        proxy.wait(milliseconds: 1999)
        #expect(proxy.client.isActive, "closed before client_idle_timeout (the header timeout is 300ms)")
        try proxy.send("GET /b HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try proxy.upstream.sent().hasPrefix("GET /b HTTP/1.1\r\n"), "the pooled connection carries it")
        #expect(proxy.upstream.channels.count == 1)
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 "))
        proxy.wait(milliseconds: 1999)
        #expect(proxy.client.isActive)
        proxy.wait(milliseconds: 1)
        #expect(!proxy.client.isActive, "idle for client_idle_timeout after the last response")
    }

    static let progress = "proxy:\n  client_idle_timeout: 2s\n"
    static let readTimeout = "  read_timeout: 400ms\n"

    /// A response that ends in the read that brought its head needs no progress check: the
    /// connection's timer stays where the idle deadline put it, and no task is scheduled and
    /// cancelled for it (issue 49: a scheduled task per response on a new connection).
    @Test func aResponseThatEndsWithItsHeadArmsNoProgressCheck() throws {
        let proxy = try EmbeddedProxy(Self.progress, upstreamYAML: Self.readTimeout)
        let handler = try proxy.client.pipeline.syncOperations.handler(type: ProxyHandler.self)
        let accepted = proxy.loop.now
        #expect(handler.timer.armedAt == accepted + .seconds(2))
        proxy.wait(milliseconds: 50)
        try proxy.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 "))
        #expect(handler.timer.armedAt == accepted + .seconds(2), "armed for a progress check")
    }

    /// One whose body stops after the head still ends at `upstream.read_timeout` (checked a
    /// quarter of it at a time): its check is armed at the end of the turn the head went out in.
    @Test func aResponseBodyThatStopsAfterTheHeadEndsAtTheReadTimeout() throws {
        let proxy = try EmbeddedProxy(Self.progress, upstreamYAML: Self.readTimeout)
        let handler = try proxy.client.pipeline.syncOperations.handler(type: ProxyHandler.self)
        try proxy.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nok")
        #expect(handler.timer.armedAt == proxy.loop.now + .milliseconds(100))
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 "))
        var elapsed = 0
        while proxy.client.isActive && elapsed < 1000 {
            proxy.wait(milliseconds: 10)
            elapsed += 10
        }
        #expect((400...500).contains(elapsed), "closed after \(elapsed) ms")
    }
}
