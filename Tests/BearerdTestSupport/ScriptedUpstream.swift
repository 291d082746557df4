import NIOCore
import NIOPosix
import Synchronization

/// An upstream on 127.0.0.1:0 that answers each request head it reads with fixed bytes, for
/// responses a well-behaved HTTP server would never send. Request bodies are not expected.
package final class ScriptedUpstream: Sendable {
    package let port: Int
    private let channel: any Channel
    private let counts = Counts()

    /// Connections accepted so far.
    package var connectionCount: Int { self.counts.value.withLock { $0.connections } }
    /// Request heads read so far.
    package var requestCount: Int { self.counts.value.withLock { $0.requests } }
    /// Connections closed so far (by either side): once all are, nothing more can arrive.
    package var closedCount: Int { self.counts.value.withLock { $0.closed } }
    /// Every byte read so far, on every connection, as text.
    package var received: String { self.counts.value.withLock { $0.received } }

    /// Each request head is answered with `response`; the connection then closes if `close`.
    package init(group: any EventLoopGroup, response: String, close: Bool = false) async throws {
        let counts = self.counts
        self.channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                counts.value.withLock { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ScriptedHandler(response: response, close: close, counts: counts)
                    )
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.port = self.channel.localAddress!.port!
    }

    package func stop() async {
        try? await self.channel.close()
    }
}

private final class Counts: Sendable {
    let value = Mutex((connections: 0, requests: 0, closed: 0, received: ""))
}

private final class ScriptedHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let response: String
    let close: Bool
    let counts: Counts
    var received: [UInt8] = []

    init(response: String, close: Bool, counts: Counts) {
        self.response = response
        self.close = close
        self.counts = counts
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.counts.value.withLock { $0.closed += 1 }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = self.unwrapInboundIn(data)
        self.counts.value.withLock { $0.received += String(buffer: bytes) }
        self.received += bytes.readableBytesView
        while let end = self.received.firstRange(of: Array("\r\n\r\n".utf8)) {
            self.received.removeSubrange(..<end.upperBound)
            self.counts.value.withLock { $0.requests += 1 }
            let write = context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: self.response)))
            if self.close {
                write.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                return
            }
        }
    }
}
