import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Who owns the other end of a TCP connection made on this host: the kernel's socket table,
/// asked through `NETLINK_SOCK_DIAG` (`inet_diag`, as `ss -te` shows it) for the one socket whose
/// source is the connection's remote address and whose destination is its local address.
///
/// One request and one answer on a netlink socket, a few microseconds, made once per accepted
/// connection and bounded by a 100 ms receive timeout. The socket is the thread's own (an event
/// loop's), opened on its first question and kept: each question carries its own sequence number,
/// and an answer to an earlier one that came after its timeout is read past. The kernel answers
/// any user: no capability is needed. A peer on another machine, or in another network
/// namespace, has no such socket here: its owner is `nil`.
package enum SocketOwner {
    /// The owner's uid and the socket's inode (which `/proc/PID/fd` links name).
    package struct Owner: Sendable, Equatable {
        package var uid: UInt32
        package var inode: UInt32

        package init(uid: UInt32, inode: UInt32) {
            self.uid = uid
            self.inode = inode
        }
    }

    static let netlinkFamily: Int32 = 16  // AF_NETLINK
    static let sockDiag: Int32 = 4  // NETLINK_SOCK_DIAG
    static let byFamily: UInt16 = 20  // SOCK_DIAG_BY_FAMILY
    static let request: UInt16 = 1  // NLM_F_REQUEST
    static let errorType: UInt16 = 2  // NLMSG_ERROR

    /// The owner of the socket at `remote`, connected to `local` (the accepted socket's own
    /// addresses), or `nil` when the kernel knows of none here.
    package static func of(remote: SocketAddress, local: SocketAddress) -> Owner? {
        guard var query = Self.query(remote: remote, local: local), let netlink = Netlink.ofThisThread() else {
            return nil
        }
        netlink.sequence = netlink.sequence == UInt32.max ? 1 : netlink.sequence + 1
        withUnsafeBytes(of: netlink.sequence.littleEndian) { query.replaceSubrange(8..<12, with: $0) }
        let sent = query.withUnsafeBytes { send(netlink.descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == query.count else {
            netlink.reset()
            return nil
        }
        // A late answer to an earlier question is read past; at most a few.
        for _ in 0..<4 {
            let count = netlink.answer.withUnsafeMutableBytes { recv(netlink.descriptor, $0.baseAddress, $0.count, 0) }
            guard count >= 16 else {
                // A timeout: the answer may still come; the next question reads past it.
                return nil
            }
            guard Self.uint32(netlink.answer, at: 8) == netlink.sequence else { continue }
            return Self.parse(netlink.answer[..<count], asked: query)
        }
        return nil
    }

    /// The thread's netlink socket, kept for its life.
    final class Netlink {
        private(set) var descriptor: Int32
        var sequence: UInt32 = 0
        var answer = [UInt8](repeating: 0, count: 1024)

        private init?() {
            self.descriptor = Self.open()
            guard self.descriptor >= 0 else { return nil }
        }

        deinit { if self.descriptor >= 0 { close(self.descriptor) } }

        private static func open() -> Int32 {
            let descriptor = socket(
                SocketOwner.netlinkFamily,
                Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                SocketOwner.sockDiag
            )
            guard descriptor >= 0 else { return -1 }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            return descriptor
        }

        /// A socket that failed to send is opened anew for the next question.
        func reset() {
            if self.descriptor >= 0 { close(self.descriptor) }
            self.descriptor = Self.open()
        }

        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            pthread_key_create(&key) { pointer in
                guard let pointer else { return }
                Unmanaged<Netlink>.fromOpaque(pointer).release()
            }
            return key
        }()

        /// This thread's, opened on first use.
        static func ofThisThread() -> Netlink? {
            if let pointer = pthread_getspecific(Self.key) {
                let netlink = Unmanaged<Netlink>.fromOpaque(pointer).takeUnretainedValue()
                if netlink.descriptor < 0 { netlink.reset() }
                return netlink.descriptor >= 0 ? netlink : nil
            }
            guard let netlink = Netlink() else { return nil }
            pthread_setspecific(Self.key, Unmanaged.passRetained(netlink).toOpaque())
            return netlink
        }
    }

    /// `nlmsghdr` and `inet_diag_req_v2` for the socket from `remote` to `local`; `nil` for an
    /// address that is not IP.
    static func query(remote: SocketAddress, local: SocketAddress) -> [UInt8]? {
        guard let source = Self.endpoint(remote), let destination = Self.endpoint(local),
            source.family == destination.family
        else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(72)
        Self.append(UInt32(72), to: &bytes)  // nlmsg_len
        Self.append(Self.byFamily, to: &bytes)  // nlmsg_type
        Self.append(Self.request, to: &bytes)  // nlmsg_flags: one socket, not a dump
        Self.append(UInt32(1), to: &bytes)  // nlmsg_seq
        Self.append(UInt32(0), to: &bytes)  // nlmsg_pid: the kernel
        bytes += [source.family, UInt8(IPPROTO_TCP), 0, 0]  // family, protocol, ext, pad
        Self.append(UInt32.max, to: &bytes)  // idiag_states: any
        bytes += [UInt8(source.port >> 8), UInt8(source.port & 0xFF)]  // idiag_sport, big-endian
        bytes += [UInt8(destination.port >> 8), UInt8(destination.port & 0xFF)]
        bytes += source.address + destination.address  // idiag_src, idiag_dst: 16 bytes each
        Self.append(UInt32(0), to: &bytes)  // idiag_if
        Self.append(UInt32.max, to: &bytes)  // idiag_cookie: INET_DIAG_NOCOOKIE
        Self.append(UInt32.max, to: &bytes)
        return bytes
    }

    /// The TCP states of a client socket still connected to us: ESTABLISHED, FIN_WAIT1,
    /// FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING. Not LISTEN: for a socket it
    /// cannot find, the kernel answers with a listener on the client's address and port (a
    /// remote peer choosing the source port of a local service would pass for its owner), and
    /// not the states of a socket its process let go of.
    static let connectedStates: Set<UInt8> = [1, 4, 5, 8, 9, 11]

    /// The owner the kernel's answer names, if it is about the socket `query` asked for: our
    /// sequence number, a connected state, the same ports and addresses (an IPv6 socket's
    /// IPv4-mapped address standing for the IPv4 one), and an inode. A socket no process holds
    /// any more (closed by its owner: a time-wait or orphaned socket) has inode 0 and reports
    /// uid 0, root's: it names nobody, or a client that connects, sends and closes at once
    /// would pass for root.
    static func parse(_ answer: ArraySlice<UInt8>, asked query: [UInt8]) -> Owner? {
        let bytes = Array(answer)
        guard bytes.count >= 16 + 72, query.count >= 16 + 56 else { return nil }
        let length = Int(Self.uint32(bytes, at: 0))
        let type = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
        guard type == Self.byFamily, length >= 16 + 72, length <= bytes.count,
            Self.uint32(bytes, at: 8) == Self.uint32(query, at: 8)
        else { return nil }
        let message = 16
        guard Self.connectedStates.contains(bytes[message + 1]) else { return nil }
        // Ports: the sockid's first four bytes, in the answer and in the request (offset 8).
        guard bytes[(message + 4)..<(message + 8)].elementsEqual(query[(16 + 8)..<(16 + 12)]) else { return nil }
        let family = bytes[message]
        let queried = query[16]
        for (answerAt, queryAt) in [(message + 8, 16 + 12), (message + 24, 16 + 28)] {
            let address = Array(bytes[answerAt..<(answerAt + 16)])
            let asked = Array(query[queryAt..<(queryAt + 16)])
            guard Self.sameAddress(address, family: family, asked, family: queried) else { return nil }
        }
        let inode = Self.uint32(bytes, at: message + 68)
        guard inode != 0 else { return nil }
        return Owner(uid: Self.uint32(bytes, at: message + 64), inode: inode)
    }

    /// Whether two `inet_diag_sockid` addresses are one: equal, or an IPv4-mapped IPv6 address
    /// (`::ffff:a.b.c.d`, what a dual-stack client's socket holds) and the IPv4 address.
    static func sameAddress(_ answer: [UInt8], family: UInt8, _ asked: [UInt8], family queried: UInt8) -> Bool {
        if family == queried { return answer == asked }
        guard family == UInt8(AF_INET6), queried == UInt8(AF_INET) else { return false }
        return answer[0..<10].allSatisfy { $0 == 0 } && answer[10] == 0xFF && answer[11] == 0xFF
            && answer[12..<16].elementsEqual(asked[0..<4])
    }

    /// An address as `inet_diag_sockid` holds it: family, port, 16 bytes (IPv4 in the first
    /// four). An IPv4-mapped IPv6 address is the IPv4 socket it stands for.
    static func endpoint(_ address: SocketAddress) -> (family: UInt8, port: UInt16, address: [UInt8])? {
        // The raw sockaddr: the family's structs are read by offset (sin_port and sin6_port at
        // 2, sin_addr at 4, sin6_addr at 8), as the kernel lays them out.
        let raw: [UInt8] = address.withSockAddr { pointer, size in
            Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: size))
        }
        guard raw.count >= 8 else { return nil }
        let port = UInt16(raw[2]) << 8 | UInt16(raw[3])
        switch address {
        case .v4:
            return (UInt8(AF_INET), port, Array(raw[4..<8]) + [UInt8](repeating: 0, count: 12))
        case .v6:
            guard raw.count >= 24 else { return nil }
            let octets = Array(raw[8..<24])
            if octets[0..<10].allSatisfy({ $0 == 0 }) && octets[10] == 0xFF && octets[11] == 0xFF {
                return (UInt8(AF_INET), port, Array(octets[12..<16]) + [UInt8](repeating: 0, count: 12))
            }
            return (UInt8(AF_INET6), port, octets)
        case .unixDomainSocket:
            return nil
        }
    }

    private static func append<Value: FixedWidthInteger>(_ value: Value, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}
