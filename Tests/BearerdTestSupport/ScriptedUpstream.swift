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

    /// Each request head is answered with `response`; the connection then closes if `close`.
    package init(group: any EventLoopGroup, response: String, close: Bool = false) async throws {
        let counts = self.counts
        self.channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                counts.value.withLock { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ScriptedHandler(response: response, close: close) { counts.value.withLock { $0.requests += 1 } }
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
    let value = Mutex((connections: 0, requests: 0))
}

private final class ScriptedHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let response: String
    let close: Bool
    let onRequest: () -> Void
    var received: [UInt8] = []

    init(response: String, close: Bool, onRequest: @escaping () -> Void) {
        self.response = response
        self.close = close
        self.onRequest = onRequest
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.received += self.unwrapInboundIn(data).readableBytesView
        while let end = self.received.firstRange(of: Array("\r\n\r\n".utf8)) {
            self.received.removeSubrange(..<end.upperBound)
            self.onRequest()
            let write = context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: self.response)))
            if self.close {
                write.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                return
            }
        }
    }
}
