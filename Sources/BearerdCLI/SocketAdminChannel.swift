import AsyncHTTPClient
import BearerdAdmin
import BearerdFiles
import BearerdSockets
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

/// The running daemon, over its admin socket (HTTP/1.1 on a unix socket).
struct SocketAdminChannel: AdminChannel {
    let socket: String
    let client: HTTPClient
    /// The socket's directory, open while a path longer than NIO connects to (103 bytes, macOS's
    /// limit, on every system) is reached through it; -1 otherwise.
    private let directory: Int32
    /// What the client connects to: `socket`, or the same socket by way of `directory`.
    private let connectPath: String
    /// The session every call is for, in a config with `sessions:`; `nil`: the daemon's only one.
    let session: String?

    /// Talks to `socket` only once its server is known to run as one of `trust`'s accounts
    /// (`SO_PEERCRED`, before a byte is sent on the connection).
    init(socket: String, trust: SocketTrust, session: String? = nil) {
        self.socket = socket
        self.session = session
        (self.directory, self.connectPath) = Self.reachable(socket)
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
        // A refused server fails the request at once, not after retries until its deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.http1_1ConnectionDebugInitializer = { channel in
            PeerCredentials.uid(channel).flatMapThrowing { uid in
                let problem: String?
                if let uid {
                    problem = trust.peerProblem(uid, socket: socket)
                } else {
                    problem = "cannot tell which user serves \(socket): bearerd sends it nothing"
                }
                guard let problem else { return }
                channel.close(promise: nil)
                throw CommandError("bearerd does not talk to the admin socket: \(problem)")
            }
        }
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    var daemon: String { "running (admin socket \(self.socket))" }

    func call(_ method: HTTPMethod, _ path: String, body: Data?) async throws -> (HTTPResponseStatus, Data) {
        let response = try await self.client.execute(try self.request(method, path, body: body), timeout: .seconds(120))
        let answer = try await response.body.collect(upTo: 1 << 20)
        return (response.status, Data(answer.readableBytesView))
    }

    func deviceLogin(_ onLine: @escaping @Sendable (Data) async -> Void) async throws {
        // The daemon polls until the person approves or the code expires (at most a day).
        let response = try await self.client.execute(
            try self.request(.POST, "/v1/login/device", body: nil),
            deadline: .now() + .hours(24)
        )
        var pending = Data()
        for try await buffer in response.body {
            pending.append(contentsOf: buffer.readableBytesView)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                await onLine(pending[pending.startIndex..<newline])
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
    }

    func close() async {
        try? await self.client.shutdown()
        #if canImport(Glibc)
        if self.directory >= 0 { _ = Glibc.close(self.directory) }
        #endif
    }

    /// A path of 104 to 107 bytes is valid for the kernel but not for NIO: on Linux, the kernel
    /// resolves `/proc/self/fd/N/NAME` through the open directory `N` like the path itself.
    private static func reachable(_ socket: String) -> (directory: Int32, path: String) {
        #if canImport(Glibc)
        guard socket.utf8.count > 103, let slash = socket.lastIndex(of: "/") else { return (-1, socket) }
        let descriptor = open(String(socket[..<slash]), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return (-1, socket) }
        return (descriptor, "/proc/self/fd/\(descriptor)/" + socket[socket.index(after: slash)...])
        #else
        return (-1, socket)
        #endif
    }

    private func request(_ method: HTTPMethod, _ path: String, body: Data?) throws -> HTTPClientRequest {
        // A session's name is plain (a-z, 0-9, - and _): nothing to escape.
        let uri = self.session.map { path + (path.contains("?") ? "&" : "?") + "session=" + $0 } ?? path
        guard let url = URL(httpURLWithSocketPath: self.connectPath, uri: uri) else {
            throw AdminMessages.Failure(error: "admin_error", message: "cannot address the admin socket \(self.socket)")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }
}
