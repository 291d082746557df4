import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a unix socket connection (`SO_PEERCRED`, from the kernel).
package enum PeerCredentials {
    /// Whether the peer runs as this process's user or as root (the admin socket). The socket's
    /// mode already says so; this holds even if the mode or the directory is later made wider.
    package static func isOwnerOrRoot(_ channel: any Channel) -> EventLoopFuture<Bool> {
        Self.check(channel) { $0.uid == 0 || $0.uid == getuid() }
    }

    /// The peer of a unix socket: uid, gid and pid; `nil` if the kernel does not say.
    package static func caller(_ channel: any Channel) -> EventLoopFuture<Caller?> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.map { Optional(Caller(uid: $0.uid, gid: $0.gid, pid: $0.pid)) }.recover { _ in nil }
    }

    /// The uid the peer ran as when it connected or listened, or `nil` if the kernel does not
    /// say (not a unix socket). The CLI asks it of the admin socket's server.
    package static func uid(_ channel: any Channel) -> EventLoopFuture<UInt32?> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.map { Optional($0.uid) }.recover { _ in nil }
    }

    private static func check(
        _ channel: any Channel,
        _ rule: @escaping @Sendable (UCred) -> Bool
    ) -> EventLoopFuture<Bool> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(false)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.map(rule).recover { _ in false }
    }

    /// Linux's `struct ucred`, which Swift's Glibc module does not export (it needs
    /// `_GNU_SOURCE`): three 32-bit fields, laid out the same.
    struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }
}
