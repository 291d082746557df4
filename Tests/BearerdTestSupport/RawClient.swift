import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Sends raw bytes and returns everything the server sends back until it closes the connection
/// (or `limit` passes, which fails the test rather than hanging it).
package enum RawClient {
    /// One exchange of raw bytes.
    package static func exchange(
        host: String = "127.0.0.1",
        port: Int,
        _ request: String,
        group: any EventLoopGroup,
        limit: Duration = .seconds(10)
    ) async throws -> String {
        let channel = try await ClientBootstrap(group: group)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: true)
                    )
                }
            }
        return try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    try await outbound.write(ByteBuffer(string: request))
                    var received = ""
                    for try await buffer in inbound { received += String(buffer: buffer) }
                    return received
                }
            }
            group.addTask {
                try await Task.sleep(for: limit)
                throw TestClientError("no close from the server within \(limit)")
            }
            let result = try await group.next()!
            group.cancelAll()
            return result
        }
    }
}

/// A raw connection for conversations: send some bytes, read until a marker, send more.
package struct RawConnection {
    private let inbound: RawInbound
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    /// Connects to 127.0.0.1:`port`, runs `body`, closes.
    package static func with<Result: Sendable>(
        port: Int,
        group: any EventLoopGroup,
        _ body: (RawConnection) async throws -> Result
    ) async throws -> Result {
        let channel = try await ClientBootstrap(group: group)
            .connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: port)) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(RawConnection(inbound: RawInbound(inbound.makeAsyncIterator()), outbound: outbound))
        }
    }

    /// Sends text as it is.
    package func send(_ text: String) async throws {
        try await self.outbound.write(ByteBuffer(string: text))
    }

    /// Reads until the received text contains `marker` (or the connection closes); returns all of it.
    package func read(until marker: String) async throws -> String {
        var received = ""
        while !received.contains(marker), let buffer = try await self.inbound.next() {
            received += String(buffer: buffer)
        }
        return received
    }
}

final class RawInbound {
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    init(_ iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) { self.iterator = iterator }
    func next() async throws -> ByteBuffer? { try await self.iterator.next() }
}

/// A listener on 127.0.0.1 whose accept queue is full, so a new connection's SYN is dropped and
/// `connect` hangs, as with an unreachable host, without leaving loopback.
package final class SaturatedListener {
    /// Its port.
    package let port: Int
    private var descriptors: [Int32] = []

    /// Binds with a backlog of 0 and fills the queue with connections nobody accepts.
    package init() throws {
        var (listener, address) = try LoopbackSocket.bind()
        guard listen(listener, 0) == 0 else {
            close(listener)
            throw TestClientError("cannot set up the saturated listener")
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.descriptors.append(listener)
        // Fill the accept queue: a few non-blocking connects that nobody accepts.
        for _ in 0..<4 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            self.descriptors.append(client)
        }
    }

    deinit {
        for descriptor in self.descriptors { close(descriptor) }
    }
}

/// A loopback port that refuses connections (bound, never listening) and that no other test can
/// take while this lives, unlike a port found free and closed again.
package final class RefusingPort {
    /// Its port.
    package let port: Int
    private let descriptor: Int32

    package init() throws {
        let (descriptor, address) = try LoopbackSocket.bind()
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(self.descriptor)
    }
}

/// Plain sockets on 127.0.0.1, for tests that need what no client library does.
package enum LoopbackSocket {
    /// A TCP connection to 127.0.0.1:`port` that sends nothing (the caller closes it).
    package static func silentConnection(to port: Int) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return descriptor
    }

    /// Whether a TCP socket can bind 127.0.0.1:`port` now (without `SO_REUSEADDR`).
    package static func canBind(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel picks.
    static func bind() throws -> (Int32, sockaddr_in) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
        }
        guard descriptor >= 0, bound == 0 else {
            close(descriptor)
            throw TestClientError("cannot bind a socket on 127.0.0.1")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, address)
    }
}
