import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// ``AcceptGate`` on an `EmbeddedChannel` standing in for a listening socket: whether the gate
/// lets the listener's read through is what decides if the kernel's queued connections are
/// accepted, so the test counts reads instead of waiting to see that a client is not served.
@Suite("The accept gate")
struct AcceptGateTests {
    /// Counts the reads that reach the socket (it sits between the gate and the channel's head).
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var reads = 0

        func read(context: ChannelHandlerContext) {
            self.reads += 1
            context.read()
        }
    }

    static func listener(limit: Int) throws -> (EmbeddedChannel, ReadCounter, ConnectionLimiter) {
        let limiter = ConnectionLimiter(limit: limit, metrics: ProxyMetrics(), failures: .testing)
        let listener = EmbeddedChannel()
        let counter = ReadCounter()
        try listener.pipeline.syncOperations.addHandler(counter)
        try listener.pipeline.syncOperations.addHandler(AcceptGate(limiter: limiter))
        return (listener, counter, limiter)
    }

    /// A connection accepted by the listener (the child channel a server socket reads).
    static func accept(on listener: EmbeddedChannel) throws -> EmbeddedChannel {
        let child = EmbeddedChannel(loop: listener.embeddedEventLoop)
        try child.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try listener.writeInbound(child as any Channel)
        return child
    }

    @Test func atTheLimitTheListenerStopsReadingUntilAConnectionCloses() throws {
        let (listener, counter, limiter) = try Self.listener(limit: 2)
        listener.read()
        #expect(counter.reads == 1, "a slot was free: the listener reads")
        let first = try Self.accept(on: listener)
        listener.read()
        #expect(counter.reads == 2)
        let second = try Self.accept(on: listener)
        // Both slots belong to open connections: the next connection stays in the kernel's queue.
        listener.read()
        #expect(counter.reads == 2, "read past max_connections")
        #expect(limiter.isFull)
        _ = try second.close().wait()
        listener.embeddedEventLoop.run()
        #expect(counter.reads == 3, "a slot freed: the held read goes on")
        let third = try Self.accept(on: listener)
        #expect(try listener.readInbound(as: (any Channel).self) != nil)
        #expect(limiter.isFull)
        for channel in [first, third] { _ = try? channel.finish() }
        _ = try? listener.finish()
    }

    @Test func aConnectionAcceptedWithoutASlotIsClosedUnserved() throws {
        let (listener, _, limiter) = try Self.listener(limit: 1)
        listener.read()
        let held = try Self.accept(on: listener)
        // The kernel hands over a connection the gate did not read for: it never goes further.
        let extra = try Self.accept(on: listener)
        #expect(!extra.isActive)
        _ = try listener.readInbound(as: (any Channel).self)
        #expect(try listener.readInbound(as: (any Channel).self) == nil, "the unslotted connection was served")
        #expect(limiter.isFull)
        _ = try? held.finish()
        _ = try? listener.finish()
    }
}
