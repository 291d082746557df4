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
    static func accepted(
        on host: String,
        connectingTo target: String? = nil,
        group: any EventLoopGroup
    ) async throws -> (SocketAddress, SocketAddress)? {
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
        let port = server.localAddress!.port!
        let address = try target.map { try SocketAddress(ipAddress: $0, port: port) } ?? server.localAddress!
        let client = try await ClientBootstrap(group: group).connect(to: address).get()
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
        guard let (remote, local) = found else {
            try await group.shutdownGracefully()
            return
        }
        // Once the client is gone, there is nobody.
        try await waitUntil(.seconds(5)) { SocketOwner.of(remote: remote, local: local) == nil }
        // Nor for a client port where this process listens: the kernel's answer for a socket it
        // cannot find is that listener, which is not a caller.
        let listener = try await ServerBootstrap(group: group).bind(host: host, port: 0).get()
        let stranger = try SocketAddress(ipAddress: host, port: listener.localAddress!.port!)
        #expect(SocketOwner.of(remote: stranger, local: local) == nil)
        try await listener.close()
        try await group.shutdownGracefully()
    }

    /// An IPv6 socket connected to ::ffff:127.0.0.1 (a dual-stack client: Java's and .NET's
    /// default) is found for the IPv4 connection the listener accepted.
    @Test func aDualStackClientIsFound() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        _ = try await Self.accepted(on: "127.0.0.1", connectingTo: "::ffff:127.0.0.1", group: group)
        try await group.shutdownGracefully()
    }

    @Test func aUnixSocketHasNoOwnerHere() throws {
        let unix = try SocketAddress(unixDomainSocketPath: "/tmp/x")
        #expect(SocketOwner.of(remote: unix, local: unix) == nil)
    }
}

/// The request and the answer as arrays, for the tests (bearerd writes and reads them in place).
extension SocketOwner {
    /// `nlmsghdr` and `inet_diag_req_v2` for the socket from `remote` to `local` (the sequence
    /// number 1); `nil` for an address that is not IP.
    static func query(remote: SocketAddress, local: SocketAddress) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: Self.queryLength)
        let written = bytes.withUnsafeMutableBytes { Self.write(remote: remote, local: local, into: $0) }
        return written ? bytes : nil
    }

    static func parse(_ answer: ArraySlice<UInt8>, asked query: [UInt8]) -> Owner? {
        answer.withUnsafeBytes { answer in query.withUnsafeBytes { Self.parse(answer, asked: $0) } }
    }
}

