import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a unix socket connection (`SO_PEERCRED`, from the kernel).
enum PeerCredentials {
    /// Whether the peer runs as this process's user or as root. The socket's mode already says
    /// so; this holds even if the mode or the directory is later made wider by mistake.
    static func isAllowed(_ channel: any Channel) -> EventLoopFuture<Bool> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(false)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.map { $0.uid == 0 || $0.uid == getuid() }.recover { _ in false }
    }

    /// Linux's `struct ucred`, which Swift's Glibc module does not export (it needs
    /// `_GNU_SOURCE`): three 32-bit fields, laid out the same.
    struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }
}
