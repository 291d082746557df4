import BearerdFiles
import BearerdSockets
import Foundation
import Logging
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

    package init(
        path: String,
        api: AdminAPI,
        group: any EventLoopGroup,
        logger: Logger,
        onReady: @escaping @Sendable () -> Void = {}
    ) {
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
        let temporary = UnixSocketFile.temporaryPath(for: self.path)
        let server: AdminHTTP.Accepted
        do {
            server = try await ServerBootstrap(group: self.group)
                .serverChannelOption(.backlog, value: 16)
                .bind(to: try UnixSocketFile.address(temporary)) { channel in
                    PeerCredentials.isOwnerOrRoot(channel).flatMapThrowing { allowed -> (any Channel)? in
                        guard allowed else {
                            channel.close(promise: nil)
                            return nil
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
                mode: 0o600,
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

extension AdminServer: CustomStringConvertible {
    /// What service-lifecycle logs: the name and socket, not a dump of the API behind it.
    package var description: String { "AdminServer(\(self.path))" }
}
