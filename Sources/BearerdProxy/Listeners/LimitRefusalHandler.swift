import NIOCore

/// Answers a connection accepted over `proxy.max_connections` (with `at_connection_limit:
/// refuse`): 503 with `Retry-After`, then closes, without reading a request.
final class LimitRefusalHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let answer: String = {
        let body =
            #"{"error":"too_many_connections","message":"bearerd is at proxy.max_connections; retry after the time Retry-After gives"}"#
        return
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: \(body.utf8.count + 1)\r\n"
            + "retry-after: 1\r\ncache-control: no-store\r\nconnection: close\r\n\r\n\(body)\n"
    }()

    func channelActive(context: ChannelHandlerContext) {
        self.refuse(context)
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { self.refuse(context) }
    }

    /// Input is dropped: the answer does not depend on it.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func refuse(_ context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: Self.answer))).assumeIsolated().whenComplete {
            _ in
            // Half-close first, so what the client still sends does not reset the answer away.
            channel.close(mode: .output, promise: nil)
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        }
    }
}
