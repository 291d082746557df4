import BearerdProxy
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
public struct AdminServer: Service {
    private let path: String
    private let api: AdminAPI
    private let group: any EventLoopGroup
    private let logger: Logger
    private let onReady: @Sendable () -> Void

    public init(
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

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    public func run() async throws {
        try UnixSocketFile.checkReplaceable(self.path, key: "admin.socket")
        let temporary = UnixSocketFile.temporaryPath(for: self.path)
        let server: NIOAsyncChannel<Connection?, Never>
        do {
            server = try await ServerBootstrap(group: self.group)
                .serverChannelOption(.backlog, value: 16)
                .bind(unixDomainSocketPath: temporary, cleanupExistingSocketFile: true) { channel in
                    PeerCredentials.isAllowed(channel).flatMapThrowing { allowed -> Connection? in
                        guard allowed else {
                            channel.close(promise: nil)
                            return nil
                        }
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        return try Connection(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            UnixSocketFile.remove(temporary)
            throw ProxySetupError(
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
        // A device login may wait minutes for a person: at shutdown, admin requests are
        // cancelled rather than waited for (a refresh they started finishes on its own).
        try? await cancelWhenGracefulShutdown {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        guard let connection else { continue }
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        }
    }

    /// Requests on one connection, one after another (keep-alive).
    private func serve(_ connection: Connection) async {
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = Data()
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let next):
                    head = next
                    body.removeAll(keepingCapacity: true)
                    tooLarge = false
                case .body(let buffer):
                    if body.count + buffer.readableBytes > AdminAPI.maxBody {
                        tooLarge = true
                    } else {
                        body.append(contentsOf: buffer.readableBytesView)
                    }
                case .end:
                    guard let request = head else { return }
                    head = nil
                    let keepAlive = request.isKeepAlive && !tooLarge
                    if tooLarge {
                        let answer = AdminAPI.failure(.payloadTooLarge, "too_large", "the request body is too large")
                        try await Self.write(answer, keepAlive: false, to: outbound)
                    } else if AdminAPI.isDeviceLogin(method: request.method, path: request.uri) {
                        try await self.streamDeviceLogin(to: outbound)
                        return
                    } else {
                        let answer = await self.api.respond(method: request.method, path: request.uri, body: body)
                        try await Self.write(answer, keepAlive: keepAlive, to: outbound)
                    }
                    if !keepAlive { return }
                }
            }
        }
    }

    private static func write(
        _ answer: AdminAPI.Response,
        keepAlive: Bool,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: "\(answer.body.count)")
        headers.add(name: "cache-control", value: "no-store")
        if !keepAlive { headers.add(name: "connection", value: "close") }
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: answer.status, headers: headers)))
        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: answer.body))))
        try await outbound.write(.end(nil))
    }

    /// A chunked answer of JSON lines; the connection closes after it.
    private func streamDeviceLogin(to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/x-ndjson")
        headers.add(name: "cache-control", value: "no-store")
        headers.add(name: "connection", value: "close")
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
        await self.api.deviceLogin { line in
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: line))))
        }
        try await outbound.write(.end(nil))
    }
}
