import BearerdTestSupport
import NIOCore
import NIOPosix
import Testing

/// Issue 35 over real sockets: an upstream route that answers 101 without switching (a debug
/// `/status/101`, a framework's bug) must not turn bearerd's upstream connection into a tunnel
/// for the client's raw HTTP/1.1. The upstream records every byte it reads.
@Suite("Upgrades: a 101 that is no switch opens no tunnel")
struct UpgradeTunnelTests {
    static let key = UpgradeOfferTests.key

    static let answers = [
        "HTTP/1.1 101 Switching Protocols\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOp=\r\n\r\n",
    ]

    @Test(arguments: Self.answers)
    func theClientGets502AndItsRawRequestNeverReachesTheUpstream(_ answer: String) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await ScriptedUpstream(group: group, response: answer)
        do {
            try await ProxyFixture.with(upstreamURL: "http://127.0.0.1:\(upstream.port)") { proxy in
                let received = try await RawClient.exchange(
                    port: proxy.port,
                    "GET /chat HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\nUpgrade: websocket\r\n"
                        + "Connection: Upgrade\r\nSec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
                        + "GET /admin HTTP/1.1\r\nHost: internal\r\n\r\n",
                    group: proxy.group
                )
                #expect(received.hasPrefix("HTTP/1.1 502 "), "\(received)")
                #expect(!received.contains("HTTP/1.1 101"), "\(received)")
                // Once the upstream's one connection is closed, nothing more can reach it.
                try await waitUntil { upstream.closedCount == upstream.connectionCount }
                #expect(upstream.connectionCount == 1)
                #expect(upstream.requestCount == 1)
                #expect(upstream.received.hasPrefix("GET /chat HTTP/1.1\r\n"), "\(upstream.received)")
                #expect(!upstream.received.contains("/admin"), "\(upstream.received)")
            }
            await upstream.stop()
            try await group.shutdownGracefully()
        } catch {
            await upstream.stop()
            try? await group.shutdownGracefully()
            throw error
        }
    }
}
