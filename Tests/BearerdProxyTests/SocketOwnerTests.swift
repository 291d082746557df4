import BearerdTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import BearerdSockets

/// The owner of a TCP client's socket, from the kernel's socket table (`inet_diag`).
@Suite("The owner of a local TCP caller")
struct SocketOwnerTests {
    /// Accepts one connection on `host` and returns the accepted socket's addresses as the
    /// server sees them; nil when `host` cannot be bound (no IPv6 here).
    static func accepted(on host: String, group: any EventLoopGroup) async throws -> (SocketAddress, SocketAddress)? {
        let seen = NIOLockedValueBox<(SocketAddress, SocketAddress)?>(nil)
        let server: any Channel
        do {
            server = try await ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    if let remote = channel.remoteAddress, let local = channel.localAddress {
                        seen.withLockedValue { $0 = (remote, local) }
                    }
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: host, port: 0).get()
        } catch {
            return nil
        }
        let client = try await ClientBootstrap(group: group).connect(to: server.localAddress!).get()
        try await waitUntil(.seconds(5)) { seen.withLockedValue { $0 } != nil }
        let addresses = seen.withLockedValue { $0 }
        // Asked while the client's socket is still open.
        let owner = addresses.flatMap { SocketOwner.of(remote: $0.0, local: $0.1) }
        #expect(owner?.uid == getuid(), "\(host): \(String(describing: owner))")
        #expect((owner?.inode ?? 0) > 0)
        try await client.close()
        try await server.close()
        return addresses
    }

    @Test(arguments: ["127.0.0.1", "::1"])
    func theKernelNamesThisProcesssUID(host: String) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let found = try await Self.accepted(on: host, group: group)
        try await group.shutdownGracefully()
        guard let (remote, local) = found else { return }
        // Once the client is gone, or for a pair that never connected, there is nobody.
        try await waitUntil(.seconds(5)) { SocketOwner.of(remote: remote, local: local) == nil }
        let stranger = try SocketAddress(ipAddress: host, port: 9)
        #expect(SocketOwner.of(remote: stranger, local: local) == nil)
    }

    @Test func aUnixSocketHasNoOwnerHere() throws {
        let unix = try SocketAddress(unixDomainSocketPath: "/tmp/x")
        #expect(SocketOwner.of(remote: unix, local: unix) == nil)
    }
}

/// The kernel's answer, read as bytes: a socket its process let go of names nobody.
@Suite("inet_diag answers")
struct SocketOwnerParseTests {
    /// An `nlmsghdr` of type SOCK_DIAG_BY_FAMILY and an `inet_diag_msg` with `uid` and `inode`.
    static func answer(uid: UInt32, inode: UInt32) -> ArraySlice<UInt8> {
        var bytes = [UInt8](repeating: 0, count: 16 + 72)
        bytes[0] = 88
        bytes[4] = 20
        withUnsafeBytes(of: uid.littleEndian) { bytes.replaceSubrange(80..<84, with: $0) }
        withUnsafeBytes(of: inode.littleEndian) { bytes.replaceSubrange(84..<88, with: $0) }
        return bytes[...]
    }

    @Test func aSocketWithAnInodeNamesItsOwnerAndOneWithoutNamesNobody() {
        #expect(SocketOwner.parse(Self.answer(uid: 1000, inode: 4242)) == .init(uid: 1000, inode: 4242))
        // A time-wait or orphaned socket: inode 0, reported as root's. Not root.
        #expect(SocketOwner.parse(Self.answer(uid: 0, inode: 0)) == nil)
        // An error answer (NLMSG_ERROR), or a short one.
        var error = Self.answer(uid: 0, inode: 7)
        error[error.startIndex + 4] = 2
        #expect(SocketOwner.parse(error) == nil)
        #expect(SocketOwner.parse([1, 2, 3][...]) == nil)
    }
}
