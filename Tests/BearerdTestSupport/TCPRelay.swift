import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP relay on 127.0.0.1 in front of a real server, which a test can take down and bring back
/// on the same port: while down, connections to it are refused (nothing listens), as when a
/// laptop's network is not back yet, and the server behind keeps its state.
package final class TCPRelay: Sendable {
    package let port: Int
    private let target: Int
    private let group: any EventLoopGroup
    private let listener = NIOLockedValueBox<(any Channel)?>(nil)
    private let connections = NIOLockedValueBox<[any Channel]>([])

    private init(port: Int, target: Int, group: any EventLoopGroup) {
        self.port = port
        self.target = target
        self.group = group
    }

    /// A relay to 127.0.0.1:`target`, listening on a free port.
    package static func start(to target: Int, group: any EventLoopGroup) async throws -> TCPRelay {
        // Outside the ephemeral range: while it is down, no outgoing connection can take its port.
        let relay = TCPRelay(port: try FreePort.pick(), target: target, group: group)
        try await relay.up()
        return relay
    }

    /// Listens again on its port.
    package func up() async throws {
        let channel = try await Self.bootstrap(target: self.target, group: self.group, track: self.connections)
            .bind(host: "127.0.0.1", port: self.port).get()
        self.listener.withLockedValue { $0 = channel }
    }

    /// Stops listening and drops the connections relayed so far: from now on connecting is refused.
    package func down() async throws {
        let channel = self.listener.withLockedValue { channel in
            defer { channel = nil }
            return channel
        }
        try await channel?.close()
        for connection in self.connections.withLockedValue({ list in
            defer { list.removeAll() }
            return list
        }) {
            try? await connection.close()
        }
    }

    private static func bootstrap(
        target: Int,
        group: any EventLoopGroup,
        track: NIOLockedValueBox<[any Channel]>?
    ) -> ServerBootstrap {
        ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                track?.withLockedValue { $0.append(inbound) }
                return ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        track?.withLockedValue { $0.append(outbound) }
                        let (toOutbound, toInbound) = RelayHandler.pair()
                        return inbound.eventLoop.makeCompletedFuture {
                            try inbound.pipeline.syncOperations.addHandler(toOutbound)
                            try outbound.pipeline.syncOperations.addHandler(toInbound)
                        }.flatMap { inbound.setOption(.autoRead, value: true) }
                    }
            }
    }
}

/// One side of a relayed connection: what it reads goes to its partner's channel.
private final class RelayHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: RelayHandler?
    private var context: ChannelHandlerContext?

    static func pair() -> (RelayHandler, RelayHandler) {
        let first = RelayHandler()
        let second = RelayHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.partner?.context?.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
