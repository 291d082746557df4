import BearerdSockets
import Foundation
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// HTTP/1.1 over NIOAsyncChannel for the admin socket and the metrics listener: requests on a
/// connection one after another, each answered by ``AdminAPI`` with the routes `exposure` allows.
struct AdminHTTP: Sendable {
    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>
    /// What the accept stream carries: a connection with its HTTP handlers but not yet wrapped
    /// (see ``serve(_:)``), or `nil` for one refused in the initializer.
    typealias Accepted = NIOAsyncChannel<(any Channel)?, Never>

    /// For a child channel initializer: the HTTP handlers, and no reads until ``adopt(_:)``
    /// wraps the channel, so nothing arrives before there is a handler to take it.
    static func prepare(_ channel: any Channel) throws -> any Channel {
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
        try channel.syncOptions?.setOption(.autoRead, value: false)
        return channel
    }

    /// Wraps an accepted channel on its loop and starts reading.
    private static func adopt(_ channel: any Channel) async throws -> Connection {
        try await channel.eventLoop.submit {
            let connection = try Connection(wrappingChannelSynchronously: channel)
            try channel.syncOptions?.setOption(.autoRead, value: true)
            return connection
        }.get()
    }

    let api: AdminAPI
    let exposure: AdminAPI.Exposure
    /// Over TCP: `Host` must name the listener (DNS rebinding), as on the proxy's listeners.
    var hostGuard: HostGuard? = nil

    /// Accepts connections on `server` until graceful shutdown.
    ///
    /// The accept stream carries plain channels, wrapped in a `NIOAsyncChannel` only once this
    /// loop has taken them: a `NIOAsyncChannel` made in the initializer and dropped with the
    /// stream at shutdown (accepted a moment before the listener closed) traps the process
    /// (apple/swift-nio#3481); a plain channel is closed with the event loops. Shutdown closes the
    /// listener and reads the stream to its end, then cancels the connections' tasks: a device
    /// login may wait minutes for a person, so admin requests are not waited for (a refresh
    /// they started finishes on its own).
    func serve(_ server: Accepted) async {
        await withDiscardingTaskGroup { group in
            try? await server.executeThenClose { inbound in
                try await withGracefulShutdownHandler {
                    for try await channel in inbound {
                        guard let channel else { continue }
                        group.addTask {
                            guard let connection = try? await Self.adopt(channel) else {
                                channel.close(promise: nil)
                                return
                            }
                            await self.serve(connection)
                        }
                    }
                } onGracefulShutdown: {
                    server.channel.close(promise: nil)
                }
            }
            group.cancelAll()
        }
    }

    /// Requests on one connection, one after another (keep-alive).
    private func serve(_ connection: Connection) async {
        // On the admin socket, each call is authorised by who the kernel says the peer is.
        var asker = AdminAPI.Asker.trusted
        if self.exposure == .admin {
            guard let caller = try? await PeerCredentials.caller(connection.channel).get() else {
                try? await connection.channel.close()
                return
            }
            asker = .peer(caller)
        }
        // Another user's connection is closed once idle between requests for a while: one kept
        // open for nothing holds one of the few such connections (``AdminServer``).
        let idle =
            asker.isPrivileged ? nil : IdleWatch(channel: connection.channel, limit: AdminServer.callerIdleTimeout)
        defer { idle?.stop() }
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = Data()
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let next):
                    idle?.busy(true)
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
                    let hosts = self.hostGuard == nil ? [] : request.headers["host"]
                    if let hostGuard = self.hostGuard, let local = connection.channel.localAddress,
                        !(hosts.count == 1
                            && hostGuard.permits(hosts[0], local: local))
                    {
                        let answer = AdminAPI.failure(
                            .forbidden,
                            "forbidden",
                            "Host must name this listener, like 127.0.0.1:PORT (DNS rebinding guard)"
                        )
                        try await Self.write(answer, keepAlive: false, to: outbound)
                        return
                    } else if tooLarge {
                        let answer = AdminAPI.failure(.payloadTooLarge, "too_large", "the request body is too large")
                        try await Self.write(answer, keepAlive: false, to: outbound)
                    } else if self.exposure == .admin, AdminAPI.isDeviceLogin(method: request.method, path: request.uri)
                    {
                        try await self.streamDeviceLogin(path: request.uri, asker: asker, to: outbound)
                        return
                    } else {
                        let answer = await self.api.respond(
                            method: request.method,
                            path: request.uri,
                            body: body,
                            exposure: self.exposure,
                            asker: asker
                        )
                        try await Self.write(answer, keepAlive: keepAlive, to: outbound)
                    }
                    idle?.busy(false)
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
        headers.add(name: "content-type", value: answer.contentType)
        headers.add(name: "content-length", value: "\(answer.body.count)")
        headers.add(name: "cache-control", value: "no-store")
        if !keepAlive { headers.add(name: "connection", value: "close") }
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: answer.status, headers: headers)))
        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: answer.body))))
        try await outbound.write(.end(nil))
    }

    /// A chunked answer of JSON lines; the connection closes after it.
    private func streamDeviceLogin(
        path: String,
        asker: AdminAPI.Asker,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/x-ndjson")
        headers.add(name: "cache-control", value: "no-store")
        headers.add(name: "connection", value: "close")
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
        await self.api.deviceLogin(path: path, asker: asker) { line in
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: line))))
        }
        try await outbound.write(.end(nil))
    }
}

/// Closes a connection that has been idle between requests for `limit`; never while a request is
/// being answered, however long that takes (a login, a device login waiting for the person).
final class IdleWatch: Sendable {
    private final class Activity: Sendable {
        let state = Mutex((busy: false, since: ContinuousClock.now))
    }

    private let activity = Activity()
    private let task: Task<Void, Never>

    init(channel: any Channel, limit: Duration) {
        let activity = self.activity
        self.task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let idle = activity.state.withLock { !$0.busy && ContinuousClock.now - $0.since >= limit }
                if idle {
                    channel.close(promise: nil)
                    return
                }
            }
        }
    }

    func busy(_ busy: Bool) {
        self.activity.state.withLock { $0 = (busy, ContinuousClock.now) }
    }

    func stop() { self.task.cancel() }
}
