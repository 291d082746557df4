import BearerdTestSupport
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import BearerdProxy

/// Whether the shared key applies comes from the listener, never from the peer address: a TCP
/// connection reset before it was served has none, and used to pass as a unix-socket caller,
/// without the key, to the upstream with the token.
@Suite("The caller's kind comes from its listener")
struct ListenerKindTests {
    static func handler(viaTCP: Bool, channel: EmbeddedChannel) throws -> ProxyHandler {
        let directory = try TemporaryDirectory()
        let key = try directory.write("shared-key-0123456789abcdef\n", to: "client-key")
        let settings = try HeaderRewriterTests.settings("proxy:\n  client_key_file: \(key)")
        return ProxyHandler.testing(settings: settings, viaTCP: viaTCP, channel: channel)
    }

    @Test func aTCPConnectionWithoutAPeerAddressIsClosedUnanswered() throws {
        let channel = EmbeddedChannel()
        let handler = try Self.handler(viaTCP: true, channel: channel)
        try channel.pipeline.syncOperations.addHandler(handler)
        guard case .closed = handler.state else {
            Issue.record("a TCP connection without a peer address was kept: \(handler.state)")
            return
        }
        _ = try? channel.writeInbound(ByteBuffer(string: "GET /x HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\r\n"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing answered, nothing forwarded")
        #expect(handler.pool.eventLoop === channel.eventLoop)
    }

    @Test func aUnixConnectionIsServedWithoutTheKey() throws {
        let channel = EmbeddedChannel()
        try channel.connect(to: try SocketAddress(unixDomainSocketPath: "/tmp/bearerd-kind.sock")).wait()
        let handler = try Self.handler(viaTCP: false, channel: channel)
        try channel.pipeline.syncOperations.addHandler(handler)
        guard case .idle = handler.state else {
            Issue.record("a unix connection was not served: \(handler.state)")
            return
        }
        _ = try? channel.finish()
    }
}
