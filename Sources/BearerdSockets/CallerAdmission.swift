import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Who may use a listener, from `socket_allow_uids`, `socket_allow_gids` and
/// `socket_allow_any_user`: the users and groups the lists name; with both lists empty, bearerd's
/// own uid and root (who can read its store anyway), nobody else; with `socket_allow_any_user`,
/// anyone who can reach the listener, each acting as the identity bearerd holds.
package struct CallerAdmission: Sendable, Equatable {
    package var uids: Set<UInt32>
    package var gids: Set<UInt32>
    package var anyUser: Bool
    /// The uids admitted: the list's, or bearerd's own and root's when neither list names anyone.
    package let admittedUIDs: Set<UInt32>

    package init(uids: Set<UInt32>, gids: Set<UInt32>, anyUser: Bool, ownUID: UInt32 = getuid()) {
        self.uids = uids
        self.gids = gids
        self.anyUser = anyUser
        self.admittedUIDs = uids.isEmpty && gids.isEmpty ? [0, ownUID] : uids
    }

    /// Whether the caller must be known to decide (everything but `socket_allow_any_user`).
    package var needsCaller: Bool { !self.anyUser }

    /// Whether `caller` may use the listener; an unknown caller only under `socket_allow_any_user`.
    package func admits(_ caller: Caller?) -> Bool {
        if self.anyUser { return true }
        guard let caller else { return false }
        return caller.isListed(uids: self.admittedUIDs, gids: self.gids)
    }

    /// Whether deciding on `caller` needs its account's groups looked up first (off the loop).
    package func needsGroups(_ caller: Caller) -> Bool {
        !self.anyUser && caller.needsGroups(uids: self.admittedUIDs, gids: self.gids)
    }
}

extension SocketAddress {
    /// Whether this peer address is on the loopback network: 127.0.0.0/8, ::1, or an IPv4
    /// loopback address mapped into IPv6. A unix socket's peer counts as local.
    package var isLoopbackPeer: Bool {
        // The raw sockaddr, read by offset as the kernel lays it out: sin_addr at 4 (its first
        // byte the network's first), sin6_addr at 8. Read in place: this runs per connection.
        self.withSockAddr { pointer, size -> Bool in
            let raw = UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: size)
            switch self {
            case .v4:
                return raw.count >= 8 && raw[4] == 127
            case .v6:
                guard raw.count >= 24 else { return false }
                if (8..<23).allSatisfy({ raw[$0] == 0 }) && raw[23] == 1 { return true }
                let mapped = (8..<18).allSatisfy({ raw[$0] == 0 }) && raw[18] == 0xFF && raw[19] == 0xFF
                return mapped && raw[20] == 127
            case .unixDomainSocket:
                return true
            }
        }
    }
}