/// The kernel's answer, read as bytes: only a connected socket with the asked ports and
/// addresses, still held by a process, names its owner.
@Suite("inet_diag answers")
struct SocketOwnerParseTests {
    static func query() throws -> [UInt8] {
        try #require(
            SocketOwner.query(
                remote: try SocketAddress(ipAddress: "127.0.0.1", port: 40000),
                local: try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
            )
        )
    }

    /// The answer the kernel gives about the asked socket: `nlmsghdr`, then `inet_diag_msg`
    /// with the request's sockid, `state`, `uid` and `inode`.
    static func answer(to query: [UInt8], state: UInt8 = 1, uid: UInt32, inode: UInt32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16 + 72)
        bytes[0] = 88
        bytes[4] = 20
        bytes.replaceSubrange(8..<12, with: query[8..<12])
        bytes[16] = query[16]
        bytes[17] = state
        bytes.replaceSubrange(20..<56, with: query[24..<60])
        withUnsafeBytes(of: uid.littleEndian) { bytes.replaceSubrange(80..<84, with: $0) }
        withUnsafeBytes(of: inode.littleEndian) { bytes.replaceSubrange(84..<88, with: $0) }
        return bytes
    }

    /// The request as `struct nlmsghdr` and `struct inet_diag_req_v2` lay it out, byte by byte:
    /// the kernel answers a misplaced port or address with no socket, or with another one.
    @Test func theRequestIsLaidOutAsTheKernelReadsIt() throws {
        let header: [UInt8] = [72, 0, 0, 0, 20, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]
        let any: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF]
        let tail: [UInt8] = [0, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8)  // idiag_if, no cookie
        let v4 = try #require(
            SocketOwner.query(
                remote: try SocketAddress(ipAddress: "127.0.0.2", port: 40000),
                local: try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
            )
        )
        let zeros12 = [UInt8](repeating: 0, count: 12)
        #expect(
            v4 == header + [UInt8(AF_INET), 6, 0, 0] + any + [0x9C, 0x40, 0x1F, 0x90] + [127, 0, 0, 2] + zeros12
                + [127, 0, 0, 1] + zeros12 + tail
        )
        // A dual-stack client's mapped address is asked as the IPv4 socket it stands for.
        let mapped = try #require(
            SocketOwner.query(
                remote: try SocketAddress(ipAddress: "::ffff:127.0.0.2", port: 40000),
                local: try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
            )
        )
        #expect(mapped == v4)
        let v6 = try #require(
            SocketOwner.query(
                remote: try SocketAddress(ipAddress: "::1", port: 40000),
                local: try SocketAddress(ipAddress: "fe80::2", port: 8080)
            )
        )
        let loopback6 = [UInt8](repeating: 0, count: 15) + [1]
        let linkLocal = [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [2]
        #expect(
            v6 == header + [UInt8(AF_INET6), 6, 0, 0] + any + [0x9C, 0x40, 0x1F, 0x90] + loopback6 + linkLocal + tail
        )
        // Two families, or a unix socket: nothing to ask.
        #expect(
            SocketOwner.query(
                remote: try SocketAddress(ipAddress: "::1", port: 1),
                local: try SocketAddress(ipAddress: "127.0.0.1", port: 2)
            ) == nil
        )
        #expect(
            SocketOwner.query(
                remote: try SocketAddress(unixDomainSocketPath: "/tmp/x"),
                local: try SocketAddress(unixDomainSocketPath: "/tmp/x")
            ) == nil
        )
    }

    @Test func theAskedConnectedSocketNamesItsOwner() throws {
        let query = try Self.query()
        #expect(
            SocketOwner.parse(Self.answer(to: query, uid: 1000, inode: 4242)[...], asked: query)
                == .init(uid: 1000, inode: 4242)
        )
        // CLOSE_WAIT: the client shut its side down (an HTTP/1.0 client's half-close).
        #expect(
            SocketOwner.parse(Self.answer(to: query, state: 8, uid: 1000, inode: 1)[...], asked: query)?.uid == 1000
        )
    }

    @Test func aListenerAnOrphanAnotherSocketOrAnErrorNamesNobody() throws {
        let query = try Self.query()
        // The kernel's fallback for a socket it cannot find: a listener on the client's port.
        #expect(SocketOwner.parse(Self.answer(to: query, state: 10, uid: 1000, inode: 9)[...], asked: query) == nil)
        // A time-wait or orphaned socket: inode 0, reported as root's. Not root.
        #expect(SocketOwner.parse(Self.answer(to: query, uid: 0, inode: 0)[...], asked: query) == nil)
        var other = Self.answer(to: query, uid: 1000, inode: 4242)
        other[20] ^= 0xFF  // another source port
        #expect(SocketOwner.parse(other[...], asked: query) == nil)
        var error = Self.answer(to: query, uid: 0, inode: 7)
        error[4] = 2  // NLMSG_ERROR
        #expect(SocketOwner.parse(error[...], asked: query) == nil)
        var stale = Self.answer(to: query, uid: 1000, inode: 7)
        stale[8] = 99  // another request's answer
        #expect(SocketOwner.parse(stale[...], asked: query) == nil)
        #expect(SocketOwner.parse([1, 2, 3][...], asked: query) == nil)
    }

    /// A dual-stack client (an IPv6 socket to ::ffff:127.0.0.1, Java's and .NET's default) is
    /// answered in the IPv6 layout for an IPv4 question.
    @Test func aDualStackClientsMappedAddressIsItsIPv4One() throws {
        let query = try Self.query()
        var answer = Self.answer(to: query, uid: 1000, inode: 5)
        answer[16] = UInt8(AF_INET6)
        for start in [24, 40] {
            let v4 = Array(answer[start..<(start + 4)])
            answer.replaceSubrange(start..<(start + 16), with: [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + v4)
        }
        #expect(SocketOwner.parse(answer[...], asked: query)?.uid == 1000)
    }

    /// The netlink socket is the thread's own and kept: two thousand questions on one thread
    /// ask on one socket, and each answer is to its own question (a stranger's address, asked in
    /// between, gets none).
    @Test func aThreadAsksOnOneNetlinkSocketAndEachAnswerIsItsOwn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { Task { try? await group.shutdownGracefully() } }
        let server = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let client = try await ClientBootstrap(group: group).connect(to: server.localAddress!).get()
        let remote = try #require(client.localAddress)
        let local = try #require(client.remoteAddress)
        let stranger = try SocketAddress(ipAddress: "127.0.0.1", port: 9)
        // On one thread, as an event loop asks.
        let (same, answers, strangers) = try await group.next().submit {
            _ = SocketOwner.of(remote: remote, local: local)
            let first = SocketOwner.Netlink.ofThisThread().map(ObjectIdentifier.init)
            var answers = 0
            var strangers = 0
            for _ in 0..<1000 {
                if SocketOwner.of(remote: remote, local: local)?.uid == getuid() { answers += 1 }
                if SocketOwner.of(remote: stranger, local: local) != nil { strangers += 1 }
            }
            let last = SocketOwner.Netlink.ofThisThread().map(ObjectIdentifier.init)
            return (first != nil && first == last, answers, strangers)
        }.get()
        #expect(same, "the thread's netlink socket was not kept")
        #expect(answers == 1000)
        #expect(strangers == 0)
        try await client.close()
        try await server.close()
    }
}

/// Which peers are on the loopback network: a connection to a loopback address from anywhere
/// else (CVE-2020-8558) is closed at accept.
@Suite("Loopback peers")
struct LoopbackPeerTests {
    @Test(arguments: [
        ("127.0.0.1", true), ("127.255.0.9", true), ("10.0.0.1", false), ("128.0.0.1", false),
        ("::1", true), ("::2", false), ("::ffff:127.0.0.1", true), ("::ffff:10.0.0.1", false),
        ("fe80::1", false), ("1::1", false),
    ])
    func aPeerIsLoopbackByItsAddress(address: String, loopback: Bool) throws {
        #expect(try SocketAddress(ipAddress: address, port: 1).isLoopbackPeer == loopback)
    }

    @Test func aUnixSocketsPeerIsLocal() throws {
        #expect(try SocketAddress(unixDomainSocketPath: "/tmp/x").isLoopbackPeer)
    }
}
