import BearerdTestSupport
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// The client connection's deadlines on an `EmbeddedChannel`: the handler takes its time from
/// the event loop's clock, so these move time by hand, to the millisecond, and sleep nowhere.
@Suite("Client deadlines on a manual clock")
struct ProxyDeadlineTests {
    static let slow = """
        proxy:
          header_timeout: 300ms
          client_idle_timeout: 2s
        """

    /// A connected unix-socket client (no shared key, no Host check) of a handler on `yaml`.
    static func connection(_ yaml: String = Self.slow) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let settings = try HeaderRewriterTests.settings(yaml)
        let handler = ProxyHandler.testing(settings: settings, viaTCP: false, channel: channel)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: try SocketAddress(unixDomainSocketPath: "/tmp/bearerd-deadline.sock")).wait()
        return channel
    }

    static func answer(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text
    }

    @Test func aHeadNotCompleteInTimeGets408AtTheDeadlineNotBefore() throws {
        let channel = try Self.connection()
        try channel.writeInbound(ByteBuffer(string: "GET /x HTTP/1.1\r\nHost: h\r\n"))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(299))
        #expect(try Self.answer(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        let answer = try Self.answer(channel)
        #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout"), "\(answer.prefix(200))")
        #expect(answer.contains("proxy.header_timeout (300ms)"))
        _ = try? channel.finish()
    }

    @Test func aHeadDrippedByteByByteStillHasOnlyTheHeaderTimeout() throws {
        let channel = try Self.connection()
        try channel.writeInbound(ByteBuffer(string: "GET /x HTTP/1.1\r\nHost: h\r\n"))
        // A slowloris keeps sending, so only a deadline for the whole head stops it.
        var drips = 0
        var answer = ""
        while answer.isEmpty && drips < 20 {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(50))
            answer = try Self.answer(channel)
            if answer.isEmpty {
                try channel.writeInbound(ByteBuffer(string: "X-\(drips): \(drips)\r\n"))
                drips += 1
            }
        }
        #expect(answer.hasPrefix("HTTP/1.1 408 "), "\(answer.prefix(200))")
        #expect(drips == 5, "408 after 300 ms, that is 6 drips of 50 ms")
        _ = try? channel.finish()
    }

    @Test func aConnectionThatSendsNothingIsClosedAtTheIdleTimeoutWithoutAnAnswer() throws {
        let channel = try Self.connection()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(try Self.answer(channel).isEmpty)
    }

    @Test func aRequestAnsweredAtOnceLeavesTheConnectionIdleNotTimingItsHead() throws {
        let channel = try Self.connection()
        // Refused (TRACE) and answered at once; the connection is then idle, with 2 s to live.
        try channel.writeInbound(ByteBuffer(string: "TRACE /x HTTP/1.1\r\nHost: h\r\n\r\n"))
        channel.embeddedEventLoop.run()  // the end of the turn, which flushes the answer
        #expect(try Self.answer(channel).hasPrefix("HTTP/1.1 405 "))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1000))
        #expect(channel.isActive, "closed by the header timeout, which only runs while a head arrives")
        #expect(try Self.answer(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1000))
        #expect(!channel.isActive)
    }
}
