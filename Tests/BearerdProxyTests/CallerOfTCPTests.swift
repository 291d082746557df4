import BearerdTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import BearerdSockets

#if canImport(Glibc)
import Glibc
#endif

/// A TCP caller is named only while its connection stands: a client that reset its connection
/// leaves its addresses and port free, and a new socket of another process could take them
/// before bearerd asks the kernel who owns them.
@Suite("The caller of an accepted TCP connection", .timeLimit(.minutes(1)))
struct CallerOfTCPTests {
    @Test func aConnectionWhoseAddressesANewSocketTookHasNoCaller() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let accepted = NIOLockedValueBox<[any Channel]>([])
        // Not read: the reset stays unseen by NIO, as when it comes between accept and lookup.
        let server = try await ServerBootstrap(group: group)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0.append(channel) }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let target = server.localAddress!
        let first = try Self.connect(from: 0, to: target)
        try await waitUntil(.seconds(5)) { accepted.withLockedValue { $0.count } == 1 }
        let old = accepted.withLockedValue { $0[0] }
        let named = try await old.eventLoop.submit { Caller.ofTCPNow(old) }.get()
        #expect(named == Caller(uid: getuid()), "a standing connection names its owner")

        // The client resets its connection; a new socket takes its port and connects again.
        // `struct linger` { l_onoff 1, l_linger 0 }, as two C ints: the close sends a reset.
        var reset: [Int32] = [1, 0]
        setsockopt(first.descriptor, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<Int32>.size * 2))
        close(first.descriptor)
        // The reset reaches the accepted socket first (under load it can lag the close): a SYN
        // with the same addresses before it would meet a connection that still stands.
        try await waitUntil(.seconds(10)) {
            (try? await old.eventLoop.submit { Self.state(of: old) }.get()) != 1
        }
        let second = try Self.connect(from: first.port, to: target)
        try await waitUntil(.seconds(5)) { accepted.withLockedValue { $0.count } == 2 }
        let new = accepted.withLockedValue { $0[1] }
        #expect(new.remoteAddress?.port == first.port, "the new socket did not take the port")
        let stale = try await old.eventLoop.submit { Caller.ofTCPNow(old) }.get()
        #expect(stale == nil, "the reset connection was named after the socket that took its addresses")
        let current = try await new.eventLoop.submit { Caller.ofTCPNow(new) }.get()
        #expect(current == Caller(uid: getuid()))

        close(second.descriptor)
        for channel in accepted.withLockedValue({ $0 }) { try? await channel.close() }
        try await server.close()
        try await group.shutdownGracefully()
    }

    /// The first byte of the accepted socket's `tcp_info`: its state (1: ESTABLISHED); nil when
    /// it cannot be read.
    static func state(of channel: any Channel) -> UInt8? {
        let info = ChannelOptions.Types.SocketOption(level: SocketOptionLevel(IPPROTO_TCP), name: TCP_INFO)
        guard let value = try? channel.syncOptions?.getOption(info) else { return nil }
        return withUnsafeBytes(of: value) { $0[0] }
    }

    /// A blocking client socket bound to 127.0.0.1:`port` (0: any) with SO_REUSEADDR, connected
    /// to `target`; its descriptor and local port.
    static func connect(from port: Int, to target: SocketAddress) throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let local = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        let bound = local.withSockAddr { bind(descriptor, $0, socklen_t($1)) }
        let connected = target.withSockAddr { Glibc.connect(descriptor, $0, socklen_t($1)) }
        guard bound == 0, connected == 0 else {
            close(descriptor)
            throw SocketFailure(bound: bound, connected: connected)
        }
        return (descriptor, AcceptedSocketTests.address(of: descriptor, getsockname)?.port ?? 0)
    }
}

struct SocketFailure: Error {
    var bound: Int32
    var connected: Int32
}
