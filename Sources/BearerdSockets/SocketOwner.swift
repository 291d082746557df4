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
        Netlink.ofThisThread()?.ask(remote: remote, local: local)
    }

    /// The length of the request: `nlmsghdr` (16 bytes) and `inet_diag_req_v2` (56).
    static let queryLength = 72

    /// The thread's netlink socket, kept for its life, with the buffers of its question and
    /// answer: asking allocates nothing.
    final class Netlink {
        private(set) var descriptor: Int32
        var sequence: UInt32 = 0
        private let query = UnsafeMutableRawBufferPointer.allocate(byteCount: SocketOwner.queryLength, alignment: 8)
        private let answer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)

        /// Takes an open socket: an initializer that failed after its buffers were allocated
        /// would still run `deinit`, and free them twice.
        private init(descriptor: Int32) {
            self.descriptor = descriptor
        }

        deinit {
            if self.descriptor >= 0 { close(self.descriptor) }
            self.query.deallocate()
            self.answer.deallocate()
        }

        /// One question and its answer: an answer to an earlier question that came after its
        /// timeout is read past (at most a few).
        func ask(remote: SocketAddress, local: SocketAddress) -> Owner? {
            guard SocketOwner.write(remote: remote, local: local, into: self.query) else { return nil }
            self.sequence = self.sequence == UInt32.max ? 1 : self.sequence + 1
            self.query.storeBytes(of: self.sequence.littleEndian, toByteOffset: 8, as: UInt32.self)
            let sent = send(self.descriptor, self.query.baseAddress, self.query.count, 0)
            guard sent == self.query.count else {
                self.reset()
                return nil
            }
            for _ in 0..<4 {
                let count = recv(self.descriptor, self.answer.baseAddress, self.answer.count, 0)
                // A timeout: the answer may still come; the next question reads past it.
                guard count >= 16 else { return nil }
                guard SocketOwner.uint32(UnsafeRawBufferPointer(self.answer), at: 8) == self.sequence else { continue }
                return SocketOwner.parse(
                    UnsafeRawBufferPointer(rebasing: self.answer[..<count]),
                    asked: UnsafeRawBufferPointer(self.query)
                )
            }
            return nil
        }

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
            let descriptor = Self.open()
            guard descriptor >= 0 else { return nil }
            let netlink = Netlink(descriptor: descriptor)
            pthread_setspecific(Self.key, Unmanaged.passRetained(netlink).toOpaque())
            return netlink
        }
    }

    /// Writes the request for the socket from `remote` to `local` into `query`
    /// (``queryLength`` bytes); `false` for an address that is not IP, or two families.
    static func write(remote: SocketAddress, local: SocketAddress, into query: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(query.count >= Self.queryLength)
        query.initializeMemory(as: UInt8.self, repeating: 0)
        // The sockid after the header (16), family, protocol, ext, pad and states (8):
        // idiag_sport and idiag_src at 24 and 28, idiag_dport and idiag_dst at 26 and 44.
        guard let family = Self.writeEndpoint(remote, portAt: 24, addressAt: 28, into: query),
            Self.writeEndpoint(local, portAt: 26, addressAt: 44, into: query) == family
        else { return false }
        query.storeBytes(of: UInt32(Self.queryLength).littleEndian, toByteOffset: 0, as: UInt32.self)  // nlmsg_len
        query.storeBytes(of: Self.byFamily.littleEndian, toByteOffset: 4, as: UInt16.self)  // nlmsg_type
        // nlmsg_flags: one socket, not a dump.
        query.storeBytes(of: Self.request.littleEndian, toByteOffset: 6, as: UInt16.self)
        query.storeBytes(of: UInt32(1).littleEndian, toByteOffset: 8, as: UInt32.self)  // nlmsg_seq
        // nlmsg_pid 0: the kernel.
        query[16] = family  // sdiag_family
        query[17] = UInt8(IPPROTO_TCP)  // sdiag_protocol; idiag_ext and pad stay 0
        query.storeBytes(of: UInt32.max, toByteOffset: 20, as: UInt32.self)  // idiag_states: any
        // idiag_if 0; idiag_cookie: INET_DIAG_NOCOOKIE.
        query.storeBytes(of: UInt32.max, toByteOffset: 64, as: UInt32.self)
        query.storeBytes(of: UInt32.max, toByteOffset: 68, as: UInt32.self)
        return true
    }

    /// The TCP states of a client socket still connected to us: ESTABLISHED, FIN_WAIT1,
    /// FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING. Not LISTEN: for a socket it
    /// cannot find, the kernel answers with a listener on the client's address and port (a
    /// remote peer choosing the source port of a local service would pass for its owner), and
    /// not the states of a socket its process let go of.
    static func isConnected(state: UInt8) -> Bool {
        switch state {
        case 1, 4, 5, 8, 9, 11: return true
        default: return false
        }
    }

    /// The owner the kernel's answer names, if it is about the socket `query` asked for: our
    /// sequence number, a connected state, the same ports and addresses (an IPv6 socket's
    /// IPv4-mapped address standing for the IPv4 one), and an inode. A socket no process holds
    /// any more (closed by its owner: a time-wait or orphaned socket) has inode 0 and reports
    /// uid 0, root's: it names nobody, or a client that connects, sends and closes at once
    /// would pass for root.
    static func parse(_ bytes: UnsafeRawBufferPointer, asked query: UnsafeRawBufferPointer) -> Owner? {
        guard bytes.count >= 16 + 72, query.count >= 16 + 56 else { return nil }
        let length = Int(Self.uint32(bytes, at: 0))
        let type = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
        guard type == Self.byFamily, length >= 16 + 72, length <= bytes.count,
            Self.uint32(bytes, at: 8) == Self.uint32(query, at: 8)
        else { return nil }
        let message = 16
        guard Self.isConnected(state: bytes[message + 1]) else { return nil }
        // Ports: the sockid's first four bytes, in the answer and in the request (offset 8).
        guard Self.equal(bytes, at: message + 4, query, at: 16 + 8, count: 4) else { return nil }
        let family = bytes[message]
        let queried = query[16]
        guard Self.sameAddress(bytes, at: message + 8, family: family, query, at: 16 + 12, family: queried),
            Self.sameAddress(bytes, at: message + 24, family: family, query, at: 16 + 28, family: queried)
        else { return nil }
        let inode = Self.uint32(bytes, at: message + 68)
        guard inode != 0 else { return nil }
        return Owner(uid: Self.uint32(bytes, at: message + 64), inode: inode)
    }

    /// Whether two `inet_diag_sockid` addresses (16 bytes each) are one: equal, or an
    /// IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a dual-stack client's socket holds) and
    /// the IPv4 address.
    static func sameAddress(
        _ answer: UnsafeRawBufferPointer,
        at answerAt: Int,
        family: UInt8,
        _ asked: UnsafeRawBufferPointer,
        at askedAt: Int,
        family queried: UInt8
    ) -> Bool {
        if family == queried { return Self.equal(answer, at: answerAt, asked, at: askedAt, count: 16) }
        guard family == UInt8(AF_INET6), queried == UInt8(AF_INET) else { return false }
        return (0..<10).allSatisfy { answer[answerAt + $0] == 0 } && answer[answerAt + 10] == 0xFF
            && answer[answerAt + 11] == 0xFF && Self.equal(answer, at: answerAt + 12, asked, at: askedAt, count: 4)
    }

    private static func equal(
        _ a: UnsafeRawBufferPointer,
        at aAt: Int,
        _ b: UnsafeRawBufferPointer,
        at bAt: Int,
        count: Int
    ) -> Bool {
        (0..<count).allSatisfy { a[aAt + $0] == b[bAt + $0] }
    }

    /// Writes an address as `inet_diag_sockid` holds it: the port (network order, as in the
    /// sockaddr) at `portAt`, 16 bytes of address at `addressAt` (IPv4 in the first four); an
    /// IPv4-mapped IPv6 address is the IPv4 socket it stands for. Returns the family, `nil` for
    /// an address that is not IP.
    static func writeEndpoint(
        _ address: SocketAddress,
        portAt: Int,
        addressAt: Int,
        into query: UnsafeMutableRawBufferPointer
    ) -> UInt8? {
        // The raw sockaddr: the family's structs are read by offset (sin_port and sin6_port at
        // 2, sin_addr at 4, sin6_addr at 8), as the kernel lays them out.
        address.withSockAddr { pointer, size -> UInt8? in
            let raw = UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: size)
            guard raw.count >= 8 else { return nil }
            query[portAt] = raw[2]
            query[portAt + 1] = raw[3]
            switch address {
            case .v4:
                for offset in 0..<4 { query[addressAt + offset] = raw[4 + offset] }
                return UInt8(AF_INET)
            case .v6:
                guard raw.count >= 24 else { return nil }
                let mapped = (8..<18).allSatisfy { raw[$0] == 0 } && raw[18] == 0xFF && raw[19] == 0xFF
                if mapped {
                    for offset in 0..<4 { query[addressAt + offset] = raw[20 + offset] }
                    return UInt8(AF_INET)
                }
                for offset in 0..<16 { query[addressAt + offset] = raw[8 + offset] }
                return UInt8(AF_INET6)
            case .unixDomainSocket:
                return nil
            }
        }
    }

    static func uint32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}
