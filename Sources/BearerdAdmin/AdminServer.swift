import BearerdFiles
import BearerdSockets
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The admin socket as a `Service`: HTTP/1.1 on a unix socket that only the daemon's own user
/// (and root) may use — mode 0600 from the moment it appears, and each connection's peer
/// checked with `SO_PEERCRED`. `bearerd login`, `logout`, `status` and `token` talk to it, so
/// that one process alone ever refreshes the session.
package struct AdminServer: Service {
    private let path: String
    private let api: AdminAPI
    private let group: any EventLoopGroup
    private let logger: Logger
    private let onReady: @Sendable () -> Void
    /// A session has `per_caller: true`: other local users may connect too (mode 0666, the
    /// directory searchable), each call then authorised by the peer's uid (``AdminAPI/Asker``).
    private let openToCallers: Bool

    /// At most this many connections of users other than root and bearerd's own at once, and
    /// this many of any one of them.
    package static let maxCallerConnections = 64
    package static let maxConnectionsPerCaller = 4
    /// Such a connection idle this long between requests is closed (``AdminHTTP``).
    package static let callerIdleTimeout = Duration.seconds(30)

    package init(
        path: String,
        api: AdminAPI,
        group: any EventLoopGroup,
        logger: Logger,
        openToCallers: Bool = false,
        onReady: @escaping @Sendable () -> Void = {}
    ) {
        self.openToCallers = openToCallers
        self.path = path
        self.api = api
        self.group = group
        self.logger = logger
        self.onReady = onReady
    }

    package func run() async throws {
        // The CLI refuses a socket in a directory others could have put one in first: so does
        // the daemon, at once, rather than serve where no command will talk to it.
        let directory = CheckedDirectory.directoryName(of: self.path)
        if let problem = SocketTrust(daemonAccount: geteuid()).directoryProblem(directory) {
            throw SocketSetupError("admin.socket: \(problem)")
        }
        try UnixSocketFile.checkReplaceable(self.path, key: "admin.socket")
        if self.openToCallers { self.openDirectory(directory) }
        let openToCallers = self.openToCallers
        let api = self.api
        let callers = NIOLockedValueBox((total: 0, byUID: [UInt32: Int]()))
        let temporary = UnixSocketFile.temporaryPath(for: self.path)
        let server: AdminHTTP.Accepted
        do {
            server = try await ServerBootstrap(group: self.group)
                .serverChannelOption(.backlog, value: 16)
                .bind(to: try UnixSocketFile.address(temporary)) { channel in
                    PeerCredentials.caller(channel).flatMapThrowing { caller -> (any Channel)? in
                        guard let caller else {
                            channel.close(promise: nil)
                            return nil
                        }
                        if caller.uid != 0 && caller.uid != getuid() {
                            // Another user: only to a per_caller session, a bounded number at once.
                            // Only while a per_caller session runs (a reload may have removed it).
                            let uid = caller.uid
                            let admitted =
                                openToCallers && api.servesCallers
                                && callers.withLockedValue { open in
                                    guard open.total < Self.maxCallerConnections,
                                        open.byUID[uid, default: 0] < Self.maxConnectionsPerCaller
                                    else { return false }
                                    open.total += 1
                                    open.byUID[uid, default: 0] += 1
                                    return true
                                }
                            guard admitted else {
                                channel.close(promise: nil)
                                return nil
                            }
                            channel.closeFuture.whenComplete { _ in
                                callers.withLockedValue { open in
                                    open.total -= 1
                                    open.byUID[uid, default: 1] -= 1
                                    if open.byUID[uid] == 0 { open.byUID[uid] = nil }
                                }
                            }
                        }
                        return try AdminHTTP.prepare(channel)
                    }
                }
        } catch {
            UnixSocketFile.remove(temporary)
            throw SocketSetupError(
                "admin.socket: cannot listen on \(self.path): \(error); check that its directory exists and bearerd may write there"
            )
        }
        do {
            try UnixSocketFile.publish(
                temporary: temporary,
                final: self.path,
                mode: self.openToCallers ? 0o666 : 0o600,
                group: nil,
                key: "admin.socket"
            )
        } catch {
            try? await server.channel.close()
            UnixSocketFile.remove(temporary)
            throw error
        }
        self.logger.info("admin socket ready", metadata: ["path": "\(self.path)"])
        self.onReady()
        defer { UnixSocketFile.remove(self.path) }
        await AdminHTTP(api: self.api, exposure: .admin).serve(server)
    }
}

extension AdminServer {
    /// Lets other users reach the socket: its directory searchable by others (not listable, not
    /// writable) when it is bearerd's runtime directory (systemd's `RuntimeDirectory=`, made
    /// 0700, or one under /run) and bearerd's own. Any other directory is left as it is: its
    /// mode may be what keeps other files in it private.
    private func openDirectory(_ directory: String) {
        let runtime = (ProcessInfo.processInfo.environment["RUNTIME_DIRECTORY"] ?? "").split(separator: ":")
        let name = (directory as NSString).lastPathComponent
        guard
            runtime.contains(where: { String($0) == directory })
                || ((directory as NSString).deletingLastPathComponent == "/run" && name.hasPrefix("bearerd"))
        else { return }
        var info = stat()
        guard stat(directory, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o011 != 0o011 else { return }
        if chmod(directory, mode_t(info.st_mode & 0o7777) | 0o011) == 0 {
            self.logger.notice(
                "a session is per_caller: the admin socket's directory is now searchable by other users, who may each log in for themselves",
                metadata: ["directory": "\(directory)"]
            )
        } else {
            self.logger.warning(
                "a session is per_caller, but the admin socket's directory cannot be made searchable: other users cannot log in",
                metadata: ["directory": "\(directory)"]
            )
        }
    }
}

extension AdminServer: CustomStringConvertible {
    /// What service-lifecycle logs: the name and socket, not a dump of the API behind it.
    package var description: String { "AdminServer(\(self.path))" }
}
