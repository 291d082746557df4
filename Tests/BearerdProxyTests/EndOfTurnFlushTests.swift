import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// A response that ends during a turn of the event loop leaves at the end of that turn, together
/// with the turn's other writes, and never later.
@Suite("Client flush at the end of the loop's turn")
struct EndOfTurnFlushTests {
    static let yaml = "log:\n  access: false"
    static let response = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"

    /// The client sends a request; the upstream's answer is handled, and the turn has not ended.
    static func answeredInThisTurn() throws -> EmbeddedProxy {
        let proxy = try EmbeddedProxy(Self.yaml)
        try proxy.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try proxy.upstream.sent().hasPrefix("GET /a HTTP/1.1\r\n"))
        // Read by the handler at once; the loop's tasks (the end of the turn) have not run.
        try proxy.upstream.channels.last?.writeInbound(ByteBuffer(string: Self.response))
        return proxy
    }

    @Test func aResponseLeavesAtTheEndOfItsTurn() throws {
        let proxy = try Self.answeredInThisTurn()
        #expect(try proxy.client.readOutbound(as: ByteBuffer.self) == nil, "flushed before the turn ended")
        proxy.loop.run()
        #expect(try proxy.received().hasSuffix("\r\n\r\nok"))
        // The connection stays open and serves the next request the same way.
        try proxy.send("GET /b HTTP/1.1\r\nHost: h\r\n\r\n")
        try proxy.upstream.answer(Self.response)
        #expect(try proxy.received().hasSuffix("\r\n\r\nok"))
        #expect(proxy.client.isActive)
    }

    /// A socket's close drops the writes not flushed yet (an `EmbeddedChannel`'s does not), so
    /// what counts is the order in which flush and close reach the channel.
    @Test func aShutdownInTheSameTurnClosesOnlyAfterTheResponseLeft() throws {
        let proxy = try Self.answeredInThisTurn()
        let order = OutboundOrder()
        try proxy.client.pipeline.syncOperations.addHandler(order, position: .first)
        // Graceful shutdown reaches the connection, now idle, before the turn's flush.
        proxy.client.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        proxy.loop.run()
        #expect(order.events.first == "flush", "\(order.events)")
        #expect(order.events.contains("close"))
        #expect(try proxy.received().hasSuffix("\r\n\r\nok"))
    }
}

/// Records the flushes and closes that pass on their way to the channel.
final class OutboundOrder: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = NIOAny
    private(set) var events: [String] = []

    func flush(context: ChannelHandlerContext) {
        self.events.append("flush")
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        self.events.append("close")
        context.close(mode: mode, promise: promise)
    }
}
