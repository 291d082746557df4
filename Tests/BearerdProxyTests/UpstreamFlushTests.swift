import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// Requests written to upstream connections during one turn of the event loop go out together
/// at its end, so the upstream serves them in one wake-up (measured in the commit that made it).
@Suite("Upstream flush at the end of the loop's turn")
struct UpstreamFlushTests {
    @Test func requestsWrittenInOneTurnAreFlushedTogetherAtItsEnd() throws {
        let loop = EmbeddedEventLoop()
        let settings = try HeaderRewriterTests.settings()
        let pool = UpstreamConnectionPool(eventLoop: loop, settings: settings, budget: SharedBudget(limit: 4))
        var channels: [EmbeddedChannel] = []
        var connections: [UpstreamConnection] = []
        for _ in 0..<2 {
            let connection = UpstreamConnection()
            let channel = EmbeddedChannel(handler: connection, loop: loop)
            try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
            channels.append(channel)
            connections.append(connection)
        }
        for (index, connection) in connections.enumerated() {
            connection.write(ByteBuffer(string: "GET /\(index) HTTP/1.1\r\n\r\n"))
            pool.endOfTurn.upstream(connection)
        }
        pool.endOfTurn.upstream(connections[0])  // a second read of the same client in the turn
        for channel in channels {
            #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing leaves before the turn ends")
        }
        loop.run()
        for (index, channel) in channels.enumerated() {
            let sent = try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) }
            #expect(sent == "GET /\(index) HTTP/1.1\r\n\r\n")
        }
        // The next turn starts empty: a later request is flushed at the end of its own turn.
        connections[1].write(ByteBuffer(string: "GET /again HTTP/1.1\r\n\r\n"))
        pool.endOfTurn.upstream(connections[1])
        loop.run()
        #expect(
            try channels[1].readOutbound(as: ByteBuffer.self).map { String(buffer: $0) }
                == "GET /again HTTP/1.1\r\n\r\n"
        )
        for channel in channels { _ = try? channel.finish() }
    }
}
