import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The local process at the other end of a proxy connection, as the kernel tells it: the uid
/// always; on a unix socket also its primary gid and pid (`SO_PEERCRED`); on TCP the uid that owns
/// the client's socket (``SocketOwner``). Found once per connection.
package struct Caller: Sendable, Equatable {
    package var uid: UInt32
    /// `SO_PEERCRED`'s gid; `nil` on TCP, where the uid's groups stand for it.
    package var gid: UInt32?
    /// `SO_PEERCRED`'s pid; `nil` on TCP (finding it means reading every process's descriptors).
    package var pid: Int32?

    package init(uid: UInt32, gid: UInt32? = nil, pid: Int32? = nil) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }

    /// The owner of a TCP connection's client socket, when it is on this host and the
    /// connection still stands once the kernel has named it: had the client reset it, another
    /// process's new connection could have taken its addresses and ports in between.
    package static func ofTCP(_ channel: any Channel) -> EventLoopFuture<Caller?> {
        if channel.eventLoop.inEventLoop { return channel.eventLoop.makeSucceededFuture(Self.ofTCPNow(channel)) }
        return channel.eventLoop.submit { Self.ofTCPNow(channel) }
    }

    /// ``ofTCP(_:)`` on the channel's event loop, without a future: one netlink request and one
    /// getsockopt(2), asked of a connection as it is accepted.
    package static func ofTCPNow(_ channel: any Channel) -> Caller? {
        channel.eventLoop.preconditionInEventLoop()
        guard let remote = channel.remoteAddress, let local = channel.localAddress,
            let owner = SocketOwner.of(remote: remote, local: local)
        else { return nil }
        // `struct tcp_info` begins with the state, and the kernel copies as much of it as is
        // asked for: an option read as a C int holds the state in its first byte.
        let info = ChannelOptions.Types.SocketOption(level: SocketOptionLevel(IPPROTO_TCP), name: TCP_INFO)
        guard let value = try? channel.syncOptions?.getOption(info) else { return nil }
        let state = withUnsafeBytes(of: value) { $0[0] }
        return state == 1 || state == 8 ? Caller(uid: owner.uid) : nil  // ESTABLISHED, CLOSE_WAIT
    }

    /// Whether `socket_allow_uids` / `socket_allow_gids` let this caller in: its uid, its gid (a
    /// unix socket's peer), or any group of its uid's account, on either kind of socket
    /// (`adduser alice bearerd` counts for a unix socket too).
    package func isListed(uids: Set<UInt32>, gids: Set<UInt32>) -> Bool {
        if uids.contains(self.uid) { return true }
        guard !gids.isEmpty else { return false }
        if let gid = self.gid, gids.contains(gid) { return true }
        // Looked up off the event loop beforehand (`needsGroups`); not found: not listed.
        return !gids.isDisjoint(with: AccountGroups.shared.cached(self.uid) ?? [])
    }

    /// Whether checking this caller against `gids` needs its account's groups looked up first
    /// (a caller listed neither by uid nor by its socket's gid, whose groups are not known yet).
    package func needsGroups(uids: Set<UInt32>, gids: Set<UInt32>) -> Bool {
        !gids.isEmpty && !uids.contains(self.uid) && !(self.gid.map(gids.contains) ?? false)
            && AccountGroups.shared.cached(self.uid) == nil
    }

    /// The program the process runs (`/proc/PID/exe`), when it can be read: the process may
    /// have gone, or belong to a user bearerd may not look at.
    package var executable: String? {
        guard let pid = self.pid, pid > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
